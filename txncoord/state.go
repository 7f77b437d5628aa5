package txncoord

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrInvalidTransition: the coordinator was about to move a
// transactional id between two states that validPrevious does not
// allow. It never happens with a file this coordinator wrote: it means
// a bug, or a record it never writes (a stored Dead). Nothing is
// written then; the server answers it as any other failure.
var ErrInvalidTransition = errors.New("txncoord: invalid state transition")

// stateSet is a set of states, one bit each (numStates is 7).
type stateSet uint8

func setOf(states ...state) stateSet {
	var s stateSet
	for _, st := range states {
		s |= 1 << st
	}
	return s
}

func (s stateSet) has(st state) bool { return st < numStates && s&(1<<st) != 0 }

// validPrevious is the one table of the state machine, as Kafka's
// TransactionState.validPreviousStates: for each state, the states a
// transactional id may move to it from. Every change of an id's state
// is checked against it (checkTransition) before its record is
// written. A retry of a decision (its markers written again, its
// PrepareX kept) is not a move; neither is the creation of a new id in
// Empty.
//
// Kafka's PrepareEpochFence is not a state here: fencing an Ongoing
// transaction moves it straight to PrepareAbort at the bumped epoch
// (fenceAbort), since the record written is that PrepareAbort.
var validPrevious = [numStates]stateSet{
	// InitProducerID: a new epoch or producer id, no transaction.
	stateEmpty: setOf(stateEmpty, stateCompleteCommit, stateCompleteAbort),
	// AddPartitions: the first partition begins a transaction, the
	// next ones join it.
	stateOngoing: setOf(stateEmpty, stateOngoing, stateCompleteCommit, stateCompleteAbort),
	// EndTxn(commit).
	statePrepareCommit: setOf(stateOngoing),
	// EndTxn(abort), InitProducerID fencing the producer, the timeout;
	// and from no transaction ongoing, the abort at Open of data a
	// crash left unrecorded (reconcile), moves Kafka's transactions
	// v2 (KIP-890) allows too.
	statePrepareAbort: setOf(stateOngoing, stateEmpty, stateCompleteCommit, stateCompleteAbort),
	// The decision's markers are written.
	stateCompleteCommit: setOf(statePrepareCommit),
	stateCompleteAbort:  setOf(statePrepareAbort),
	// Expiration of an idle id: its tombstone. Nothing moves out of
	// Dead: the id is forgotten.
	stateDead: setOf(stateEmpty, stateCompleteCommit, stateCompleteAbort),
}

// canMoveTo reports whether validPrevious allows the move from s to to.
func (s state) canMoveTo(to state) bool {
	return to < numStates && validPrevious[to].has(s)
}

// onInvalidTransition, when set (by the package's tests), is called
// with the error of every invalid move checkTransition refuses: the
// tests make it end the test binary, so every test also asserts that
// the coordinator never attempts one. It is called where the move was
// refused, maybe with c.mu held (so it must not call the Coordinator,
// nor panic: a test's cleanup would then wait for c.mu).
var onInvalidTransition atomic.Pointer[func(error)]

// transitionError is nil when id may move from from to to, and else an
// error that matches ErrInvalidTransition.
func transitionError(id string, from, to state) error {
	if from.canMoveTo(to) {
		return nil
	}
	return fmt.Errorf("%w: transactional id %q from %s to %s", ErrInvalidTransition, id, from, to)
}

// checkTransition is transitionError, reported to onInvalidTransition.
func checkTransition(id string, from, to state) error {
	err := transitionError(id, from, to)
	if err != nil {
		if hook := onInvalidTransition.Load(); hook != nil {
			(*hook)(err)
		}
	}
	return err
}
