package producerstate_test

import (
	"encoding/binary"
	"fmt"
	"testing"

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
// a large map.
func BenchmarkCheckApply(b *testing.B) {
	for _, producers := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			batches := make([]recordbatch.Batch, producers)
			next := make([]int32, producers)
			for i := range batches {
				batches[i] = data(b, bspec{pid: int64(1000 + i), epoch: 3, seq: 0, n: 5, ts: ts0})
			}
			st := producerstate.New(producerstate.DefaultConfig())
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				bt := batches[i]
				binary.BigEndian.PutUint32(bt[baseSequenceOffset:], uint32(next[i]))
				if d := st.Check(bt, now0); d.Outcome != producerstate.OK {
					b.Fatalf("%s: %s", d.Outcome, d.Reason)
				}
				bt.SetBaseOffset(st.MapEndOffset())
				if err := st.Apply(bt); err != nil {
					b.Fatal(err)
				}
				next[i] = recordbatch.IncrementSequence(next[i], 5)
				if i++; i == producers {
					i = 0
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
		if err := st.Apply(bt); err != nil {
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
// producers with full windows, as a segment roll and a restart do.
func BenchmarkSnapshot(b *testing.B) {
	st := producerstate.New(producerstate.DefaultConfig())
	for i := range 10_000 {
		for seq := int32(0); seq < 25; seq += 5 {
			bt := data(b, bspec{pid: int64(i), seq: seq, n: 5, ts: ts0})
			bt.SetBaseOffset(st.MapEndOffset())
			if err := st.Apply(bt); err != nil {
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
	snap := st.Snapshot()
	b.Run("FromSnapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			producerstate.FromSnapshot(producerstate.DefaultConfig(), snap)
		}
	})
}
