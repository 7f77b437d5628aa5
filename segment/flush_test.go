package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// gateFS records every file sync and directory sync in order, and holds
// the sync of one file (held), or with holdDir every directory sync,
// until release is closed.
type gateFS struct {
	vfs.FS
	held    string
	holdDir atomic.Bool
	release chan struct{}

	mu     sync.Mutex
	events []string
}

func (g *gateFS) record(e string) {
	g.mu.Lock()
	g.events = append(g.events, e)
	g.mu.Unlock()
}

func (g *gateFS) Events() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.events...)
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, fs: g, name: filepath.Base(name)}, nil
}

func (g *gateFS) SyncDir(dir string) error {
	if g.holdDir.Load() {
		<-g.release
	}
	g.record("dir")
	return g.FS.SyncDir(dir)
}

type gateFile struct {
	vfs.File
	fs   *gateFS
	name string
}

func (f *gateFile) Sync() error {
	if f.name == f.fs.held {
		<-f.fs.release
	}
	if strings.HasSuffix(f.name, ".log") {
		f.fs.record(f.name)
	}
	return f.File.Sync()
}

// rolledLog opens a log whose segments hold one 190-byte batch each, with
// the sync of the first segment's .log held by the gate, and appends
// three batches: the second and third each roll. It returns the log and
// the gate (its release not yet closed).
func rolledLog(t *testing.T, dir string) (*segment.Log, *gateFS) {
	t.Helper()
	g := &gateFS{FS: vfs.OS, release: make(chan struct{})}
	l, _ := open(t, dir, segment.Config{FS: g, SegmentBytes: 300})
	g.held = name(0, ".log") // after Open, which syncs it too
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
		l.Close()
	})
	// The second roll waits for the first one's flush, which the gate
	// holds: only the first roll happens while it is closed.
	for i := range 2 {
		if _, err := l.Append(batch(t, 1, 120, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	return l, g
}

// TestRollDoesNotWaitForFlush: the sealed segment's sync runs in the
// background; appends to the new segment go on while it is held, and
// Sync waits for it and for the directory before it syncs the new
// segment and calls its batches durable.
func TestRollDoesNotWaitForFlush(t *testing.T) {
	l, g := rolledLog(t, filepath.Join(t.TempDir(), "p-0"))
	if segs := l.Segments(); len(segs) != 2 {
		t.Fatalf("segments %v, want two", segs)
	}
	synced := make(chan int64, 1)
	go func() {
		d, err := l.Sync()
		if err != nil {
			t.Error(err)
		}
		synced <- d
	}()
	// Sync cannot return while the first segment's sync is held; a
	// return within this wait would be a bug, and a slow machine only
	// makes the check weaker.
	select {
	case d := <-synced:
		t.Fatalf("Sync returned %d while the sealed segment was not synced", d)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.release)
	if d := <-synced; d != 2 {
		t.Fatalf("Sync: durable below %d, want 2", d)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	if ev := g.Events(); len(ev) == 0 || ev[0] != name(0, ".log") {
		t.Fatalf("syncs %v: the sealed segment's log first", ev)
	}
}

// TestAckDoesNotWaitForDirectorySync: the new segment's .log is the
// spare, whose directory entry was durable before the roll, so a Sync
// after a roll waits for the sealed segment's log but not for a
// directory sync (a journal commit, several fsyncs long).
func TestAckDoesNotWaitForDirectorySync(t *testing.T) {
	g := &gateFS{FS: vfs.OS, release: make(chan struct{})}
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, segment.Config{FS: g, SegmentBytes: 300})
	g.holdDir.Store(true)
	defer func() {
		close(g.release)
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	for i := range 2 {
		if _, err := l.Append(batch(t, 1, 120, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if segs := l.Segments(); len(segs) != 2 {
		t.Fatalf("segments %v, want two", segs)
	}
	if d, err := l.Sync(); err != nil || d != 2 {
		t.Fatalf("Sync with the directory sync held: %d, %v; want 2", d, err)
	}
}

// TestCrashBeforeFlushCutsSealedSegment: a crash while a roll's flush has
// not finished can leave the sealed segment torn, or without its last
// batches, with the new segment after it. Nothing in the new segment was
// acknowledged as durable (Sync waits for the flush), so the next open
// cuts the sealed segment and deletes the new one; check says so
// beforehand.
func TestCrashBeforeFlushCutsSealedSegment(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func([]byte) []byte
	}{
		{"torn batch", func(b []byte) []byte { return b[:len(b)-7] }},
		{"whole batches lost", func(b []byte) []byte { return b[:0] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p-0")
			rolledLog(t, dir)
			// The crash image: the directory as it is now, the first
			// segment's last bytes never reaching the disk.
			crashed := filepath.Join(t.TempDir(), "p-0")
			testutil.CopyDir(t, dir, crashed)
			first := filepath.Join(crashed, name(0, ".log"))
			second := filepath.Join(crashed, name(1, ".log"))
			firstData, err := os.ReadFile(first)
			if err != nil {
				t.Fatal(err)
			}
			secondData, err := os.ReadFile(second)
			if errors.Is(err, os.ErrNotExist) {
				// Its rename waits for the held directory sync: the spare.
				secondData, err = os.ReadFile(filepath.Join(crashed, "logstore.next-segment"))
			}
			if err != nil || len(secondData) == 0 {
				t.Fatalf("segment 1: %d bytes, %v", len(secondData), err)
			}
			modify(t, first, c.lose)
			kept := c.lose(firstData)

			var problems []segment.Problem
			if _, err := segment.Verify(crashed, nil, func(p segment.Problem) { problems = append(problems, p) }); err != nil {
				t.Fatal(err)
			}
			torn := 0
			for _, p := range problems {
				if p.Kind == segment.ProblemTornTail && p.File == first && strings.Contains(p.Detail, "last segment") {
					torn++
				} else if p.Kind != segment.ProblemNote {
					t.Errorf("check found %v", p)
				}
			}
			if torn != 1 {
				t.Fatalf("check found %v, want the torn tail of %s and the last segment deleted", problems, first)
			}

			l2, rep, err := segment.Open(crashed, segment.Config{SegmentBytes: 300})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if rep.TruncatedSegment != 0 || rep.TruncatedAt != 0 || rep.DeletedSegment != 1 || !errors.Is(rep.Reason, recordbatch.ErrTruncated) {
				t.Fatalf("report %+v: want segment 0 cut at offset 0 and segment 1 deleted", rep)
			}
			if _, err := os.Stat(filepath.Join(crashed, name(1, ".log"))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("segment 1 still there: %v", err)
			}
			if segs, end := l2.Segments(), l2.EndOffset(); len(segs) != 1 || end != 0 {
				t.Fatalf("after the cut: segments %v, end %d", segs, end)
			}
			// Nothing is thrown away: the bytes cut off segment 0, and
			// segment 1's whole log, are kept beside them.
			now, err := os.ReadFile(first)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{second + ".cut-0": secondData}
			if len(now) < len(kept) {
				want[fmt.Sprintf("%s.cut-%d", first, len(now))] = kept[len(now):]
			}
			if len(rep.CutFiles) != len(want) {
				t.Fatalf("cut files %q, want %d", rep.CutFiles, len(want))
			}
			for _, f := range rep.CutFiles {
				got, err := os.ReadFile(f)
				if w, ok := want[f]; err != nil || !ok || !bytes.Equal(got, w) {
					t.Errorf("%s: %d bytes (%v), want %d", f, len(got), err, len(w))
				}
			}
			for _, suf := range []string{".index", ".timeindex"} {
				if _, err := os.Stat(filepath.Join(crashed, name(1, suf))); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s of the deleted segment: %v, want removed", suf, err)
				}
			}
		})
	}
}

// flushedCopy makes rolledLog's log, lets its flush finish, and returns a
// copy of its directory.
func flushedCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p-0")
	l, g := rolledLog(t, dir)
	close(g.release)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "p-0")
	testutil.CopyDir(t, dir, crashed)
	return crashed
}

// TestDamageInFlushedSegmentNotCut: once the flush has moved the recovery
// point past the sealed segment, damage in it is corruption, even though
// it is one of the last two: check reports it as corruption, which the
// next open does not cut.
func TestDamageInFlushedSegmentNotCut(t *testing.T) {
	crashed := flushedCopy(t)
	first := filepath.Join(crashed, name(0, ".log"))
	modify(t, first, func(b []byte) []byte { b[len(b)-7] ^= 1; return b })
	var problems []segment.Problem
	if _, err := segment.Verify(crashed, nil, func(p segment.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 || problems[0].Kind != segment.ProblemCorrupt || problems[0].File != first || strings.Contains(problems[0].Detail, "cuts") {
		t.Fatalf("check found %v, want corruption in %s that the next open does not cut", problems, first)
	}
}

// TestSpareAdoptedAfterLostRename: a crash can keep the new segment's
// batches while losing the rename that gave the spare its segment name;
// the next open names the spare after its first batch's base offset, and
// nothing is lost. check says what the open will do.
func TestSpareAdoptedAfterLostRename(t *testing.T) {
	crashed := flushedCopy(t)
	spare := filepath.Join(crashed, "logstore.next-segment")
	if err := os.Rename(filepath.Join(crashed, name(1, ".log")), spare); err != nil {
		t.Fatal(err)
	}
	var problems []segment.Problem
	if _, err := segment.Verify(crashed, nil, func(p segment.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].File != spare || !strings.Contains(problems[0].Detail, "names it "+name(1, ".log")) {
		t.Fatalf("check found %v, want a note on %s", problems, spare)
	}
	l2, rep, err := segment.Open(crashed, segment.Config{SegmentBytes: 300})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if segs, end := l2.Segments(), l2.EndOffset(); len(segs) != 2 || segs[1] != 1 || end != 2 || rep.TruncatedBytes != 0 {
		t.Fatalf("after open: segments %v, end %d, report %+v; want [0 1], 2, nothing cut", segs, end, rep)
	}
	if got := len(readAll(t, l2)); got != 2 {
		t.Fatalf("%d batches read, want 2", got)
	}
}

// TestSpareWithoutWholeHeaderRemoved: a spare holding less than a batch
// header held nothing acknowledged; the open removes it. One whose first
// batch names an existing segment is corruption.
func TestSpareWithoutWholeHeaderRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, segment.Config{})
	b := batch(t, 1, 10, 1700000000000)
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(dir, "logstore.next-segment")
	if err := os.WriteFile(spare, b[:40], 0o644); err != nil {
		t.Fatal(err)
	}
	l2, _ := open(t, dir, segment.Config{})
	if end := l2.EndOffset(); end != 1 {
		t.Fatalf("end %d, want 1", end)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spare); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spare left after a clean close: %v", err)
	}
	// The batch at offset 0 again: segment 0 exists already.
	if err := os.WriteFile(spare, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *segment.CorruptionError
	if _, _, err := segment.Open(dir, segment.Config{}); !errors.As(err, &ce) || ce.File != spare {
		t.Fatalf("open: %v, want corruption in %s", err, spare)
	}
}
