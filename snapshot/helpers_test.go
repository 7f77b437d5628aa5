package snapshot_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
)

// richSnapshot is a snapshot with n producers that uses every corner of
// the format: extreme and negative ids, epochs and offsets, open
// transactions, windows of every length up to full, sequences that wrap
// between and inside batches, timestamps far apart, and seen times
// known, not known (0) and extreme.
func richSnapshot(seed uint64, offset int64, n int) producerstate.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(vals ...int64) int64 { return vals[rng.IntN(len(vals))] }
	ids := map[int64]bool{math.MinInt64: true, math.MaxInt64: true, -1: true, 0: true}
	for len(ids) < n {
		switch rng.IntN(3) {
		case 0:
			ids[int64(rng.Uint64())] = true
		default:
			ids[rng.Int64N(1<<20)] = true
		}
	}
	sorted := make([]int64, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	sorted = sorted[:n]
	if n >= 2 {
		sorted[n-1] = math.MaxInt64 // both extremes, whatever the sample
	}

	snap := producerstate.Snapshot{Offset: offset, Producers: make([]producerstate.Entry, n)}
	for i, id := range sorted {
		e := producerstate.Entry{
			ProducerID:       id,
			Epoch:            int16(pick(0, 1, -1, math.MaxInt16, math.MinInt16, int64(rng.IntN(100)))),
			CoordinatorEpoch: int32(pick(-1, 0, math.MaxInt32, math.MinInt32, int64(rng.IntN(1000)))),
			TxnFirstOffset:   pick(-1, -1, 0, math.MaxInt64, int64(rng.Uint64()>>1), rng.Int64N(1<<40)),
			LastTimestamp:    pick(-1, 0, math.MinInt64, math.MaxInt64, 1700000000000+rng.Int64N(1<<30)),
			LastSeen:         pick(0, -1, math.MinInt64, math.MaxInt64, 1700000000000+rng.Int64N(1<<30)),
			LastApplied:      pick(-1, 0, offset-1, math.MinInt64, math.MaxInt64, rng.Int64N(1<<40)),
		}
		k := i % (producerstate.WindowSize + 1)
		if i%3 != 0 {
			k = producerstate.WindowSize
		}
		seq := int32(pick(0, math.MaxInt32-2, math.MaxInt32, int64(rng.Int32())))
		off := pick(0, math.MaxInt64-1000, int64(rng.Uint64()>>2), rng.Int64N(1<<40))
		ts := e.LastTimestamp - rng.Int64N(1000)
		for range k {
			count := int32(pick(1, 1, 3, 100, int64(rng.Int32N(1<<20)+1)))
			var b producerstate.BatchMeta
			b.FirstSeq = seq
			b.LastSeq = seq + count - 1 // int32 wrap, as the format must keep
			if b.LastSeq < 0 {
				b.LastSeq -= math.MinInt32
			}
			b.FirstOffset = off
			b.LastOffset = off + int64(count) - 1
			b.Timestamp = ts
			if rng.IntN(10) == 0 { // the odd outlier: arbitrary values
				b = producerstate.BatchMeta{
					FirstSeq: rng.Int32(), LastSeq: int32(rng.Uint32()),
					FirstOffset: int64(rng.Uint64()), LastOffset: int64(rng.Uint64()),
					Timestamp: int64(rng.Uint64()),
				}
			}
			e.Batches = append(e.Batches, b)
			seq = b.LastSeq + 1
			if seq < 0 {
				seq = 0
			}
			off = b.LastOffset + 1 + rng.Int64N(50)
			ts = b.Timestamp + rng.Int64N(5000)
		}
		snap.Producers[i] = e
	}
	return snap
}

// fullSnapshot is the benchmark's state: n producers with ascending ids,
// each with a full window of 5 consecutive batches of a few records, as
// a busy partition has.
func fullSnapshot(offset int64, n int) producerstate.Snapshot {
	rng := rand.New(rand.NewPCG(1, 2))
	snap := producerstate.Snapshot{Offset: offset, Producers: make([]producerstate.Entry, n)}
	base := int64(1000)
	ts := int64(1700000000000)
	for i := range snap.Producers {
		base += 1 + rng.Int64N(3)
		e := producerstate.Entry{
			ProducerID:       base,
			Epoch:            int16(rng.IntN(3)),
			CoordinatorEpoch: -1,
			TxnFirstOffset:   -1,
		}
		seq := rng.Int32N(1 << 20)
		off := offset - 100000 + rng.Int64N(90000)
		t := ts + rng.Int64N(3600000)
		for range producerstate.WindowSize {
			count := 1 + rng.Int32N(20)
			e.Batches = append(e.Batches, producerstate.BatchMeta{
				FirstSeq: seq, LastSeq: seq + count - 1,
				FirstOffset: off, LastOffset: off + int64(count) - 1,
				Timestamp: t,
			})
			seq += count
			off += int64(count) + rng.Int64N(200)
			t += rng.Int64N(100)
		}
		e.LastTimestamp = t
		e.LastSeen = t + int64(i%50) // the store takes it a little after the client stamps it
		e.LastApplied = e.Batches[len(e.Batches)-1].LastOffset
		snap.Producers[i] = e
	}
	return snap
}

// normalize makes empty slices nil, since the format does not tell them
// apart.
func normalize(s producerstate.Snapshot) producerstate.Snapshot {
	if len(s.Producers) == 0 {
		s.Producers = nil
		return s
	}
	ps := slices.Clone(s.Producers)
	for i := range ps {
		if len(ps[i].Batches) == 0 {
			ps[i].Batches = nil
		}
	}
	s.Producers = ps
	return s
}

func sameSnapshot(a, b producerstate.Snapshot) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func mustEncode(t testing.TB, snap producerstate.Snapshot) []byte {
	t.Helper()
	v, err := snapshot.AppendValue(nil, snap)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkAllocated fails when f allocates more than max bytes: what a
// decoder allocates must be bounded by its input, never by a count the
// input claims.
func checkAllocated(t *testing.T, max uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > max {
		t.Fatalf("allocated %d bytes, bound %d", grew, max)
	}
}
