package kafkaserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// etlSessionOpts are the options of an ETL worker's GroupTransactSession
// of transactional id id, but its brokers: group "etl" consuming "in" at
// read_committed, producing to "out".
func etlSessionOpts(id string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(id), kgo.ClientID(id), kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"),
		kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(3 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
}

// etlWorker is a consume-transform-produce loop of kgo's
// GroupTransactSession: each transaction produces the records it
// consumed to "out" and commits their offsets (TxnOffsetCommit) with
// them. abortEvery > 0 aborts every abortEvery-th transaction instead.
func etlWorker(t *testing.T, addr, id string, abortEvery int, processed *atomic.Int64) (stop func()) {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(addr)}, etlSessionOpts(id)...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for ctx.Err() == nil {
			fs := sess.PollRecords(ctx, 50)
			if ctx.Err() != nil {
				return
			}
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, &kgo.Record{Value: r.Value}) })
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("%s: begin: %v", id, err)
				return
			}
			if err := sess.ProduceSync(ctx, recs...).FirstErr(); err != nil && ctx.Err() == nil {
				t.Logf("%s: produce: %v", id, err)
			}
			n++
			how := kgo.TryCommit
			if abortEvery > 0 && n%abortEvery == 0 {
				how = kgo.TryAbort
			}
			committed, err := sess.End(ctx, how)
			if err != nil && ctx.Err() == nil {
				t.Logf("%s: end: %v", id, err)
			}
			if committed {
				processed.Add(int64(len(recs)))
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			sess.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestGroupTransactSessionETL: kgo's GroupTransactSession (the
// exactly-once consume-transform-produce of issue 15) through a
// rebalance and deliberate aborts: every input record is in the output
// exactly once at read_committed, and the group's committed offsets are
// the ends of the input.
func TestGroupTransactSessionETL(t *testing.T) {
	s := newInProcess(t, logstore.Options{}, groupServerConfig())
	createTopic6(t, s.addr, "in")
	createTopic6(t, s.addr, "out")
	n := 1200
	if testing.Short() {
		n = 600
	}
	produceValues(t, s.addr, "in", "v", 0, n/2)
	var processed atomic.Int64
	stopA := etlWorker(t, s.addr, "etl-a", 2, &processed)
	waitFor(t, "a first transaction committed", func() bool { return processed.Load() > 0 })
	stopB := etlWorker(t, s.addr, "etl-b", 0, &processed)
	produceValues(t, s.addr, "in", "v", n/2, n-n/2)
	waitFor(t, "two members", func() bool { return balanced(t, s.addr, "etl", "etl-a", "etl-b") })
	waitFor(t, "every record processed", func() bool {
		c := fetchCommitted(t, s.addr, "etl")
		var sum int64
		for k, o := range c {
			if k[:3] == "in-" {
				sum += o
			}
		}
		return sum == int64(n)
	})
	stopA()
	stopB()
	if text := scrape(t, s); !strings.Contains(text, `logstore_transactions_total{event="aborted"}`) || strings.Contains(text, `logstore_transactions_total{event="aborted"} 0`) {
		t.Fatalf("no transaction was aborted:\n%s", text)
	}

	// The output at read_committed: every value exactly once.
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addr), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	count := map[string]int{}
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(count) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { count[string(r.Value)]++; total++ })
	}
	// Whatever else is there comes within a few more polls.
	for range 3 {
		c, cc := context.WithTimeout(context.Background(), 300*time.Millisecond)
		cl.PollFetches(c).EachRecord(func(r *kgo.Record) { count[string(r.Value)]++; total++ })
		cc()
	}
	for i := range n {
		if v := fmt.Sprintf("v-%d", i); count[v] != 1 {
			t.Fatalf("%s is in the output %d times (%d records, %d distinct)", v, count[v], total, len(count))
		}
	}
	if total != n {
		t.Fatalf("%d records in the output, want %d", total, n)
	}
}
