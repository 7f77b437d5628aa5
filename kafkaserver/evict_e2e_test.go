package kafkaserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// TestProduceConsumeBeyondOpenPartitions: a server whose store keeps 16
// partitions open at most serves an idempotent kgo producer writing to
// each of 200 partitions and a consumer reading them all back: the
// partitions are closed and reopened under them (evicted as they go
// idle, ErrTooManyOpenPartitions answered as 56 while all are in use,
// which kgo retries), every record arrives once.
func TestProduceConsumeBeyondOpenPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("200 partitions opened and closed over and over")
	}
	var evictions atomic.Int64
	ts := startServer(t, logstore.Options{Sync: logstore.SyncNever, MaxOpenPartitions: 16, EvictIdle: 50 * time.Millisecond,
		Events: &logstore.Events{PartitionEvict: func(logstore.PartitionID, error) { evictions.Add(1) }}}, Config{})
	const parts, perPart = 200, 3
	ts.createTopic("wide", parts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("wide"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var failed atomic.Int64
	for r := range perPart {
		for i := range parts {
			p.Produce(ctx, &kgo.Record{Partition: int32(i), Value: fmt.Appendf(nil, "%d-%d", i, r)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					t.Errorf("produce: %v", err)
				}
			})
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(ts.store.OpenPartitions()); n > 16 {
		t.Errorf("%d partitions open, the bound is 16", n)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("wide"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[string]int{}
	for len(seen) < parts*perPart && ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s read %d times", v, n)
		}
	}
	if len(seen) != parts*perPart {
		t.Fatalf("read %d of %d records", len(seen), parts*perPart)
	}
	t.Logf("%d evictions", evictions.Load())
	if evictions.Load() == 0 {
		t.Error("no partition was evicted")
	}
}
