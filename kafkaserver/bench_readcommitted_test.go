package kafkaserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// BenchmarkFetchReadCommitted reads a partition of 500 transactions, one
// 32-record batch of 100-byte values each, committed and aborted in
// turn, from its start to its end with raw Fetch v12 requests of 1 MiB,
// a whole pass per op, at read_uncommitted and at read_committed (which
// also bounds the read by the LSO and lists the aborted transactions of
// each answer from the .txnindex files). MB/s counts the batch bytes.
func BenchmarkFetchReadCommitted(b *testing.B) {
	ts := startServer(b, logstore.Options{Sync: logstore.SyncNever}, Config{})
	ts.createTopic("t", 1)
	l := ts.txnLog("t", 0)
	values := make([]string, 32)
	for i := range values {
		values[i] = strings.Repeat(fmt.Sprint(i%10), 100)
	}
	for i := range 500 {
		pid := int64(1 + i%4)
		l.data(pid, values...)
		l.end(pid, i%2 == 0)
	}
	end := l.part.DurableEnd()
	c := ts.dial()
	for _, level := range []int8{0, 1} {
		b.Run(fmt.Sprintf("isolation=%d", level), func(b *testing.B) {
			b.ReportAllocs()
			var size, aborted int64
			for range b.N {
				size, aborted = 0, 0
				for off := int64(0); off < end; {
					r := fetchReq(12, "t", 0, off, 0, 0)
					r.IsolationLevel = level
					sp := c.do(r).(*kmsg.FetchResponse).Topics[0].Partitions[0]
					if sp.ErrorCode != 0 || len(sp.RecordBatches) == 0 {
						b.Fatalf("fetch at %d: error %d, %d bytes", off, sp.ErrorCode, len(sp.RecordBatches))
					}
					size += int64(len(sp.RecordBatches))
					aborted += int64(len(sp.AbortedTransactions))
					off = endOfBatches(sp.RecordBatches)
				}
			}
			b.SetBytes(size)
			b.ReportMetric(float64(aborted), "aborted/pass")
		})
	}
}
