package logstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

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
	h := testutil.NewHeldSyncFS(vfs.OS)
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

// timedBatch is a batch without producer of one record per timestamp,
// compressed with codec; a LogAppendTime batch when appendTime >= 0.
func timedBatch(t *testing.T, codec recordbatch.Codec, appendTime int64, timestamps ...int64) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	b.Compression = codec
	if appendTime >= 0 {
		b.TimestampType, b.LogAppendTime = recordbatch.LogAppendTime, appendTime
	}
	for _, ts := range timestamps {
		if err := b.Append(ts, nil, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMaxTimestampRecord: MaxTimestamp names the record that has the
// largest timestamp, the first of equals, as Kafka 3.8+ answers
// ListOffsets MAX_TIMESTAMP (KAFKA-16310), not the last offset of its
// batch: in the earliest batch with the largest max timestamp, the first
// record with that timestamp, compressed or not; in a LogAppendTime
// batch, its first record.
func TestMaxTimestampRecord(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]int64 // record timestamps per batch; a leading -2 marks LogAppendTime 9000
		ts, off int64
	}{
		{"inside a batch", [][]int64{{1000, 5000, 5000, 2000}}, 5000, 1},
		{"earliest batch of equals", [][]int64{{1000, 2000}, {3000, 7000, 1}, {7000, 7000}}, 7000, 3},
		{"later batch larger", [][]int64{{7000}, {1, 8000, 8000}}, 8000, 2},
		{"log append time", [][]int64{{1000}, {-2, 100, 200, 300}}, 9000, 1},
	}
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecZstd} {
		for _, c := range cases {
			s := openStore(t, t.TempDir(), logstore.Options{})
			p := openPartition(t, s, "t", 0)
			for _, stamps := range c.batches {
				appendTime := int64(-1)
				if stamps[0] == -2 {
					appendTime, stamps = 9000, stamps[1:]
				}
				if _, err := p.AppendWritten(timedBatch(t, codec, appendTime, stamps...)); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			if ts, off, err := p.MaxTimestamp(); err != nil || ts != c.ts || off != c.off {
				t.Errorf("%s, %s: MaxTimestamp %d at offset %d, %v; want %d at %d", c.name, codec, ts, off, err, c.ts, c.off)
			}
		}
	}
}

// TestDurableEnd: after Append returns, DurableEnd covers the batch in
// every sync mode. Under SyncAlways it never covers a batch whose fsync
// has not ended; under SyncInterval and SyncNever it is the log end,
// with no fsync, and SyncTo fsyncs on request, once. SyncTo beyond the
// end fails without poisoning; on a closed partition it is ErrClosed.
func TestDurableEnd(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncInterval(time.Hour), logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testutil.NewHeldSyncFS(vfs.OS)
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
				h.Hold.Store(true)
				done := make(chan error, 1)
				go func() { _, err := p.Append(batchOf("b")); done <- err }()
				<-h.Entered
				end, d := p.EndOffset(), p.DurableEnd()
				close(h.Release) // before any failure: Close waits for the append
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if end != 2 || d != 1 {
					t.Fatalf("end %d, DurableEnd %d while the fsync was held; want 2 and 1", end, d)
				}
			} else {
				before := h.Syncs.Load()
				if _, err := p.Append(batchOf("b")); err != nil {
					t.Fatal(err)
				}
				if d := p.DurableEnd(); d != 2 || h.Syncs.Load() != before {
					t.Fatalf("DurableEnd %d after %d fsyncs; want 2 with none", d, h.Syncs.Load()-before)
				}
				for range 2 {
					if err := p.SyncTo(2); err != nil {
						t.Fatal(err)
					}
				}
				if n := h.Syncs.Load() - before; n != 1 {
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
