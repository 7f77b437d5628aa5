package producerstate_test

import (
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
)

// freezeLoad applies, for each of pids, batches enough to fill the window
// from seq on, at timestamp ts and with the store's clock at ts, and
// returns the next sequence of each.
func freezeLoad(t *testing.T, p *partition, pids []int64, epoch int16, seq map[int64]int32, ts int64, batches int) {
	t.Helper()
	p.clock = time.UnixMilli(ts)
	for range batches {
		for _, pid := range pids {
			p.appendBatch(data(t, bspec{pid: pid, epoch: epoch, seq: seq[pid], n: 2, ts: ts}))
			seq[pid] += 2
		}
	}
}

// TestFreeze: a Frozen copy stays what the state was when it was taken,
// whatever the state does afterwards (updates of every producer, new
// epochs, new producers, evictions past the cap, expiry), across many
// chunks of entries; and the live state stays a replay of its log.
func TestFreeze(t *testing.T) {
	cfg := producerstate.Config{ExpireAfter: time.Hour, MaxProducers: 300}
	p := newPartition(t, cfg)
	seq := map[int64]int32{}
	// 200 producers added in descending id order, so the entries are not
	// in id order and Snapshot must sort.
	var pids []int64
	for i := range 200 {
		pids = append(pids, 10_000-int64(i)*7)
	}
	freezeLoad(t, p, pids, 0, seq, ts0, 3)
	want1 := p.st.Snapshot()
	f1 := p.st.Freeze()
	if got := f1.Snapshot(); !got.Equal(want1) || f1.Offset() != want1.Offset || f1.Len() != 200 {
		t.Fatalf("Freeze differs from Snapshot:\n got %+v\nwant %+v", got, want1)
	}

	// Every producer moves on; half of them to a new epoch.
	freezeLoad(t, p, pids[:100], 0, seq, ts0+1, 4)
	for _, pid := range pids[100:] {
		seq[pid] = 0
	}
	freezeLoad(t, p, pids[100:], 1, seq, ts0+2, 1)
	// New producers, ascending, past the cap: the oldest are evicted.
	var more []int64
	for i := range 150 {
		more = append(more, 20_000+int64(i))
	}
	freezeLoad(t, p, more, 0, seq, ts0+3*int64(time.Hour/time.Millisecond), 1)
	if p.st.Len() != 300 {
		t.Fatalf("%d producers, want the cap of 300", p.st.Len())
	}
	want2 := p.st.Snapshot()
	f2 := p.st.Freeze()
	// Expiry removes all but the new ones.
	if gone := p.st.ExpireProducers(now0.Add(3*time.Hour + time.Minute)); len(gone) != 150 {
		t.Fatalf("%d expired, want 150", len(gone))
	}
	freezeLoad(t, p, more[:40], 0, seq, ts0+3*int64(time.Hour/time.Millisecond)+5, 2)

	for i, c := range []struct {
		f    producerstate.Frozen
		want producerstate.Snapshot
	}{{f1, want1}, {f2, want2}} {
		got := c.f.Snapshot()
		if !got.Equal(c.want) {
			t.Fatalf("freeze %d changed since it was taken:\n got %+v\nwant %+v", i+1, got, c.want)
		}
		// The Snapshot shares no memory with the Frozen copy.
		for j := range got.Producers {
			for k := range got.Producers[j].Batches {
				got.Producers[j].Batches[k].FirstSeq = -7
			}
			got.Producers[j].LastTimestamp = -7
		}
		if again := c.f.Snapshot(); !again.Equal(c.want) {
			t.Fatalf("freeze %d changed through its Snapshot", i+1)
		}
	}
	// Expiry is not replayed, so compare with a rebuild of the state's
	// own snapshot instead: the state after all the copying on write is
	// still consistent, entry by entry.
	rebuilt := producerstate.FromSnapshot(cfg, p.st.Snapshot())
	if !rebuilt.Equal(p.st) {
		t.Fatalf("state differs from a rebuild of its snapshot:\n%s", diff(rebuilt, p.st))
	}
	for _, pid := range more {
		e, ok := p.st.Producer(pid)
		if !ok || e.Batches[len(e.Batches)-1].LastSeq != seq[pid]-1 {
			t.Fatalf("producer %d: %+v, %v; want last sequence %d", pid, e, ok, seq[pid]-1)
		}
	}
}

// TestFreezeConcurrent: a Frozen copy can be read while the state goes on
// (run with -race).
func TestFreezeConcurrent(t *testing.T) {
	p := newPartition(t, noExpiry)
	seq := map[int64]int32{}
	var pids []int64
	for i := range 100 {
		pids = append(pids, int64(i))
	}
	freezeLoad(t, p, pids, 0, seq, ts0, 5)
	want := p.st.Snapshot()
	f := p.st.Freeze()
	var wg sync.WaitGroup
	errs := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if !f.Snapshot().Equal(want) {
				errs <- "frozen copy changed while the state went on"
				return
			}
		}
	}()
	freezeLoad(t, p, pids, 0, seq, ts0+1, 5)
	wg.Wait()
	close(errs)
	if msg, ok := <-errs; ok {
		t.Fatal(msg)
	}
}

// TestExpireMatchesExpired: ExpireProducers, which compares each
// producer's seen time with one cutoff, removes exactly the producers
// that Check judges expired, for seen times and clocks at the edges of
// their ranges (0 is a seen time not known: neither expires it).
func TestExpireMatchesExpired(t *testing.T) {
	tss := []int64{-1 << 63, -1<<63 + 1, -1e15, -1, 0, 1, ts0 - 3_600_001, ts0 - 3_600_000, ts0 - 3_599_999, ts0, ts0 + 1, 1e15, 1<<63 - 2, 1<<63 - 1}
	var expired, kept int
	nows := []time.Time{now0, now0.Add(time.Nanosecond), now0.Add(-time.Nanosecond), now0.Add(999_999), time.Unix(0, 0), time.Unix(-1<<62, 0), time.Unix(1<<62, 0), time.Unix(1<<62, 999_999_999), time.Now()}
	for _, after := range []time.Duration{time.Nanosecond, time.Millisecond, time.Hour, 1<<63 - 1} {
		for _, now := range nows {
			// Seen times a clock cannot give come from a snapshot.
			snap := producerstate.Snapshot{Offset: 100}
			for i, ts := range tss {
				snap.Producers = append(snap.Producers, producerstate.Entry{
					ProducerID: int64(i), TxnFirstOffset: -1, LastSeen: ts,
					Batches: []producerstate.BatchMeta{{FirstSeq: 0, LastSeq: 0, FirstOffset: int64(i), LastOffset: int64(i), Timestamp: ts}},
				})
			}
			st := producerstate.FromSnapshot(producerstate.Config{ExpireAfter: after}, snap)
			// What Check says: an expired producer is unknown, so a
			// batch at sequence 1 is refused as out of order.
			want := map[int64]bool{}
			for i := range tss {
				d := st.Check(data(t, bspec{pid: int64(i), seq: 1}), now)
				want[int64(i)] = d.Outcome == producerstate.OutOfOrder
			}
			gone := st.ExpireProducers(now)
			got := map[int64]bool{}
			for _, id := range gone {
				got[id] = true
			}
			for i, ts := range tss {
				if want[int64(i)] {
					expired++
				} else {
					kept++
				}
				if got[int64(i)] != want[int64(i)] {
					t.Errorf("ExpireAfter %v, now %v, seen %d: expired %v, Check says %v", after, now, ts, got[int64(i)], want[int64(i)])
				}
			}
		}
	}
	if expired < 50 || kept < 50 {
		t.Fatalf("%d expired and %d kept: the cases do not reach both sides", expired, kept)
	}
}
