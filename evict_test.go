package logstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore"
)

// TestMaxOpenPartitionsEvicts: with 3 partitions open at most, 12
// partitions of idempotent producers appended to in turn all take
// their batches, never more than 3 open at once; a retry of a batch of
// an evicted partition is a DUPLICATE with the first copy's offsets
// (the window came back from the close's snapshot), and a reopened
// store has every record.
func TestMaxOpenPartitionsEvicts(t *testing.T) {
	dir := t.TempDir()
	var evictions atomic.Int64
	opts := logstore.Options{Sync: logstore.SyncNever, MaxOpenPartitions: 3, EvictIdle: time.Nanosecond,
		Events: &logstore.Events{PartitionEvict: func(id logstore.PartitionID, err error) {
			if err != nil {
				t.Errorf("evicting %s: %v", id, err)
			}
			evictions.Add(1)
		}}}
	s, err := logstore.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const parts, batches = 12, 4
	first := map[int]logstore.AppendResult{}
	for seq := range batches {
		for i := range parts {
			p, err := s.Partition("evict", int32(i))
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Append(concBatch(int64(100+i), int32(seq), 1))
			if err != nil || res.Duplicate {
				t.Fatalf("partition %d batch %d: %+v %v", i, seq, res, err)
			}
			if seq == batches-1 {
				first[i] = res
			}
			if n := len(s.OpenPartitions()); n > 3 {
				t.Fatalf("%d partitions open, the bound is 3", n)
			}
		}
	}
	if evictions.Load() == 0 {
		t.Fatal("no partition was evicted")
	}
	p, err := s.Partition("evict", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(concBatch(100, batches-1, 1))
	if err != nil || !res.Duplicate || res != (logstore.AppendResult{BaseOffset: first[0].BaseOffset, LastOffset: first[0].LastOffset, Duplicate: true}) {
		t.Fatalf("the retry after an eviction: %+v %v, want a DUPLICATE of %+v", res, err, first[0])
	}
	s = reopenStore(t, s, dir)
	for i := range parts {
		p, err := s.Partition("evict", int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.EndOffset(); got != batches {
			t.Errorf("partition %d: end offset %d, want %d", i, got, batches)
		}
		if rec := p.Recovery(); !rec.Clean {
			t.Errorf("partition %d was not closed cleanly by its eviction: %+v", i, rec)
		}
	}
}

// TestTooManyOpenPartitions: opening one more partition closes the one
// idle longest among those idle for EvictIdle, else the least recently
// looked up; a partition a DurableWatcher watches is never closed, and
// when all are watched one more is refused with
// ErrTooManyOpenPartitions.
func TestTooManyOpenPartitions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s, err := logstore.Open(t.TempDir(), logstore.Options{MaxOpenPartitions: 2, EvictIdle: time.Minute}.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	open := func(i int32) *logstore.Partition {
		t.Helper()
		p, err := s.Partition("t", i)
		if err != nil {
			t.Fatalf("t-%d: %v", i, err)
		}
		return p
	}
	isOpen := func(want ...int32) {
		t.Helper()
		var got []int32
		for _, p := range s.OpenPartitions() {
			got = append(got, p.ID().Partition)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("open: %v, want %v", got, want)
		}
	}
	a := open(0)
	advance(time.Second)
	open(1)
	advance(time.Second)
	open(2) // neither idle: the least recently used, t-0, goes
	isOpen(1, 2)
	if _, err := a.Append(batchOf("x")); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("t-0 closed: %v, want ErrClosed", err)
	}
	advance(2 * time.Minute)
	open(2) // t-1 idle, t-2 used now
	open(3) // t-1, idle, goes before t-2
	isOpen(2, 3)

	w := logstore.NewDurableWatcher(2)
	defer w.Stop()
	w.Watch(0, open(2))
	w.Watch(1, open(3))
	if _, err := s.Partition("t", 4); !errors.Is(err, logstore.ErrTooManyOpenPartitions) {
		t.Fatalf("both open ones watched: %v, want ErrTooManyOpenPartitions", err)
	}
	w.Unwatch(0)
	open(4)
	isOpen(3, 4)
}

// TestEvictionUnderConcurrentProducers: 8 idempotent producers append
// to 16 partitions at random with 4 open at most and no idle time, so
// partitions are closed under appends; each retries (as a Kafka client
// does) on ErrClosed and ErrTooManyOpenPartitions. Every batch is in
// its partition exactly once, in sequence, and the open count never
// passes the bound by more than the opens racing it.
func TestEvictionUnderConcurrentProducers(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever, MaxOpenPartitions: 4, EvictIdle: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	const producers, parts, batches = 8, 16, 40
	var wg sync.WaitGroup
	seqs := make([][parts]int32, producers)
	var retries atomic.Int64
	for w := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			deadline := time.Now().Add(time.Minute)
			for range batches {
				i := rng.IntN(parts)
				batch := concBatch(int64(1000+w), seqs[w][i], 1)
				for {
					if time.Now().After(deadline) {
						t.Errorf("producer %d: no progress in a minute", w)
						return
					}
					p, err := s.Partition(fmt.Sprint("c", i), 0)
					if err == nil {
						_, err = p.Append(batch)
					}
					if err == nil {
						break
					}
					if !errors.Is(err, logstore.ErrClosed) && !errors.Is(err, logstore.ErrTooManyOpenPartitions) {
						t.Errorf("producer %d, partition %d: %v", w, i, err)
						return
					}
					retries.Add(1)
					time.Sleep(100 * time.Microsecond) // a client's backoff
				}
				seqs[w][i]++
			}
		}()
	}
	wg.Wait()
	t.Logf("%d retries", retries.Load())
	s = reopenStore(t, s, dir)
	for i := range parts {
		var want int64
		for w := range producers {
			want += int64(seqs[w][i])
		}
		if _, err := os.Stat(fmt.Sprintf("%s/c%d-0", dir, i)); err != nil && want == 0 {
			continue
		}
		p, err := s.Partition(fmt.Sprint("c", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.EndOffset(); got != want {
			t.Errorf("partition c%d: %d records, want %d (each batch once)", i, got, want)
		}
	}
}

// TestLetIdle: a partition let idle is closed first for the bound, even
// just looked up; a scan of every partition (the transaction
// coordinator's at open) so passes through more than the bound.
func TestLetIdle(t *testing.T) {
	s, err := logstore.Open(t.TempDir(), logstore.Options{MaxOpenPartitions: 2, EvictIdle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 10 {
		p, err := s.Partition("scan", int32(i))
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
		s.LetIdle(p)
	}
	if n := len(s.OpenPartitions()); n > 2 {
		t.Errorf("%d open, the bound is 2", n)
	}
}

// reopenStore closes s, which must close cleanly, and opens dir again
// with the default options; it closes when the test ends.
func reopenStore(t *testing.T, s *logstore.Store, dir string) *logstore.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
