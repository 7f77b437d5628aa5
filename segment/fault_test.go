package segment_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

var errInjected = errors.New("injected fault")

// faultFS wraps the OS filesystem and fails the n-th write or sync (of
// any file, counted from 1), or counts them when n is 0.
type faultFS struct {
	vfs.FS
	mu       sync.Mutex
	failAt   int
	ops      int
	logSyncs int
}

func (f *faultFS) tick() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	if f.failAt > 0 && f.ops == f.failAt {
		return errInjected
	}
	return nil
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, isLog: strings.HasSuffix(name, ".log")}, nil
}

func (f *faultFS) Rename(o, n string) error {
	if err := f.tick(); err != nil {
		return err
	}
	return f.FS.Rename(o, n)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.tick(); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

type faultFile struct {
	vfs.File
	fs    *faultFS
	isLog bool
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.tick(); err != nil {
		// A torn write: half the bytes land.
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.tick(); err != nil {
		return err
	}
	if f.isLog {
		f.fs.mu.Lock()
		f.fs.logSyncs++
		f.fs.mu.Unlock()
	}
	return f.File.Sync()
}

// TestFaults fails each write, sync, rename and directory sync of a
// workload in turn (as pebble's error tests do): the failure reaches the
// caller, the log is poisoned from then on (nothing later is accepted),
// and the directory reopens to a valid prefix holding every batch that
// was acknowledged (appended and synced) before the failure.
func TestFaults(t *testing.T) {
	const batches = 12
	for failAt := 1; ; failAt++ {
		dir := filepath.Join(t.TempDir(), "p-0")
		ffs := &faultFS{FS: vfs.OS}
		cfg := segment.Config{FS: ffs, SegmentBytes: 700, IndexIntervalBytes: 100}
		l, _, err := segment.Open(dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ffs.mu.Lock()
		ffs.failAt = ffs.ops + failAt
		ffs.mu.Unlock()
		acked, failed := 0, false
		for i := 0; i < batches && !failed; i++ {
			if _, err := l.Append(batch(t, 1, 80, 1700000000000+int64(i))); err != nil {
				failed = true
				checkInjected(t, failAt, err)
				break
			}
			if _, err := l.Sync(); err != nil {
				failed = true
				checkInjected(t, failAt, err)
				break
			}
			acked++
		}
		if !failed {
			if err := l.Close(); err != nil {
				failed = true
				checkInjected(t, failAt, err)
			}
		}
		if failed {
			if _, err := l.Append(batch(t, 1, 5, 0)); !errors.Is(err, segment.ErrPoisoned) {
				t.Fatalf("fail at %d: append after the fault: %v, want ErrPoisoned", failAt, err)
			}
			if _, err := l.Sync(); !errors.Is(err, segment.ErrPoisoned) {
				t.Fatalf("fail at %d: sync after the fault: %v", failAt, err)
			}
			l.Close()
		}
		// Reopen with the real filesystem: a valid prefix with every
		// acknowledged batch.
		l2, _, err := segment.Open(dir, segment.Config{SegmentBytes: 700, IndexIntervalBytes: 100})
		if err != nil {
			t.Fatalf("fail at %d: reopen: %v", failAt, err)
		}
		if got := len(readAll(t, l2)); got < acked || got > batches {
			t.Fatalf("fail at %d: %d batches after reopen, %d acknowledged", failAt, got, acked)
		}
		l2.Close()
		if !failed {
			t.Logf("workload passes with no fault after %d injection points", failAt-1)
			return
		}
	}
}

func checkInjected(t *testing.T, failAt int, err error) {
	t.Helper()
	if !errors.Is(err, errInjected) {
		t.Fatalf("fail at %d: got %v, want the injected error", failAt, err)
	}
}
