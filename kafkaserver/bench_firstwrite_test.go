package kafkaserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// BenchmarkFirstWriteManyPartitions: one Produce request (acks=all, one
// batch each) to 200 partitions never written before, under
// --sync always: what a test suite's first records to new topics cost,
// each partition's first open making its files durable. ms/request is
// the request's time; per-partition-ms that over the partitions.
func BenchmarkFirstWriteManyPartitions(b *testing.B) {
	const parts = 200
	for range b.N {
		b.StopTimer()
		ts := startServer(b, logstore.Options{Sync: logstore.SyncAlways}, Config{})
		ts.createTopic("fresh", parts)
		c := ts.dial()
		req := produceReq(7, -1, "fresh", 0, batchOf(-1, 0, 0, "x"))
		for i := 1; i < parts; i++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(i), batchOf(-1, 0, 0, "x")
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		b.StartTimer()
		began := time.Now()
		resp := c.do(req).(*kmsg.ProduceResponse)
		took := time.Since(began)
		b.StopTimer()
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
		b.ReportMetric(float64(took.Milliseconds()), "ms/request")
		b.ReportMetric(float64(took.Microseconds())/1000/parts, "per-partition-ms")
		_ = fmt.Sprint()
	}
}
