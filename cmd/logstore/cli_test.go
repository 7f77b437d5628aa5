package main

import (
	"bytes"
	"flag"
	"testing"
)

// updateGolden rewrites the golden files of the commands' tests from what
// the commands print: go test ./cmd/logstore -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files with the current output")

// runCLI runs the real root command, as main does, and returns what it
// wrote and its exit status.
func runCLI(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}
