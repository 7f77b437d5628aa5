//go:build unix

package kafkaserver_test

// Issue 14's kill -9 scenario: `logstore serve` as a child process (see
// e2e_kill_test.go) with 2 KiB segments, killed with SIGKILL at random
// points of a transactional workload and started again on the same port
// over the same store: half the kills at a random moment while a
// transaction's records are produced, half a few milliseconds after an
// EndTxn request reached the server (while the coordinator writes its
// decision and the markers, or just after). Every transaction must end
// committed in every partition or aborted in every partition; one the
// client saw committed must be committed; the coordinator must finish
// after the restart what it had decided.

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/kafkatest"
)

func TestE2ETxnKillAndRestart(t *testing.T) {
	t.Parallel()
	const topic = "txnkill9"
	p, c := startKillChild(t)
	maxKills := 6
	if testing.Short() {
		maxKills = 3
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	n := e2eTxns()
	// at: the transactions at which a kill is due, while its records
	// are produced (during) or right after its EndTxn request, and how
	// long after the trigger.
	type killPoint struct {
		during bool
		delay  time.Duration
	}
	at := make(map[int]killPoint)
	for len(at) < maxKills {
		i := n/10 + rng.IntN(8*n/10)
		if _, ok := at[i]; ok {
			continue
		}
		kp := killPoint{during: len(at)%2 == 0, delay: time.Duration(rng.IntN(4000)) * time.Microsecond}
		if kp.during {
			kp.delay = time.Duration(rng.IntN(30)) * time.Millisecond
		}
		at[i] = kp
	}
	var (
		killNow  = make(chan time.Duration, maxKills)
		armed    = make(chan time.Duration, maxKills) // kills due at the next EndTxn requests
		wg       sync.WaitGroup
		kills    int
		due      atomic.Int64 // kill points the workload reached
		onEndTxn atomic.Int64
		killErr  error
	)
	p.SetRules(kafkatest.Rules{Request: func(e *kafkatest.Exchange) kafkatest.Action {
		if e.Key == txnKeyEndTxn {
			select {
			case d := <-armed:
				onEndTxn.Add(1)
				killNow <- d
			default:
			}
		}
		return kafkatest.Forward
	}})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := range killNow {
			if killErr != nil {
				continue
			}
			time.Sleep(d)
			if killErr = c.kill(); killErr != nil {
				continue
			}
			kills++
			killErr = c.start()
		}
	}()
	stopKiller := sync.OnceFunc(func() { close(killNow); wg.Wait() })
	t.Cleanup(stopKiller)
	brokers := []string{p.Addr()}
	res := produceTxns(t, brokers, &kafkatest.TxnWorkload{Topic: topic, Transactions: n, Producers: 2, Seed: seed,
		// A restart takes a moment: kgo's requests are retried for
		// about 4 s of refused connections before a transaction's end
		// counts as unanswered.
		Opts: []kgo.Opt{kgo.RequestRetries(200)},
		Before: func(_ context.Context, _ *kgo.Client, i int) {
			if kp, ok := at[i]; ok && kp.during {
				due.Add(1)
				killNow <- kp.delay
			}
		},
		BeforeEnd: func(_ context.Context, _ *kgo.Client, i int) {
			if kp, ok := at[i]; ok && !kp.during {
				due.Add(1)
				armed <- kp.delay
			}
		}})
	p.SetRules(kafkatest.Rules{}) // no more sends on killNow
	stopKiller()
	if killErr != nil {
		t.Fatal(killErr)
	}
	// A producer fenced by a restart (one whose AddPartitionsToTxn the
	// kill had lost) may skip a kill point that waits for its EndTxn:
	// its next transaction can fail to begin (no BeforeEnd), or kgo can
	// end it without an EndTxn (armed, never fired). Every kill during
	// a produce is reached (Before runs for every transaction).
	unfired := len(armed)
	// How often a restart found a decision to finish, or a transaction
	// with no record to abort (the coordinator logs each): informative
	// only, a kill need not land there.
	finished := strings.Count(c.stderr.String(), "finished a decided transaction")
	unrecorded := strings.Count(c.stderr.String(), "a crash left unrecorded")
	t.Logf("%d kills (%d on an EndTxn, %d armed for an EndTxn that never came, %d of %d kill points reached), %d decided transactions finished and %d unrecorded ones aborted at a restart; proxy: %+v",
		kills, onEndTxn.Load(), unfired, due.Load(), maxKills, finished, unrecorded, p.Counts())
	if kills+unfired != int(due.Load()) || kills < maxKills/2 {
		t.Fatalf("%d kills, %d armed and never fired, %d kill points reached; want every reached one, and at least the %d during a produce", kills, unfired, due.Load(), maxKills/2)
	}
	v := consumeTxnsAndVerify(t, brokers, p, res)
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	scanTxnsAndVerify(t, c.spec.Dir, res, v)
}
