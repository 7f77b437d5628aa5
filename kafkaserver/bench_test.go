package kafkaserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// BenchmarkKgoProduce: kgo, idempotent, acks=all, 1 KiB records in
// batches of up to 16 KiB, or 16 KiB records one per batch, to one
// partition, over loopback. Compare with the root's BenchmarkAppend
// (in process, 16 KiB batches).
func BenchmarkKgoProduce(b *testing.B) {
	for _, mode := range []logstore.SyncMode{logstore.SyncNever, logstore.SyncAlways} {
		for _, size := range []int{1 << 10, 16 << 10} {
			b.Run(fmt.Sprintf("sync=%s/record=%dKiB", mode, size>>10), func(b *testing.B) {
				benchKgoProduce(b, mode, size)
			})
		}
	}
}

func benchKgoProduce(b *testing.B, mode logstore.SyncMode, size int) {
	ts := startServer(b, logstore.Options{Sync: mode}, Config{})
	ts.createTopic("bench", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("bench"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(16<<10+512),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	value := make([]byte, size)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkKgoConsume: kgo reads 64 MiB of 16 KiB batches from the
// start of one partition over loopback.
func BenchmarkKgoConsume(b *testing.B) {
	ts, p, batch := zeroBatchPartition(b, "bench")
	const total = 64 << 20
	n := 0
	for n < total {
		if _, err := p.Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
	}
	records := int64(n / len(batch) * zeroBatchRecords)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for range b.N {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			b.Fatal(err)
		}
		var got int64
		for got < records {
			fs := cl.PollFetches(context.Background())
			fs.EachError(func(_ string, _ int32, err error) { b.Fatal(err) })
			got += int64(fs.NumRecords())
		}
		cl.Close()
	}
}
