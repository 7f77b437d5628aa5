package kafkadump

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/spf13/pflag"
)

// run does what `logstore dump` does with its arguments, which start
// with "dump": Kafka's flags parsed by Flags, then Dump; an error becomes
// one stderr line "logstore dump: <error>" and exit status 1, as the
// command prints it. The tests and golden files of this package show the
// command's output this way; cmd/logstore checks that the command is
// wired to the same flags and Dump.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "dump" {
		panic(fmt.Sprintf("run %q: the arguments start with dump", args))
	}
	fs := pflag.NewFlagSet("dump", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := AddFlags(fs)
	err := fs.Parse(args[1:])
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var files []string
	var opts Options
	if err == nil {
		files, opts, err = flags.Options()
	}
	if err == nil {
		err = Dump(stdout, stderr, files, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "logstore dump: %v\n", err)
		return 1
	}
	return 0
}

// runCLI runs the dump as the command does and returns what it wrote and
// its exit status.
func runCLI(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}
