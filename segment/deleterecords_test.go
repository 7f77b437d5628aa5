package segment_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/segment"
)

// appendSynced appends n one-record batches of 100 bytes and syncs them.
func appendSynced(t *testing.T, l *segment.Log, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteRecordsBefore moves the log start into the middle of a
// segment: reads below it are out of range, the segments wholly below it
// are deleted, the start survives a clean reopen, retention never moves
// it back, and an offset past the high watermark or at or below the
// start changes nothing.
func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	cfg := segment.Config{SegmentBytes: 500}
	l, _ := open(t, dir, cfg)
	appendSynced(t, l, 20)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("segments %v: want at least 4", segs)
	}
	// Inside the third segment.
	to := segs[2] + 1
	start, deleted, err := l.DeleteRecordsBefore(to)
	if err != nil || start != to || !slices.Equal(deleted, segs[:2]) {
		t.Fatalf("DeleteRecordsBefore(%d) = %d, %v, %v; want %d, %v", to, start, deleted, err, to, segs[:2])
	}
	for _, base := range segs[:2] {
		if _, err := os.Stat(filepath.Join(dir, name(base, ".log"))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("segment %d still there: %v", base, err)
		}
	}
	if _, err := l.Read(to-1, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	if data, err := l.Read(to, 1<<20); err != nil || len(data) == 0 {
		t.Fatalf("read at the start: %d bytes, %v", len(data), err)
	}
	// At or below the start, and past the high watermark: nothing.
	for _, off := range []int64{to, 0, l.DurableEnd() + 1, -1} {
		start, deleted, err := l.DeleteRecordsBefore(off)
		if start != to || deleted != nil || (off > l.DurableEnd() || off < 0) != errors.Is(err, segment.ErrOffsetOutOfRange) {
			t.Fatalf("DeleteRecordsBefore(%d) = %d, %v, %v", off, start, deleted, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Retention that would keep everything left does not move it back.
	cfg.RetentionBytes = 1 << 30
	l, _ = open(t, dir, cfg)
	defer l.Close()
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if got := l.StartOffset(); got != to {
		t.Fatalf("start after reopen and retention: %d, want %d", got, to)
	}
	// To the end: the log is empty, and appends go on after it.
	end := l.DurableEnd()
	if start, _, err := l.DeleteRecordsBefore(end); err != nil || start != end {
		t.Fatalf("DeleteRecordsBefore(end %d) = %d, %v", end, start, err)
	}
	appendSynced(t, l, 1)
	if got := readAll(t, l); len(got) != 1 || got[0].BaseOffset() != end {
		t.Fatalf("after deleting everything: %d batches", len(got))
	}
}

// TestDeleteRecordsBeforeActive: a start past every record keeps the
// active segment, which is never deleted, until it rolls; the retention
// pass after the roll's flush deletes it then, without retention
// configured.
func TestDeleteRecordsBeforeActive(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 500})
	defer l.Close()
	appendSynced(t, l, 20)
	end, segs := l.DurableEnd(), l.Segments()
	if _, _, err := l.DeleteRecordsBefore(end); err != nil {
		t.Fatal(err)
	}
	if got := l.Segments(); !slices.Equal(got, segs[len(segs)-1:]) {
		t.Fatalf("segments %v after deleting below the end %d, want the active one of %v", got, end, segs)
	}
	appendSynced(t, l, 10) // rolls, and the flush's retention pass runs
	if got := l.Segments(); got[0] != end {
		t.Fatalf("segments %v after the rolls, want the first at %d", got, end)
	}
}

// TestDeleteRecordsBeforeCrash crashes the file system at every
// operation DeleteRecordsBefore makes, in every crash mode: each image
// opens with the old start or the new one, never another, and with
// every record at or above the new start; once it has returned, with
// the new start.
func TestDeleteRecordsBeforeCrash(t *testing.T) {
	t.Parallel()
	f := crashfs.New(t.TempDir())
	dir := filepath.Join(f.Root(), "p-0")
	l, _ := open(t, dir, segment.Config{FS: f, SegmentBytes: 500})
	appendSynced(t, l, 20)
	if err := f.SyncDir(f.Root()); err != nil { // the directory's own entry
		t.Fatal(err)
	}
	segs, end := l.Segments(), l.DurableEnd()
	to := segs[2] + 1
	var crashes []*crashfs.FS
	rng := rand.New(rand.NewPCG(3, 4))
	f.SetHook(func(crashfs.Op) {
		for _, m := range crashfs.Modes {
			crashes = append(crashes, f.Crash(m, rng))
		}
	})
	if _, _, err := l.DeleteRecordsBefore(to); err != nil {
		t.Fatal(err)
	}
	f.SetHook(nil)
	crashes = append(crashes, f.Crash(crashfs.DropUnsynced, rng))
	if len(crashes) < 2 {
		t.Fatal("DeleteRecordsBefore made no file operation")
	}
	for i, c := range crashes {
		l, _, err := segment.Open(dir, segment.Config{FS: c, SegmentBytes: 500})
		if err != nil {
			t.Fatalf("image %d: open: %v", i, err)
		}
		start := l.StartOffset()
		last := i == len(crashes)-1
		if (start != 0 && start != to) || (last && start != to) {
			t.Fatalf("image %d (last %t): start %d, want 0 or %d", i, last, start, to)
		}
		if l.EndOffset() != end {
			t.Fatalf("image %d: end %d, want %d", i, l.EndOffset(), end)
		}
		if n := len(readAll(t, l)); int64(n) != end-start {
			t.Fatalf("image %d: %d batches from %d", i, n, start)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
