package logstore_test

import (
	"fmt"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// BenchmarkAppendRoll measures what a roll costs an append: every append
// of rolls=every starts a new segment (so it copies the producer state of
// the partition's 10,000 producers, and the old segment's flush and the
// snapshot's save run in the background; a roll waits for the previous
// roll's, so back-to-back rolls pay for them), beside the same appends
// without rolls. sync=never, so the difference is the roll itself.
func BenchmarkAppendRoll(b *testing.B) {
	for _, every := range []bool{false, true} {
		b.Run(fmt.Sprintf("producers=10000/rolls=%s", map[bool]string{false: "none", true: "every"}[every]), func(b *testing.B) {
			// 10,000 producers, written with large segments; then reopened
			// with the segment size under test.
			dir := b.TempDir()
			seq := make([]int32, 10000)
			withProducers(b, dir, len(seq))
			for pid := range seq {
				seq[pid] = 1
			}
			segBytes := int64(1 << 30)
			if every {
				segBytes = 200
			}
			s := openStore(b, dir, logstore.Options{Sync: logstore.SyncNever, SegmentBytes: segBytes})
			defer s.Close()
			p := openPartition(b, s, "bench", 0)
			batches := make([][]byte, len(seq))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				pid := i % len(seq)
				b.StopTimer()
				batches[pid] = producerBatch(int64(pid), 0, seq[pid], 1, recent)
				b.StartTimer()
				if _, err := p.Append(batches[pid]); err != nil {
					b.Fatal(err)
				}
				seq[pid] = recordbatch.IncrementSequence(seq[pid], 1)
				i++
			}
		})
	}
}
