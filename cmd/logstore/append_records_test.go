package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// TestAppendFromLogUndecodable: --from-log re-sends each batch as any
// producer's, so a batch whose CRC is valid but whose records cannot be
// decoded is refused as INVALID, naming the record and its byte position,
// and the batches around it are appended (issue 11).
func TestAppendFromLogUndecodable(t *testing.T) {
	t.Parallel()
	good := func(v string) []byte {
		b := recordbatch.NewBuilder(0)
		if err := b.Append(1700000000000, nil, []byte(v), nil); err != nil {
			t.Fatal(err)
		}
		raw, err := b.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	data := good("before")
	want := []string{"OK base=0 last=0"}
	n := 1
	for _, c := range testutil.PoisonBatches(1 << 10) {
		if c.Sentinel == recordbatch.ErrTooLarge {
			continue // the store's bound is 64 MiB
		}
		n++
		want = append(want, fmt.Sprintf("INVALID batch %d at position %d: ", n, len(data))+c.Want[len(c.Want)-1])
		data = append(data, c.Batch...)
	}
	data = append(data, good("after")...)
	want = append(want, "OK base=1 last=1")
	logFile := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(logFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "append", "--dir", t.TempDir(), "--from-log", logFile)
	if code != 3 {
		t.Errorf("exit %d, want 3; stderr %s", code, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("stdout:\n%s\nwant %d lines", out, len(want))
	}
	for i := range want {
		prefix, phrase, _ := strings.Cut(want[i], ": ")
		if !strings.HasPrefix(got[i], prefix) || !strings.Contains(got[i], phrase) {
			t.Errorf("reply %d: %q, want %q", i+1, got[i], want[i])
		}
		if strings.HasPrefix(got[i], "INVALID") && !strings.Contains(got[i], "at byte ") {
			t.Errorf("reply %d: %q does not say where", i+1, got[i])
		}
	}
	t.Logf("stdout:\n%s", out)
}
