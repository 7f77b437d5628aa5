//go:build unix

package kafkaserver_test

// The exactly-once consume-transform-produce loop of
// TestGroupTransactSessionETL under SIGKILL: `logstore serve` as a child
// process (see e2e_kill_test.go) with 2 KiB segments, two kgo
// GroupTransactSession workers in one group copying "in" to "out" in
// transactions that commit the group's offsets with them, and the server
// killed and started again on the same store a few times while they run:
// some kills a few milliseconds after an EndTxn request reached the
// server, the others while a transaction's records are produced. A
// worker whose session fails closes it and starts a new one with the
// same transactional id, as an application does; the new session fences
// the old one and reads the group's offsets from the server.
// At the end, "out" at read_committed holds every input value exactly
// once, and the group's committed offsets are the ends of "in".

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/kafkatest"
)

// etlKillStats counts what the workers of TestGroupETLKillAndRestart saw.
type etlKillStats struct {
	committed, aborted atomic.Int64 // transactions End reported committed, or aborted without an error
	produceErrs        atomic.Int64 // transactions whose records failed, ended with an abort
	failed             atomic.Int64 // sessions closed after an error of InitProducerId, Begin or End
	sessions           atomic.Int64 // sessions started
}

// etlKillWorker copies "in" to "out" in transactions of the
// GroupTransactSession of transactional id id until stopping is set
// (between transactions) or ctx ends. A session that fails (an error of
// InitProducerId, Begin or End: fenced, or a fatal error after a
// restart) is closed and replaced by a new one of the same id, at most
// maxSessions times.
func etlKillWorker(ctx context.Context, brokers []string, id string, stopping *atomic.Bool, st *etlKillStats, logf func(string, ...any)) error {
	const maxSessions = 40
	failed := false // the last session failed
	for range maxSessions {
		// A failed session may have left a transaction open on the
		// server: the worker stops only after a new session fenced
		// it (and so aborted it).
		if ctx.Err() != nil || (stopping.Load() && !failed) {
			return nil
		}
		// A restart takes a moment: retry refused connections for a
		// few seconds before a request counts as failed.
		opts := append(kafkatest.ClientOpts(brokers...), kgo.RequestRetries(200))
		sess, err := kgo.NewGroupTransactSession(append(opts, etlSessionOpts(id)...)...)
		if err != nil {
			return err
		}
		st.sessions.Add(1)
		// InitProducerId now, not at the first produce: it fences the
		// previous session of id.
		ictx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, _, err = sess.Client().ProducerID(ictx)
		cancel()
		if err != nil {
			err = fmt.Errorf("init producer id: %w", err)
		} else {
			err = etlKillSession(ctx, sess, stopping, st)
		}
		sess.Close()
		if failed = err != nil; !failed || ctx.Err() != nil {
			return nil
		}
		st.failed.Add(1)
		logf("%s: %v; a new session", id, err)
	}
	return fmt.Errorf("%s: %d sessions failed", id, maxSessions)
}

// etlKillSession runs transactions in sess until stopping is set or
// ctx ends (nil), or Begin or End fails (the error).
func etlKillSession(ctx context.Context, sess *kgo.GroupTransactSession, stopping *atomic.Bool, st *etlKillStats) error {
	for !stopping.Load() && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := sess.PollRecords(pctx, 20)
		cancel()
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, &kgo.Record{Value: r.Value}) })
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		ectx, cancel := context.WithTimeout(ctx, 20*time.Second)
		how := kgo.TryCommit
		if err := sess.ProduceSync(ectx, recs...).FirstErr(); err != nil {
			st.produceErrs.Add(1)
			how = kgo.TryAbort
		}
		committed, err := sess.End(ectx, how)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("end: %w", err)
		case committed:
			st.committed.Add(1)
		default:
			st.aborted.Add(1)
		}
	}
	return nil
}

// outCounter counts the values of "out" a read_committed consumer
// through brokers has seen, while it runs.
type outCounter struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (o *outCounter) distinct() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

// run consumes until ctx ends.
func (o *outCounter) run(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(append(kafkatest.ClientOpts(brokers...), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			o.mu.Lock()
			o.seen[string(r.Value)] = true
			o.mu.Unlock()
		})
	}
	return nil
}

func TestGroupETLKillAndRestart(t *testing.T) {
	t.Parallel()
	n, maxKills := 2000, 4
	if testing.Short() {
		n, maxKills = 1000, 2
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	addr := freeAddr(t)
	p := behindProxy(t, addr)
	c := startChild(t, childSpec{Listen: addr, Advertise: p.Addr(), MetricsListen: freeAddr(t), SegmentBytes: 2048,
		// Members whose session ran out while the server was down
		// rejoin after a restart: no wait for more members, and the
		// workers' short session timeout allowed.
		Args: []string{"--group-initial-rebalance-delay", "0", "--group-min-session-timeout", "500ms"}})
	brokers := []string{p.Addr()}
	in := produce(t, brokers, &kafkatest.Workload{Topic: "in", Partitions: 2, Records: n})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, brokers, "out", 2, nil); err != nil {
		t.Fatal(err)
	}

	// Kill k is due once the output holds at[k] values: spread over the
	// first 80% of the run, so that every kill lands while the workers
	// still have work. Even kills come a few milliseconds after the
	// next Produce request reaches the server, odd ones after the next
	// EndTxn request.
	type killPoint struct {
		at       int
		onEndTxn bool
		delay    time.Duration
	}
	var points []killPoint
	for k := range maxKills {
		step := n / (maxKills + 1)
		kp := killPoint{at: k*step + step/2 + rng.IntN(step/2), onEndTxn: k%2 == 1}
		if kp.onEndTxn {
			kp.delay = time.Duration(rng.IntN(4000)) * time.Microsecond
		} else {
			kp.delay = time.Duration(rng.IntN(15000)) * time.Microsecond
		}
		points = append(points, kp)
	}
	const (
		armedNone int32 = iota
		armedProduce
		armedEndTxn
	)
	var armed atomic.Int32
	fired := make(chan struct{}, 1)
	p.SetRules(kafkatest.Rules{Request: func(e *kafkatest.Exchange) kafkatest.Action {
		if (e.Key == 0 && armed.CompareAndSwap(armedProduce, armedNone)) ||
			(e.Key == txnKeyEndTxn && armed.CompareAndSwap(armedEndTxn, armedNone)) {
			fired <- struct{}{}
		}
		return kafkatest.Forward
	}})

	out := &outCounter{seen: map[string]bool{}}
	cctx, stopCounter := context.WithCancel(ctx)
	var counterWG sync.WaitGroup
	counterWG.Add(1)
	go func() {
		defer counterWG.Done()
		if err := out.run(cctx, brokers); err != nil {
			t.Errorf("the output's consumer: %v", err)
		}
	}()
	defer func() { stopCounter(); counterWG.Wait() }()

	var (
		stopping atomic.Bool
		st       etlKillStats
		workers  sync.WaitGroup
	)
	stopWorkers := sync.OnceFunc(func() { stopping.Store(true); workers.Wait() })
	defer func() {
		if t.Failed() {
			cancel() // no need to end the transactions cleanly
		}
		stopWorkers()
	}()
	for _, id := range []string{"etl-kill-a", "etl-kill-b"} {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := etlKillWorker(ctx, brokers, id, &stopping, &st, t.Logf); err != nil {
				t.Error(err)
			}
		}()
	}

	// The killer: at each point, arm the rule, wait for it to fire,
	// kill after the point's delay, start again.
	var (
		killer     sync.WaitGroup
		stopKiller = make(chan struct{})
		kills      int
		kinds      [2]int // kills on a Produce, on an EndTxn
		killErr    error
		killFailed atomic.Bool // killErr is set
	)
	killer.Add(1)
	go func() {
		defer killer.Done()
		defer func() { killFailed.Store(killErr != nil) }()
		for k, kp := range points {
			for out.distinct() < kp.at {
				select {
				case <-stopKiller:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
			what := "Produce"
			if kp.onEndTxn {
				what = "EndTxn"
				armed.Store(armedEndTxn)
			} else {
				armed.Store(armedProduce)
			}
			select {
			case <-fired:
			case <-stopKiller:
				armed.Store(armedNone)
				return
			}
			time.Sleep(kp.delay)
			if killErr = c.kill(); killErr != nil {
				return
			}
			kills++
			if kp.onEndTxn {
				kinds[1]++
			} else {
				kinds[0]++
			}
			t.Logf("kill %d: %v after a %s request, the output holding %d values", k+1, kp.delay, what, out.distinct())
			if killErr = c.start(); killErr != nil {
				return
			}
		}
	}()
	stopKill := sync.OnceFunc(func() { close(stopKiller); killer.Wait(); p.SetRules(kafkatest.Rules{}) })
	defer stopKill()

	// Until the output holds every value, or 60 s.
	deadline := time.Now().Add(60 * time.Second)
	for out.distinct() < n && time.Now().Before(deadline) && !killFailed.Load() {
		time.Sleep(20 * time.Millisecond)
	}
	got := out.distinct()
	stopKill()
	if killErr != nil {
		t.Fatal(killErr)
	}
	stopWorkers()
	stopCounter()
	counterWG.Wait()
	stderr := c.stderr.String()
	t.Logf("%d kills (%d on a Produce, %d on an EndTxn); transactions: %d committed, %d aborted (%d after a failed produce); %d sessions, %d closed after an error; the server finished %d decided transactions and aborted %d unrecorded ones at a restart; proxy: %+v",
		kills, kinds[0], kinds[1], st.committed.Load(), st.aborted.Load(), st.produceErrs.Load(), st.sessions.Load(), st.failed.Load(),
		strings.Count(stderr, "finished a decided transaction"), strings.Count(stderr, "a crash left unrecorded"), p.Counts())
	if got < n {
		t.Fatalf("after 60 s the read_committed output holds %d of the %d values", got, n)
	}
	if kills != maxKills {
		t.Fatalf("%d kills, want %d", kills, maxKills)
	}

	// "out" at read_committed: every input value exactly once.
	entries, err := kafkatest.ConsumeTxns(ctx, brokers, "out", 2, kgo.ReadCommitted())
	if err != nil {
		t.Fatal(err)
	}
	where := map[string][]kafkatest.Entry{}
	total := 0
	for _, e := range entries {
		if !e.Control {
			where[e.Value] = append(where[e.Value], e)
			total++
		}
	}
	bad := 0
	for _, r := range in.Records {
		if es := where[r.Value]; len(es) != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("%s is in the output %d times: %+v", r.Value, len(es), es)
			}
		}
	}
	if bad > 0 || total != n {
		t.Fatalf("%d values not exactly once; %d records in the output, %d distinct, want %d", bad, total, len(where), n)
	}

	// The group's committed offsets are the ends of "in".
	ends, err := kafkatest.ListOffsetsAt(ctx, brokers, "in", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	committed := fetchCommitted(t, p.Addr(), "etl")
	for pn, end := range ends {
		if got := committed[fmt.Sprintf("in-%d", pn)]; got != end {
			t.Errorf("the group's committed offset of in-%d is %d, want its end %d", pn, got, end)
		}
	}
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
}
