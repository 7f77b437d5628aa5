package txncoord_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/logstore/logstore/txncoord"
)

// TestConcurrentProducers: producers of many ids run transactions at
// once (their writes share commits), two producers fight over one id,
// and every answer is one the state machine allows; afterwards every id
// is in a final state and a reopen shows the same.
func TestConcurrentProducers(t *testing.T) {
	e := newEnv(t)
	commits := 0
	var cmu sync.Mutex
	e.cfg.OnCommit = func(error) { cmu.Lock(); commits++; cmu.Unlock() }
	e.reopen()
	const ids, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, 3*ids)
	run := func(id string, tps []txncoord.TopicPartition) {
		defer wg.Done()
		for r := range rounds {
			pid, epoch, err := e.c.InitProducerID(id, testTimeout, -1, -1)
			if errors.Is(err, txncoord.ErrConcurrentTransactions) {
				continue
			}
			if err != nil {
				errs <- err
				return
			}
			err = e.c.AddPartitions(id, pid, epoch, tps)
			if err == nil {
				for _, tp := range tps {
					if rel, err := e.c.BeginProduce(id, pid, epoch, tp); err == nil {
						rel()
					}
				}
				err = e.c.EndTxn(id, pid, epoch, r%2 == 0)
			}
			// The fight over "shared" fences, interrupts and refuses.
			if err != nil && !errors.Is(err, txncoord.ErrProducerFenced) && !errors.Is(err, txncoord.ErrConcurrentTransactions) && !errors.Is(err, txncoord.ErrInvalidTxnState) {
				errs <- fmt.Errorf("%s round %d: %w", id, r, err)
				return
			}
		}
	}
	for i := range ids {
		wg.Add(1)
		go run(fmt.Sprintf("id-%d", i), []txncoord.TopicPartition{tpA0, {Topic: "p", Partition: int32(i)}})
	}
	wg.Add(2)
	go run("shared", []txncoord.TopicPartition{tpB0})
	go run("shared", []txncoord.TopicPartition{tpA1})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	before := e.c.List()
	for _, tx := range before {
		switch tx.State {
		case "Empty", "CompleteCommit", "CompleteAbort", "Ongoing":
		default:
			t.Errorf("%s left in %s", tx.TransactionalID, tx.State)
		}
	}
	cmu.Lock()
	t.Logf("%d commits of transactions.db for %d ids x %d rounds", commits, ids+1, rounds)
	cmu.Unlock()
	e.reopen()
	after := e.c.List()
	if len(after) != len(before) {
		t.Fatalf("after reopen %d ids, were %d", len(after), len(before))
	}
	for i := range after {
		if !equalTxn(after[i], before[i]) {
			t.Errorf("after reopen %+v, was %+v", after[i], before[i])
		}
	}
}
