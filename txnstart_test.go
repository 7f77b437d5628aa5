package logstore_test

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// TestLSONeverPassesUndecidedTxn: the last stable offset never covers a
// batch of a transaction whose marker is not below the high watermark:
// not for the moment between the batch's write (which DurableEnd covers
// at once under SyncNever, at the next group commit under SyncAlways)
// and the producer state's update, and not between its marker's write
// and the marker's fsync (Kafka keeps such a transaction unstable until
// its marker is replicated). One producer writes transactions of one
// data batch and its marker, so the data batches are at even offsets and
// the markers at odd ones, and the LSO is always even; a reader reads it
// without pause meanwhile.
func TestLSONeverPassesUndecidedTxn(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncNever, logstore.SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode})
			p := openPartition(t, s, "race", 0)
			var stop atomic.Bool
			var bad atomic.Int64
			bad.Store(-1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if lso := p.LastStableOffset(); lso%2 != 0 {
						bad.CompareAndSwap(-1, lso)
					}
				}
			}()
			const txns = 200
			for i := range txns {
				mustAppend(t, p, txnDataBatch(1, 0, int32(i), 1))
				mustMarker(t, p, 1, i%2 == 0)
				if bad.Load() >= 0 {
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			if lso := bad.Load(); lso >= 0 {
				t.Fatalf("LastStableOffset %d: past the batch at %d, whose marker was not durable", lso, lso-1)
			}
		})
	}
}

// TestReadStable: reads stop below the last stable offset, and at least
// the batch holding the offset comes back whole; from the LSO up to the
// high watermark nothing and no error; above the high watermark
// ErrOffsetOutOfRange.
func TestReadStable(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "stable", 0)
	mustAppend(t, p, producerBatch(-1, -1, -1, 2, recent)) // 0..1
	mustAppend(t, p, txnDataBatch(1, 0, 0, 2))             // 2..3, open
	mustAppend(t, p, producerBatch(-1, -1, -1, 1, recent)) // 4
	data, hwm, lso, err := p.ReadStable(0, 1<<20)
	if err != nil || hwm != 5 || lso != 2 {
		t.Fatalf("ReadStable(0) = hwm %d lso %d, %v", hwm, lso, err)
	}
	if got := batchBases(t, data); !slices.Equal(got, []int64{0}) {
		t.Fatalf("ReadStable(0) read batches at %v, want [0]", got)
	}
	if data, _, _, err = p.ReadStable(1, 1); err != nil || !slices.Equal(batchBases(t, data), []int64{0}) {
		t.Fatalf("ReadStable(1, 1 byte) read %v, %v; want the batch at 0 whole", batchBases(t, data), err)
	}
	for _, off := range []int64{2, 3, 4, 5} {
		if data, _, _, err := p.ReadStable(off, 1<<20); err != nil || len(data) != 0 {
			t.Fatalf("ReadStable(%d) = %d bytes, %v; want nothing", off, len(data), err)
		}
	}
	if _, _, _, err := p.ReadStable(6, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("ReadStable(6) = %v, want ErrOffsetOutOfRange", err)
	}
	mustMarker(t, p, 1, false) // 5
	data, hwm, lso, err = p.ReadStable(0, 1<<20)
	if err != nil || hwm != 6 || lso != 6 || !slices.Equal(batchBases(t, data), []int64{0, 2, 4, 5}) {
		t.Fatalf("after the marker: batches %v, hwm %d lso %d, %v", batchBases(t, data), hwm, lso, err)
	}
}

func batchBases(t *testing.T, data []byte) []int64 {
	t.Helper()
	var bases []int64
	for len(data) > 0 {
		b, err := recordbatch.Parse(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, b.BaseOffset())
		data = data[b.Size():]
	}
	return bases
}

// TestOpenTransactions: a transactional batch opens its producer's
// transaction at its base offset, a later batch of the same transaction
// leaves the first offset as it is, and the producer's marker ends it;
// OpenTransaction answers the same as the map OpenTransactions returns,
// and that map is the caller's own.
func TestOpenTransactions(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "open", 0)
	want := func(what string, open map[int64]int64) {
		t.Helper()
		got := p.OpenTransactions()
		if !maps.Equal(got, open) {
			t.Fatalf("%s: OpenTransactions() = %v, want %v", what, got, open)
		}
		for _, pid := range []int64{1, 2, 3} {
			first, ok := p.OpenTransaction(pid)
			if wantFirst, wantOK := open[pid]; first != wantFirst || ok != wantOK {
				t.Fatalf("%s: OpenTransaction(%d) = %d, %v; want %d, %v", what, pid, first, ok, wantFirst, wantOK)
			}
		}
		clear(got)
	}
	want("empty", map[int64]int64{})
	mustAppend(t, p, producerBatch(-1, -1, -1, 1, recent)) // 0
	mustAppend(t, p, txnDataBatch(1, 0, 0, 2))             // 1..2
	mustAppend(t, p, txnDataBatch(2, 0, 0, 1))             // 3
	mustAppend(t, p, txnDataBatch(1, 0, 2, 1))             // 4
	want("two open", map[int64]int64{1: 1, 2: 3})
	mustMarker(t, p, 1, true) // 5
	want("1 committed", map[int64]int64{2: 3})
	mustAppend(t, p, txnDataBatch(1, 0, 3, 1)) // 6
	want("1 again", map[int64]int64{1: 6, 2: 3})
	mustMarker(t, p, 2, false)
	mustMarker(t, p, 1, false)
	want("both aborted", map[int64]int64{})
}
