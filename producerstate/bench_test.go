package producerstate_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// baseSequenceOffset is where a batch header holds the base sequence
// (kafka-format.md §1.1). The benchmark rewrites it in place to send the
// next batch without building one; the CRC goes stale, which the producer
// check never looks at.
const baseSequenceOffset = 53

// BenchmarkCheckApply measures what the producer check and the state
// update cost an append: Check of the producer's next batch (5 records),
// then Apply at the log end. With one producer, and with 10,000 producers
// written round-robin, so each Check and Apply finds a different entry in
// a large map; and the same with a Freeze every 10,000 appends, as rolls
// do, after which the first write to each group of producers copies it.
func BenchmarkCheckApply(b *testing.B) {
	for _, c := range []struct{ producers, freezeEvery int }{{1, 0}, {10_000, 0}, {10_000, 10_000}} {
		producers := c.producers
		name := fmt.Sprintf("producers=%d", producers)
		if c.freezeEvery > 0 {
			name += fmt.Sprintf("/freeze-every=%d", c.freezeEvery)
		}
		b.Run(name, func(b *testing.B) {
			batches := make([]recordbatch.Batch, producers)
			next := make([]int32, producers)
			for i := range batches {
				batches[i] = data(b, bspec{pid: int64(1000 + i), epoch: 3, seq: 0, n: 5, ts: ts0})
			}
			st := producerstate.New(producerstate.DefaultConfig())
			i, n := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				bt := batches[i]
				binary.BigEndian.PutUint32(bt[baseSequenceOffset:], uint32(next[i]))
				if d := st.Check(bt, now0); d.Outcome != producerstate.OK {
					b.Fatalf("%s: %s", d.Outcome, d.Reason)
				}
				bt.SetBaseOffset(st.MapEndOffset())
				if err := st.Apply(bt, now0); err != nil {
					b.Fatal(err)
				}
				next[i] = recordbatch.IncrementSequence(next[i], 5)
				if i++; i == producers {
					i = 0
				}
				if n++; n == c.freezeEvery {
					st.Freeze() // as a roll does: the next write to each chunk copies it
					n = 0
				}
			}
		})
	}
}

// BenchmarkCheckDuplicate measures the answer to a retry of the oldest
// batch in a full window, the longest search.
func BenchmarkCheckDuplicate(b *testing.B) {
	st := producerstate.New(producerstate.DefaultConfig())
	for seq := int32(0); seq < 25; seq += 5 {
		bt := data(b, bspec{pid: 1, seq: seq, n: 5, ts: ts0})
		bt.SetBaseOffset(st.MapEndOffset())
		if err := st.Apply(bt, now0); err != nil {
			b.Fatal(err)
		}
	}
	retry := data(b, bspec{pid: 1, seq: 0, n: 5, ts: ts0})
	b.ReportAllocs()
	for b.Loop() {
		if d := st.Check(retry, now0); d.Outcome != producerstate.Duplicate {
			b.Fatalf("%s: %s", d.Outcome, d.Reason)
		}
	}
}

// BenchmarkSnapshot measures taking and restoring the state of 10,000
// producers with full windows, as a segment roll and a restart do:
// Snapshot (the sorted deep copy), Freeze (the copy a roll takes under
// the partition's lock) and Frozen.Snapshot (the rest of the work, which
// the saver does outside the lock), FromSnapshot, and ExpireProducers
// with nothing to expire (a roll and a restart run it on every producer).
func BenchmarkSnapshot(b *testing.B) {
	st := producerstate.New(producerstate.DefaultConfig())
	for i := range 10_000 {
		for seq := int32(0); seq < 25; seq += 5 {
			bt := data(b, bspec{pid: int64(i), seq: seq, n: 5, ts: ts0})
			bt.SetBaseOffset(st.MapEndOffset())
			if err := st.Apply(bt, now0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Snapshot()
		}
	})
	// The same producers added in random id order, so that the copy
	// must sort them.
	shuffled := producerstate.New(producerstate.DefaultConfig())
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(10_000) {
		for seq := int32(0); seq < 25; seq += 5 {
			bt := data(b, bspec{pid: int64(i), seq: seq, n: 5, ts: ts0})
			bt.SetBaseOffset(shuffled.MapEndOffset())
			if err := shuffled.Apply(bt, now0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("Snapshot/unordered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			shuffled.Snapshot()
		}
	})
	b.Run("Freeze", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Freeze()
		}
	})
	frozen := st.Freeze()
	b.Run("Frozen.Snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			frozen.Snapshot()
		}
	})
	snap := st.Snapshot()
	b.Run("FromSnapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			producerstate.FromSnapshot(producerstate.DefaultConfig(), snap)
		}
	})
	b.Run("ExpireProducers", func(b *testing.B) {
		now := time.UnixMilli(ts0).Add(time.Hour)
		b.ReportAllocs()
		for b.Loop() {
			if gone := st.ExpireProducers(now); len(gone) != 0 {
				b.Fatal(gone)
			}
		}
	})
}
