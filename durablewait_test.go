package logstore_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
)

// moved waits up to a second for w to be ready and returns the keys it
// marked.
func moved(t *testing.T, w *logstore.DurableWatcher) []int {
	t.Helper()
	select {
	case <-w.Ready():
	case <-time.After(time.Second):
		t.Fatal("the watcher was not made ready")
	}
	return w.Moved(nil)
}

// notMoved checks that w has no key marked.
func notMoved(t *testing.T, w *logstore.DurableWatcher) {
	t.Helper()
	select {
	case <-w.Ready():
		if got := w.Moved(nil); len(got) != 0 {
			t.Fatalf("keys %v marked, want none", got)
		}
	default:
	}
}

// TestDurableWatcher: a key is marked by an append to the partition it
// watches (once however many appends come before Moved), by that
// partition's close, and at once when registered with a closed one; an
// unwatched or stopped key is not; under SyncAlways a written batch
// marks its key at the SyncTo that makes it durable.
func TestDurableWatcher(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	parts := make([]*logstore.Partition, 4)
	for i := range parts {
		parts[i] = openPartition(t, s, "events", int32(i))
	}
	w := logstore.NewDurableWatcher(len(parts))
	for i, p := range parts[:3] {
		w.Watch(i, p)
	}
	notMoved(t, w)
	if _, err := parts[1].Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if got := moved(t, w); !slices.Equal(got, []int{1}) {
		t.Fatalf("moved %v after an append to partition 1, want [1]", got)
	}
	for _, p := range []*logstore.Partition{parts[2], parts[0], parts[2], parts[3]} {
		if _, err := p.Append(batchOf("b")); err != nil {
			t.Fatal(err)
		}
	}
	if got := moved(t, w); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("moved %v after appends to 2, 0, 2 and the unwatched 3, want [2 0]", got)
	}
	notMoved(t, w)

	// Key 0 moves to partition 3: 0's appends no longer mark it.
	w.Watch(0, parts[3])
	if _, err := parts[0].Append(batchOf("c")); err != nil {
		t.Fatal(err)
	}
	notMoved(t, w)
	if _, err := parts[3].Append(batchOf("c")); err != nil {
		t.Fatal(err)
	}
	if got := moved(t, w); !slices.Equal(got, []int{0}) {
		t.Fatalf("moved %v after an append to partition 3, watched by key 0, want [0]", got)
	}
	w.Unwatch(1)
	if _, err := parts[1].Append(batchOf("d")); err != nil {
		t.Fatal(err)
	}
	notMoved(t, w)

	if err := parts[2].Close(); err != nil {
		t.Fatal(err)
	}
	if got := moved(t, w); !slices.Equal(got, []int{2}) {
		t.Fatalf("moved %v after partition 2 closed, want [2]", got)
	}
	w.Watch(1, parts[2]) // closed already
	if got := moved(t, w); !slices.Equal(got, []int{1}) {
		t.Fatalf("moved %v after watching a closed partition, want [1]", got)
	}
	w.Stop()
	for _, p := range []*logstore.Partition{parts[0], parts[3]} {
		if _, err := p.Append(batchOf("e")); err != nil {
			t.Fatal(err)
		}
	}
	notMoved(t, w)

	always := openStore(t, t.TempDir(), logstore.Options{Sync: logstore.SyncAlways})
	p := openPartition(t, always, "events", 0)
	w = logstore.NewDurableWatcher(1)
	defer w.Stop()
	w.Watch(0, p)
	res, err := p.AppendWritten(batchOf("f"))
	if err != nil {
		t.Fatal(err)
	}
	notMoved(t, w)
	if err := p.SyncTo(res.LastOffset + 1); err != nil {
		t.Fatal(err)
	}
	if got := moved(t, w); !slices.Equal(got, []int{0}) {
		t.Fatalf("moved %v after the SyncTo, want [0]", got)
	}
}

// TestDurableWatcherConcurrent: appends from many goroutines while the
// waiter takes the marks and moves its keys between partitions (for the
// race detector); every key whose partition got an append after its
// registration is marked by the end.
func TestDurableWatcherConcurrent(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	parts := make([]*logstore.Partition, 8)
	for i := range parts {
		parts[i] = openPartition(t, s, "events", int32(i))
	}
	w := logstore.NewDurableWatcher(len(parts))
	defer w.Stop()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, p := range parts {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := p.Append(batchOf("x")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[int]bool{}
	for i := range 200 {
		key := i % len(parts)
		w.Watch(key, parts[(i/len(parts)+key)%len(parts)])
		select {
		case <-w.Ready():
			for _, k := range w.Moved(nil) {
				seen[k] = true
			}
		default:
		}
	}
	deadline := time.After(10 * time.Second)
	for len(seen) < len(parts) {
		select {
		case <-w.Ready():
			for _, k := range w.Moved(nil) {
				seen[k] = true
			}
		case <-deadline:
			t.Fatalf("keys marked: %v, want all %d", seen, len(parts))
		}
	}
	close(stop)
	wg.Wait()
}
