package logstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// TestAppendWrittenDoesNotSync: under SyncAlways, AppendWritten returns
// with the batch written and not fsynced (DurableEnd has not moved);
// WaitAcked fsyncs it. A duplicate of a batch whose fsync is held is
// answered by AppendWritten at once with the first copy's offsets, and
// its WaitAcked does not return before that fsync ends.
func TestAppendWrittenDoesNotSync(t *testing.T) {
	h := &heldSyncFS{FS: vfs.OS, entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := openStore(t, t.TempDir(), logstore.Options{}.WithFS(h))
	p := openPartition(t, s, "events", 0)
	before := h.syncs.Load()
	first := producerBatch(7, 0, 0, 2, 1_700_000_000_000)
	res, err := p.AppendWritten(first)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 1 || res.Duplicate {
		t.Fatalf("AppendWritten: %+v, want offsets 0..1", res)
	}
	if d, n := p.DurableEnd(), h.syncs.Load()-before; d != 0 || n != 0 {
		t.Fatalf("after AppendWritten: DurableEnd %d, %d fsyncs; want 0 and 0", d, n)
	}

	// The first copy's fsync is held; its retry must wait for it.
	h.hold.Store(true)
	acked := make(chan error, 1)
	go func() { acked <- p.WaitAcked(res) }()
	<-h.entered
	dup, err := p.AppendWritten(producerBatch(7, 0, 0, 2, 1_700_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if !dup.Duplicate || dup.BaseOffset != 0 || dup.LastOffset != 1 {
		t.Fatalf("retry: %+v, want a duplicate of 0..1", dup)
	}
	dupAcked := make(chan error, 1)
	go func() { dupAcked <- p.WaitAcked(dup) }()
	select {
	case err := <-dupAcked:
		close(h.release)
		t.Fatalf("WaitAcked of the duplicate returned (%v) while the first copy's fsync was held", err)
	default:
	}
	if d := p.DurableEnd(); d != 0 {
		t.Fatalf("DurableEnd %d while the fsync is held", d)
	}
	close(h.release)
	for _, c := range []chan error{acked, dupAcked} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if d := p.DurableEnd(); d != 2 {
		t.Fatalf("DurableEnd %d after WaitAcked, want 2", d)
	}
}

// TestAppendWrittenRefusal: AppendWritten refuses as Append does.
func TestAppendWrittenRefusal(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	_, err := p.AppendWritten(producerBatch(7, 0, 3, 1, 1_700_000_000_000))
	var r *logstore.RefusedError
	if !errors.As(err, &r) || r.Kind != logstore.RefusedUnknownProducer {
		t.Fatalf("AppendWritten of an unknown producer at sequence 3: %v, want RefusedUnknownProducer", err)
	}
	if p.EndOffset() != 0 {
		t.Fatal("a refused batch was written")
	}
}

// TestWaitDurable: a waiter for DurableEnd wakes on the append (or the
// sync, under SyncAlways) that moves it past its offset, stops when its
// context ends, and a close wakes it with ErrClosed.
func TestWaitDurable(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode})
			p := openPartition(t, s, "events", 0)
			got := make(chan int64, 1)
			go func() {
				d, err := p.WaitDurable(context.Background(), 0)
				if err != nil {
					t.Error(err)
				}
				got <- d
			}()
			res, err := p.AppendWritten(batchOf("a"))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WaitAcked(res); err != nil {
				t.Fatal(err)
			}
			if d := <-got; d != 1 {
				t.Fatalf("WaitDurable woke at %d, want 1", d)
			}

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := p.WaitDurable(ctx, 5); !errors.Is(err, context.Canceled) {
				t.Fatalf("WaitDurable with a cancelled context: %v", err)
			}

			closed := make(chan error, 1)
			ch := p.DurableChanged()
			go func() { _, err := p.WaitDurable(context.Background(), 5); closed <- err }()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			<-ch
			if err := <-closed; !errors.Is(err, logstore.ErrClosed) {
				t.Fatalf("WaitDurable on a closed partition: %v, want ErrClosed", err)
			}
		})
	}
}

// TestReadDurable: reads never return a batch at or above DurableEnd;
// reading at DurableEnd is empty, above it out of range.
func TestReadDurable(t *testing.T) {
	h := &heldSyncFS{FS: vfs.OS, entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := openStore(t, t.TempDir(), logstore.Options{}.WithFS(h))
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendWritten(batchOf("c")); err != nil { // written, not durable
		t.Fatal(err)
	}
	data, hwm, err := p.ReadDurable(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if hwm != 2 || len(data) == 0 || len(data) >= len(all) {
		t.Fatalf("ReadDurable: %d bytes, hwm %d; Read has %d bytes; want the first batch only, hwm 2", len(data), hwm, len(all))
	}
	if data, _, err := p.ReadDurable(2, 1<<20); err != nil || len(data) != 0 {
		t.Fatalf("ReadDurable at the HWM: %d bytes, %v; want none", len(data), err)
	}
	if _, _, err := p.ReadDurable(3, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("ReadDurable above the HWM: %v, want ErrOffsetOutOfRange", err)
	}
}

// TestMaxTimestampAndOffsetForTime: the partition answers ListOffsets'
// time queries from its segments.
func TestMaxTimestampAndOffsetForTime(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if ts, off, err := p.MaxTimestamp(); err != nil || ts != -1 || off != -1 {
		t.Fatalf("empty: MaxTimestamp %d at %d, %v", ts, off, err)
	}
	for i, ts := range []int64{1000, 3000, 2000} {
		if _, err := p.Append(producerBatch(-1, -1, -1, 2, ts)); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if ts, off, err := p.MaxTimestamp(); err != nil || ts != 3000 || off != 2 {
		t.Fatalf("MaxTimestamp %d at %d, %v; want 3000 at 2, the first record of the second batch", ts, off, err)
	}
	if off, err := p.OffsetForTime(2500); err != nil || off < 2 || off > 3 {
		t.Fatalf("OffsetForTime(2500) = %d, %v; want an offset of the second batch", off, err)
	}
	if off, err := p.OffsetForTime(time.Hour.Milliseconds() * 1e6); err != nil || off != -1 {
		t.Fatalf("OffsetForTime(far future) = %d, %v; want -1", off, err)
	}
}
