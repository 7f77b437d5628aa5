package kafkaserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logstore/logstore"
)

// TestKgoProduceConsume: franz-go's kgo, idempotent with acks=all, sends
// records with unique values over 3 partitions; every value comes back
// exactly once, at the offset kgo was acknowledged, in production order,
// by consuming and by reading the store; under both sync modes and
// with kgo capped at Kafka 2.1, 2.8 and 3.9's versions too.
func TestKgoProduceConsume(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     logstore.SyncMode
		versions *kversion.Versions
	}{
		{"always/stable", logstore.SyncAlways, kversion.Stable()},
		{"never/stable", logstore.SyncNever, kversion.Stable()},
		{"always/2.1", logstore.SyncAlways, kversion.V2_1_0()},
		{"always/2.8", logstore.SyncAlways, kversion.V2_8_0()},
		{"always/3.9", logstore.SyncAlways, kversion.V3_9_0()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			ts := startServer(t, logstore.Options{Sync: mode}, Config{})
			ts.createTopic("kgo", 3)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			prod, err := kgo.NewClient(
				kgo.SeedBrokers(ts.addr),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.StopProducerOnDataLossDetected(),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(0),
				kgo.MaxVersions(tc.versions),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			const n = 600
			type at struct {
				partition int32
				offset    int64
			}
			acked := make(map[string]at, n)
			results := make(chan *kgo.Record, n)
			for i := range n {
				r := &kgo.Record{Topic: "kgo", Partition: int32(i % 3), Value: fmt.Appendf(nil, "value-%05d", i)}
				prod.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce %s: %v", r.Value, err)
					}
					results <- r
				})
			}
			for range n {
				r := <-results
				acked[string(r.Value)] = at{r.Partition, r.Offset}
				if r.ProducerID < 0 {
					t.Errorf("record %s produced without a producer id", r.Value)
				}
			}

			cons, err := kgo.NewClient(
				kgo.SeedBrokers(ts.addr),
				kgo.MaxVersions(tc.versions),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kgo": {
					0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(),
				}}),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			seen := make(map[string]bool, n)
			last := map[int32]int{}
			for len(seen) < n {
				fs := cons.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
				}
				fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) {
					v := string(r.Value)
					if seen[v] {
						t.Fatalf("value %s consumed twice", v)
					}
					seen[v] = true
					if a := acked[v]; a.partition != r.Partition || a.offset != r.Offset {
						t.Fatalf("value %s at %d/%d, acknowledged at %d/%d", v, r.Partition, r.Offset, a.partition, a.offset)
					}
					var i int
					fmt.Sscanf(v, "value-%d", &i)
					if prev, ok := last[r.Partition]; ok && i <= prev {
						t.Fatalf("partition %d: %s after value-%05d", r.Partition, v, prev)
					}
					last[r.Partition] = i
				})
			}
			for p := int32(0); p < 3; p++ {
				part, err := ts.store.Partition("kgo", p)
				if err != nil {
					t.Fatal(err)
				}
				if end := part.EndOffset(); end != n/3 {
					t.Fatalf("partition %d ends at %d, want %d", p, end, n/3)
				}
			}
		})
	}
}
