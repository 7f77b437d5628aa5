package segment_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

var errSyncFault = errors.New("injected sync fault")

// holdFS counts the syncs of .log files; while hold is set, a .log sync
// says so on entered and waits for release; while fail is set, the next
// .log sync fails.
type holdFS struct {
	vfs.FS
	syncs   atomic.Int64
	hold    atomic.Bool
	fail    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newHoldFS() *holdFS {
	return &holdFS{FS: vfs.OS, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *holdFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &holdFile{File: f, fs: h}, nil
}

type holdFile struct {
	vfs.File
	fs *holdFS
}

func (f *holdFile) Sync() error {
	if f.fs.hold.CompareAndSwap(true, false) {
		f.fs.entered <- struct{}{}
		<-f.fs.release
	}
	if f.fs.fail.CompareAndSwap(true, false) {
		return errSyncFault
	}
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

// TestSyncToGroupCommit: an append does not move DurableEnd; callers
// that come while a sync runs share the next one (one sync for all of
// them, whatever the timing); a caller already covered returns without
// a sync; an end beyond the log end is an error that does not poison.
func TestSyncToGroupCommit(t *testing.T) {
	h := newHoldFS()
	l, _ := open(t, filepath.Join(t.TempDir(), "p-0"), segment.Config{FS: h})
	defer l.Close()
	if _, err := l.Append(batch(t, 1, 10, 1700000000000)); err != nil {
		t.Fatal(err)
	}
	if d := l.DurableEnd(); d != 0 {
		t.Fatalf("DurableEnd %d after an append, before any sync; want 0", d)
	}
	before := h.syncs.Load()

	// A leader for offset 0, held inside its sync.
	h.hold.Store(true)
	leader := make(chan error, 1)
	go func() { leader <- l.SyncTo(1) }()
	<-h.entered
	if _, err := l.Append(batch(t, 1, 10, 1700000000001)); err != nil {
		t.Fatal(err)
	}
	if d := l.DurableEnd(); d != 0 {
		close(h.release) // Close must not wait for the held sync
		t.Fatalf("DurableEnd %d while the sync is held; want 0", d)
	}
	const followers = 8
	var wg sync.WaitGroup
	errs := make(chan error, followers)
	for range followers {
		wg.Go(func() { errs <- l.SyncTo(2) })
	}
	close(h.release)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The leader's sync covered offset 0; whichever follower led next
	// covered offset 1 for all of them.
	if n := h.syncs.Load() - before; n != 2 {
		t.Fatalf("%d syncs for a leader and %d followers; want 2", n, followers)
	}
	if d := l.DurableEnd(); d != 2 {
		t.Fatalf("DurableEnd %d, want 2", d)
	}
	if err := l.SyncTo(2); err != nil || h.syncs.Load()-before != 2 {
		t.Fatalf("SyncTo of a durable offset: %v, %d syncs; want nil and no sync", err, h.syncs.Load()-before)
	}
	if err := l.SyncTo(3); err == nil {
		t.Fatal("SyncTo beyond the log end succeeded")
	}
	if err := l.Err(); err != nil {
		t.Fatalf("SyncTo beyond the end poisoned the log: %v", err)
	}
}

// TestSyncToFailurePoisonsEveryWaiter: when the leader's sync fails, it
// and every caller waiting for it get an error matching ErrPoisoned, and
// DurableEnd stays where it was.
func TestSyncToFailurePoisonsEveryWaiter(t *testing.T) {
	h := newHoldFS()
	l, _ := open(t, filepath.Join(t.TempDir(), "p-0"), segment.Config{FS: h})
	defer l.Close()
	if _, err := l.Append(batch(t, 1, 10, 1700000000000)); err != nil {
		t.Fatal(err)
	}
	h.hold.Store(true)
	h.fail.Store(true)
	const callers = 4
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- l.SyncTo(1) }()
	}
	<-h.entered
	close(h.release)
	for range callers {
		if err := <-errs; !errors.Is(err, segment.ErrPoisoned) {
			t.Fatalf("SyncTo after a failed sync: %v, want ErrPoisoned", err)
		}
	}
	if d := l.DurableEnd(); d != 0 {
		t.Fatalf("DurableEnd %d after a failed sync; want 0", d)
	}
}
