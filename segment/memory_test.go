package segment_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/segment"
)

// cleanLog writes n batches into a log in a new directory, closes it
// cleanly and returns the directory.
func cleanLog(t *testing.T, cfg segment.Config, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, cfg)
	for i := range n {
		if _, err := l.Append(batch(t, 2, 100, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenSparseHugeIndex: a cleanly closed log whose index files were
// made 6 GiB long (sparse, as a preallocating writer leaves them: zero
// slots after the entries) opens reading only what its small segment can
// justify: well under 100 MB, where reading the files whole needed 12 GB
// (and a sparse 4 GiB index killed the process).
func TestOpenSparseHugeIndex(t *testing.T) {
	cfg := segment.Config{IndexIntervalBytes: 1}
	dir := cleanLog(t, cfg, 20)
	idx, tidx := filepath.Join(dir, "00000000000000000000.index"), filepath.Join(dir, "00000000000000000000.timeindex")
	want := map[string]int64{}
	const huge = 6 << 30 // a multiple of both entry sizes
	for _, name := range []string{idx, tidx} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == 0 {
			t.Fatalf("%s is empty: the test needs entries", name)
		}
		want[name] = fi.Size()
		if err := os.Truncate(name, huge); err != nil {
			t.Fatal(err)
		}
	}
	var l *segment.Log
	var rep segment.RecoveryReport
	alloc := testutil.Allocated(func() { l, rep = open(t, dir, cfg) })
	defer l.Close()
	t.Logf("open with two %d-byte sparse indexes allocated %d bytes", huge, alloc)
	if alloc > 100<<20 {
		t.Errorf("open allocated %d bytes, want under 100 MB", alloc)
	}
	if !rep.Clean || len(rep.RebuiltIndexes) != 0 {
		t.Errorf("report %+v: want a clean open that trusts the entries before the zero slots", rep)
	}
	for name, size := range want {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != size {
			t.Errorf("%s: %d bytes after open, want its %d bytes of entries", name, fi.Size(), size)
		}
	}
	if got := readAll(t, l); len(got) != 20 {
		t.Errorf("%d batches, want 20", len(got))
	}
}

// TestOpenIndexLongerThanLog: an index holding more entries than its
// segment has batches (each entry names a batch, and a batch is at least
// 61 bytes) is not trusted, even when its entries look ordered: it is
// rebuilt from the log.
func TestOpenIndexLongerThanLog(t *testing.T) {
	t.Parallel()
	cfg := segment.Config{IndexIntervalBytes: 1}
	dir := cleanLog(t, cfg, 2)
	idx := filepath.Join(dir, "00000000000000000000.index")
	good, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	// Offsets 1, 2, 3, ... all at position 0: in order, inside the log.
	bad := make([]byte, 1000*8)
	for i := range 1000 {
		binary.BigEndian.PutUint32(bad[i*8:], uint32(i+1))
	}
	if err := os.WriteFile(idx, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	l, rep := open(t, dir, cfg)
	defer l.Close()
	if len(rep.RebuiltIndexes) != 1 || rep.RebuiltIndexes[0] != 0 {
		t.Errorf("rebuilt %v, want [0] (report %+v)", rep.RebuiltIndexes, rep)
	}
	got, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(good) {
		t.Errorf("index after open: %d bytes, want the %d rebuilt from the log", len(got), len(good))
	}
	if n := len(readAll(t, l)); n != 2 {
		t.Errorf("%d batches, want 2", n)
	}
}
