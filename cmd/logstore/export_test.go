package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

func exportTestBatch(t *testing.T, n int) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	for range n {
		if err := b.Append(1700000000000, nil, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExportCLI(t *testing.T) {
	dir, out := t.TempDir(), filepath.Join(t.TempDir(), "kafka")
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Partition("orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(exportTestBatch(t, 3)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "export", "--kafka", out, "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "orders-0 offsets [0, 3) segmentFiles=3 producers=0 topicId=none\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	for _, f := range []string{"00000000000000000000.log", "00000000000000000003.snapshot", "leader-epoch-checkpoint"} {
		if _, err := os.Stat(filepath.Join(out, "orders-0", f)); err != nil {
			t.Error(err)
		}
	}
	// Again: the partition is there already.
	_, stderr, code = runCLI(t, "export", "--kafka", out, "--dir", dir)
	if code == 0 || !strings.Contains(stderr, "already in the output directory") {
		t.Errorf("second export: exit %d, stderr %q", code, stderr)
	}
	// A held store is refused at once.
	st, err = logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, stderr, code = runCLI(t, "export", "--kafka", t.TempDir(), "--dir", dir)
	if code == 0 || !strings.Contains(stderr, "held by another open store") {
		t.Errorf("held store: exit %d, stderr %q", code, stderr)
	}
}
