package kafkaserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/kafkaserver"
)

// TestCreatePartitionsProducerPicksUp: a kgo producer writing to a topic
// that grows from 2 to 5 partitions (kadm UpdatePartitions) starts using
// the new ones once its metadata refreshes; a consumer reads every record
// where it was acknowledged, and after a restart the topic still has 5
// partitions and every record.
func TestCreatePartitionsProducerPicksUp(t *testing.T) {
	s := newInProcess(t, logstore.Options{}, kafkaserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newAdmin := func() *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	adm := newAdmin()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic("grow"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MetadataMaxAge(200*time.Millisecond), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	type at struct {
		partition int32
		offset    int64
	}
	acked := map[string]at{}
	send := func(i int) int32 {
		t.Helper()
		v := fmt.Sprintf("v%d", i)
		r, err := prod.ProduceSync(ctx, kgo.StringRecord(v)).First()
		if err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		acked[v] = at{r.Partition, r.Offset}
		return r.Partition
	}
	n := 0
	for ; n < 4; n++ {
		if p := send(n); p > 1 {
			t.Fatalf("partition %d of a topic of 2", p)
		}
	}
	if rs, err := adm.UpdatePartitions(ctx, 5, "grow"); err != nil || rs["grow"].Err != nil {
		t.Fatalf("UpdatePartitions(5): %v, %+v", err, rs)
	}
	// Bounded: 500 records, 20ms apart, against a 200ms metadata max age.
	used := map[int32]bool{}
	for ; n < 500 && len(used) < 5; n++ {
		used[send(n)] = true
		time.Sleep(20 * time.Millisecond)
	}
	if len(used) < 5 {
		t.Fatalf("after %d records the producer used partitions %v, not all 5", n, used)
	}

	consumeAll := func(what string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ConsumeTopics("grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		seen := map[string]at{}
		for len(seen) < len(acked) && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = at{r.Partition, r.Offset} })
		}
		for v, want := range acked {
			if got, ok := seen[v]; !ok || got != want {
				t.Fatalf("%s: %s at %+v (%v), acknowledged at %+v", what, v, got, ok, want)
			}
		}
		if len(seen) != len(acked) {
			t.Fatalf("%s: %d records, %d acknowledged", what, len(seen), len(acked))
		}
	}
	consumeAll("before the restart")

	prod.Close()
	if err := s.restart(nil); err != nil {
		t.Fatal(err)
	}
	adm = newAdmin()
	td, err := adm.ListTopics(ctx, "grow")
	if err != nil || len(td["grow"].Partitions) != 5 {
		t.Fatalf("after the restart: %v, %+v", err, td)
	}
	consumeAll("after the restart")
}
