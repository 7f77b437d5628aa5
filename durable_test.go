package logstore_test

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/vfs"
)

// heldSyncFS counts the syncs of .log files; while hold is set, the next
// .log sync says so on entered and waits for release.
type heldSyncFS struct {
	vfs.FS
	syncs   atomic.Int64
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (h *heldSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &heldSyncFile{File: f, fs: h}, nil
}

type heldSyncFile struct {
	vfs.File
	fs *heldSyncFS
}

func (f *heldSyncFile) Sync() error {
	if f.fs.hold.CompareAndSwap(true, false) {
		f.fs.entered <- struct{}{}
		<-f.fs.release
	}
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

// TestDurableEnd: after Append returns, DurableEnd covers the batch in
// every sync mode. Under SyncAlways it never covers a batch whose fsync
// has not ended; under SyncInterval and SyncNever it is the log end,
// with no fsync, and SyncTo fsyncs on request, once. SyncTo beyond the
// end fails without poisoning; on a closed partition it is ErrClosed.
func TestDurableEnd(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncInterval(time.Hour), logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			h := &heldSyncFS{FS: vfs.OS, entered: make(chan struct{}, 1), release: make(chan struct{})}
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode}.WithFS(h))
			p := openPartition(t, s, "events", 0)
			res, err := p.Append(batchOf("a"))
			if err != nil {
				t.Fatal(err)
			}
			if d := p.DurableEnd(); d != res.LastOffset+1 {
				t.Fatalf("DurableEnd %d after the append of offset %d; want %d", d, res.LastOffset, res.LastOffset+1)
			}
			if mode == logstore.SyncAlways {
				// The next append's fsync is held: its batch is written
				// (the fsync comes after the write) but not durable.
				h.hold.Store(true)
				done := make(chan error, 1)
				go func() { _, err := p.Append(batchOf("b")); done <- err }()
				<-h.entered
				end, d := p.EndOffset(), p.DurableEnd()
				close(h.release) // before any failure: Close waits for the append
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if end != 2 || d != 1 {
					t.Fatalf("end %d, DurableEnd %d while the fsync was held; want 2 and 1", end, d)
				}
			} else {
				before := h.syncs.Load()
				if _, err := p.Append(batchOf("b")); err != nil {
					t.Fatal(err)
				}
				if d := p.DurableEnd(); d != 2 || h.syncs.Load() != before {
					t.Fatalf("DurableEnd %d after %d fsyncs; want 2 with none", d, h.syncs.Load()-before)
				}
				for range 2 {
					if err := p.SyncTo(2); err != nil {
						t.Fatal(err)
					}
				}
				if n := h.syncs.Load() - before; n != 1 {
					t.Fatalf("two SyncTo(2): %d fsyncs, want 1", n)
				}
			}
			if d := p.DurableEnd(); d != 2 {
				t.Fatalf("DurableEnd %d, want 2", d)
			}
			if err := p.SyncTo(3); err == nil {
				t.Fatal("SyncTo beyond the log end succeeded")
			}
			if _, err := p.Append(batchOf("c")); err != nil {
				t.Fatalf("append after a SyncTo beyond the end: %v", err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.SyncTo(3); !errors.Is(err, logstore.ErrClosed) {
				t.Fatalf("SyncTo on a closed partition: %v, want ErrClosed", err)
			}
		})
	}
}
