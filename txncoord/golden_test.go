package txncoord_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The golden record files, written by the build that made the record
// file format (version 2) with TXNCOORD_WRITE_GOLDEN=1: a workload's
// file as its Close left it, and that file after one more Open and
// Close. They hold the exact bytes this package must keep reading and
// writing.
const (
	goldenV2         = "testdata/transactions-v2.db"
	goldenV2Reopened = "testdata/transactions-v2-reopened.db"
)

// TestGoldenV2: a transactions.db of format version 2 as an earlier
// build wrote it opens unchanged, and the file an Open and Close of it
// writes is byte for byte the one that build wrote.
func TestGoldenV2(t *testing.T) {
	if os.Getenv("TXNCOORD_WRITE_GOLDEN") != "" {
		e := newEnv(t)
		logWorkload(e, 3)
		if err := e.c.Close(); err != nil {
			t.Fatal(err)
		}
		copyFile(t, filepath.Join(e.dir, "transactions.db"), goldenV2)
		c, _, err := openDir(t, e.dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		copyFile(t, filepath.Join(e.dir, "transactions.db"), goldenV2Reopened)
	}
	dir := t.TempDir()
	copyFile(t, goldenV2, filepath.Join(dir, "transactions.db"))
	before := readDir(t, dir)
	c, _, err := openDir(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ce := c.CoordinatorEpoch(); ce != 2 {
		t.Fatalf("coordinator epoch %d, want 2", ce)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "transactions.db"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(goldenV2Reopened)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the file after Open and Close differs from %s:\n got %x\nwant %x", goldenV2Reopened, got, want)
	}
	after := readDir(t, dir)
	if len(before) != 3 || len(after) != len(before) {
		t.Fatalf("%d ids before, %d after; want 3", len(before), len(after))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
