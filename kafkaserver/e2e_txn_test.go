package kafkaserver_test

// Issue 14's wire tests of transactions: kgo transactional producers
// (TransactionalID, BeginTransaction, EndTransaction) against the server,
// over 3 partitions, with commits and aborts by a seeded plan; EndTxn and
// Produce answers lost; a graceful restart between the produce and the
// EndTxn. After each run, the checks of internal/kafkatest: a
// read_uncommitted and a read_committed consumer (every committed record
// exactly once, no aborted one under read_committed, both under
// read_uncommitted, every marker), then the server stopped, the store's
// check (every .txnindex equal to its rebuild), a scan of every record
// and marker agreeing with the consumers, the .txnindex ranges by
// Kafka's rules and Kafka's dump of the markers. The SIGKILL scenario is
// in e2e_txn_kill_test.go.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
)

// e2eTxns is the number of transactions of a run: short mode shrinks it.
func e2eTxns() int {
	if testing.Short() {
		return 30
	}
	return 90
}

// txnKeyEndTxn is EndTxn's API key.
const txnKeyEndTxn = 26

// produceTxns runs w against brokers (creating its topic of 3
// partitions), bounded by 2 minutes, and fails the test when a producer
// stopped early or could not make sure nothing was left open.
func produceTxns(t *testing.T, brokers []string, w *kafkatest.TxnWorkload) *kafkatest.TxnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w.Brokers = brokers
	w.CreateTopic = true
	if w.Transactions == 0 {
		w.Transactions = e2eTxns()
	}
	res, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions: %d committed, %d aborted, %d uncertain; %d clients replaced", len(res.Txns), res.Committed, res.Aborted, res.Uncertain, res.Restarts)
	if res.Err != nil {
		t.Fatalf("the workload stopped: %v", res.Err)
	}
	return res
}

// consumeTxnsAndVerify checks res through brokers with both consumers,
// with no fault rules on p (when set), and returns their verdict.
func consumeTxnsAndVerify(t *testing.T, brokers []string, p *kafkatest.Proxy, res *kafkatest.TxnResult) *kafkatest.TxnVerdict {
	t.Helper()
	if p != nil {
		p.SetRules(kafkatest.Rules{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := kafkatest.ConsumeTxnsAndVerify(ctx, brokers, res)
	if err != nil {
		t.Fatalf("consumed: %v", err)
	}
	t.Logf("consumers: %d committed, %d aborted, uncertain: %d committed, %d aborted; markers per partition: %d %d %d, %d ending nothing",
		v.Committed, v.Aborted, v.UncertainCommitted, v.UncertainAborted, len(v.Markers[0]), len(v.Markers[1]), len(v.Markers[2]), v.SpareMarkers)
	return v
}

// scanTxnsAndVerify checks res against the store in dir (no server may
// have it open), and the scan against the consumers' verdict v.
func scanTxnsAndVerify(t *testing.T, dir string, res *kafkatest.TxnResult, v *kafkatest.TxnVerdict) {
	t.Helper()
	if _, err := kafkatest.ScanTxnsAndVerify(dir, res, v); err != nil {
		t.Fatalf("scanned: %v", err)
	}
}

// checkTxnsBoth consumes through the running server, then stops it and
// checks its store.
func checkTxnsBoth(t *testing.T, s *inProcess, brokers []string, p *kafkatest.Proxy, res *kafkatest.TxnResult) {
	t.Helper()
	v := consumeTxnsAndVerify(t, brokers, p, res)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	scanTxnsAndVerify(t, s.dir, res, v)
}

// TestE2ETxnAlternating: transactions alternately committed and aborted
// over 3 partitions, two producers interleaving theirs, straight to the
// server; every outcome must be the one asked for.
func TestE2ETxnAlternating(t *testing.T) {
	t.Parallel()
	s := newInProcess(t, logstore.Options{SegmentBytes: 4096}, kafkaserver.Config{})
	brokers := []string{s.addr}
	res := produceTxns(t, brokers, &kafkatest.TxnWorkload{Topic: "alternating", Producers: 2, Seed: 1,
		Commit: func(t int) bool { return t%2 == 0 }})
	if res.Committed != (len(res.Txns)+1)/2 || res.Aborted != len(res.Txns)/2 {
		t.Fatalf("%d committed, %d aborted of %d, want every even one committed and every odd one aborted", res.Committed, res.Aborted, len(res.Txns))
	}
	checkTxnsBoth(t, s, brokers, nil, res)
}

// counting wraps rule and counts, in n, the exchanges of API key key it
// did not forward.
func counting(n *atomic.Int64, key int16, rule func(*kafkatest.Exchange) kafkatest.Action) func(*kafkatest.Exchange) kafkatest.Action {
	return func(e *kafkatest.Exchange) kafkatest.Action {
		a := rule(e)
		if a != kafkatest.Forward && e.Key == key {
			n.Add(1)
		}
		return a
	}
}

// TestE2ETxnEndTxnAnswersLost: kgo's retries are capped at 3, so a
// transaction's end gets four attempts, and the EndTxn requests meet, by
// their number N through the proxy (mod 15):
//   - 1-4: cut before the server sees them (the connection closed): a
//     transaction whose every attempt is cut is uncertain to the client,
//     and the server must abort it whole when kgo's TryAbort reloads the
//     producer id;
//   - 5-9: the server decides, writes its markers and answers, and the
//     answer is swallowed with the connection closed: uncertain again,
//     and the log must hold the commit the server made, whole;
//   - the rest are answered, retries of a decision included (a retry
//     with the same decision succeeds).
//
// Every 7th Produce answer is swallowed too, so transactional batches are
// retried and answered as duplicates.
func TestE2ETxnEndTxnAnswersLost(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{}, kafkaserver.Config{})
	var endCut, endDropped, produceDropped atomic.Int64
	cut := func(e *kafkatest.Exchange) kafkatest.Action {
		if e.Key == txnKeyEndTxn && e.N%15 >= 1 && e.N%15 <= 4 {
			return kafkatest.CloseBeforeForward
		}
		return kafkatest.Forward
	}
	drop := func(e *kafkatest.Exchange) kafkatest.Action {
		if e.Key == txnKeyEndTxn && e.N%15 >= 5 && e.N%15 <= 9 {
			return kafkatest.DropAndClose
		}
		return kafkatest.EveryNth(0, 7, kafkatest.DropAndClose)(e)
	}
	p.SetRules(kafkatest.Rules{
		Request:  counting(&endCut, txnKeyEndTxn, cut),
		Response: counting(&endDropped, txnKeyEndTxn, counting(&produceDropped, 0, drop)),
	})
	brokers := []string{p.Addr()}
	res := produceTxns(t, brokers, &kafkatest.TxnWorkload{Topic: "endlost", Seed: 2, Opts: []kgo.Opt{kgo.RequestRetries(3)}})
	c := p.Counts()
	t.Logf("%d EndTxn requests cut, %d EndTxn and %d Produce answers dropped; proxy: %+v", endCut.Load(), endDropped.Load(), produceDropped.Load(), c)
	if endCut.Load() == 0 || endDropped.Load() == 0 || c.ProduceDropped == 0 {
		t.Fatal("no EndTxn request cut, or no EndTxn or Produce answer dropped")
	}
	if c.ProduceRepeats == 0 {
		t.Fatal("no retried transactional batch was answered as a duplicate")
	}
	v := consumeTxnsAndVerify(t, brokers, p, res)
	if v.UncertainCommitted == 0 || v.UncertainAborted == 0 {
		t.Fatalf("uncertain transactions: %d found committed, %d aborted: want both kinds", v.UncertainCommitted, v.UncertainAborted)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	scanTxnsAndVerify(t, s.dir, res, v)
}

// TestE2ETxnEndTxnAnswerSilent: two EndTxn answers vanish on connections
// that stay open; kgo's request timeout gives up on them and retries on
// a new connection, where the same decision is answered.
func TestE2ETxnEndTxnAnswerSilent(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{}, kafkaserver.Config{})
	p.SetRules(kafkatest.Rules{Response: kafkatest.Limit(2, kafkatest.EveryNth(txnKeyEndTxn, 4, kafkatest.DropSilently))})
	brokers := []string{p.Addr()}
	res := produceTxns(t, brokers, &kafkatest.TxnWorkload{Topic: "endsilent", Transactions: 20, Seed: 3})
	if c := p.Counts(); c.DroppedSilently != 2 {
		t.Fatalf("%d answers dropped silently, want 2: %+v", c.DroppedSilently, c)
	}
	checkTxnsBoth(t, s, brokers, p, res)
}

// TestE2ETxnRestartBeforeEnd: every 4th transaction, once its records
// are acknowledged and before its EndTxn, the server is shut down, its
// store and coordinator closed and opened again, and the server started
// on the same port: the open transaction must survive the restart, and
// the EndTxn sent to the new server end it in every partition.
func TestE2ETxnRestartBeforeEnd(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{SegmentBytes: 4096}, kafkaserver.Config{})
	brokers := []string{p.Addr()}
	restarts := 0
	res := produceTxns(t, brokers, &kafkatest.TxnWorkload{Topic: "restartend", Seed: 4,
		BeforeEnd: func(_ context.Context, _ *kgo.Client, i int) {
			if i%4 != 1 {
				return
			}
			if err := s.restart(nil); err != nil {
				t.Errorf("restart: %v", err)
				return
			}
			restarts++
		}})
	if restarts == 0 || s.starts != restarts+1 {
		t.Fatalf("%d restarts, %d starts", restarts, s.starts)
	}
	// The server had nothing to lose: every end is known, none failed.
	if res.Uncertain != 0 || res.Committed+res.Aborted != len(res.Txns) {
		t.Fatalf("%d uncertain ends", res.Uncertain)
	}
	for _, tx := range res.Txns {
		if tx.Err != nil {
			t.Fatalf("transaction %d: %v", tx.Index, tx.Err)
		}
	}
	checkTxnsBoth(t, s, brokers, p, res)
}
