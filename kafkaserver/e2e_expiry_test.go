package kafkaserver_test

// Scenario 8 of issue 13: producer expiry of a second.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/metrics"
)

// TestE2EProducerExpiry: the store forgets a producer idle for a second.
// Halfway through, kgo flushes and stays idle for 2.5 s; its next batch
// on each partition has a sequence above 0 from a producer the store no
// longer knows, and gets 59 UNKNOWN_PRODUCER_ID. kgo (told to go on
// after data loss rather than stop) bumps its epoch, sends the batch again
// from sequence 0, and nothing is written twice.
func TestE2EProducerExpiry(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{ProducerExpiry: time.Second}, kafkaserver.Config{})
	n := e2eRecords()
	w := &kafkatest.Workload{
		Topic: "expiry", Records: n, MaxBuffered: 16,
		OnDataLoss: func(string, int32) {},
		Before: func(ctx context.Context, cl *kgo.Client, i int) {
			if i != n/2 {
				return
			}
			if err := cl.Flush(ctx); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(2500 * time.Millisecond):
			}
		},
	}
	brokers := []string{p.Addr()}
	res := produce(t, brokers, w)
	c := p.Counts()
	t.Logf("kgo saw data loss %d times; proxy: %+v", res.DataLoss, c)
	if c.ProduceErrors[59] == 0 {
		t.Fatalf("no Produce answer was 59 UNKNOWN_PRODUCER_ID: %v", c.ProduceErrors)
	}
	if got := s.outcome(metrics.OutcomeUnknownProducer); got != float64(c.ProduceErrors[59]) {
		t.Fatalf("the server counted %v unknown-producer refusals, the proxy saw %d answers of 59", got, c.ProduceErrors[59])
	}
	if c.ProduceErrors[45] != 0 {
		t.Fatalf("%d answers were 45 OUT_OF_ORDER_SEQUENCE_NUMBER, not 59", c.ProduceErrors[45])
	}
	first, last := res.Records[0], res.Records[n-1]
	if first.ProducerID == last.ProducerID && first.Epoch == last.Epoch {
		t.Fatalf("kgo kept producer %d epoch %d after the 59", first.ProducerID, first.Epoch)
	}
	t.Logf("producer %d epoch %d became producer %d epoch %d", first.ProducerID, first.Epoch, last.ProducerID, last.Epoch)
	checkBoth(t, s, brokers, p, res)
}
