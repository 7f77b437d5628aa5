package txncoord

import (
	"errors"
	"strings"
	"testing"
)

// The package's tests run in strict mode: an invalid transition panics,
// so every flow they drive also asserts that the coordinator never
// attempts one.
func init() { strictTransitions.Store(true) }

// SetStrictTransitions turns strict mode on or off, for a test that
// wants the error of an invalid transition rather than the panic; the
// returned func restores it.
func SetStrictTransitions(on bool) (restore func()) {
	old := strictTransitions.Swap(on)
	return func() { strictTransitions.Store(old) }
}

// validMoves is the state machine of the package doc, written out
// again move by move, apart from the table.
var validMoves = map[[2]state]bool{
	// InitProducerID.
	{stateEmpty, stateEmpty}:          true,
	{stateCompleteCommit, stateEmpty}: true,
	{stateCompleteAbort, stateEmpty}:  true,
	// AddPartitions.
	{stateEmpty, stateOngoing}:          true,
	{stateOngoing, stateOngoing}:        true,
	{stateCompleteCommit, stateOngoing}: true,
	{stateCompleteAbort, stateOngoing}:  true,
	// EndTxn, InitProducerID fencing, the timeout, reconcile.
	{stateOngoing, statePrepareCommit}:       true,
	{stateOngoing, statePrepareAbort}:        true,
	{stateEmpty, statePrepareAbort}:          true,
	{stateCompleteCommit, statePrepareAbort}: true,
	{stateCompleteAbort, statePrepareAbort}:  true,
	// The markers written.
	{statePrepareCommit, stateCompleteCommit}: true,
	{statePrepareAbort, stateCompleteAbort}:   true,
	// Expiration.
	{stateEmpty, stateDead}:          true,
	{stateCompleteCommit, stateDead}: true,
	{stateCompleteAbort, stateDead}:  true,
}

// TestTransitionTable checks every pair of states (and one out of
// range) against validMoves: each valid move is accepted, every other
// refused with an error that matches ErrInvalidTransition and names
// the id and both states.
func TestTransitionTable(t *testing.T) {
	for from := range numStates + 1 {
		for to := range numStates + 1 {
			want := validMoves[[2]state{from, to}]
			if got := from.canMoveTo(to); got != want {
				t.Errorf("%s -> %s: canMoveTo %v, want %v", from, to, got, want)
			}
			err := transitionError("t", from, to)
			switch {
			case want && err != nil:
				t.Errorf("%s -> %s refused: %v", from, to, err)
			case !want && !errors.Is(err, ErrInvalidTransition):
				t.Errorf("%s -> %s: %v, want ErrInvalidTransition", from, to, err)
			case !want && !strings.Contains(err.Error(), `"t" from `+from.String()+" to "+to.String()):
				t.Errorf("%s -> %s: the error does not name the move: %v", from, to, err)
			}
		}
	}
}

// TestInvalidTransitionSamples names a few of the moves refused, the
// ones a bug would most likely attempt.
func TestInvalidTransitionSamples(t *testing.T) {
	for _, m := range [][2]state{
		{statePrepareCommit, statePrepareAbort},  // the other decision
		{statePrepareAbort, stateCompleteCommit}, // the wrong completion
		{stateOngoing, stateCompleteCommit},      // markers without a decision
		{stateEmpty, statePrepareCommit},         // committing nothing begun
		{statePrepareCommit, stateOngoing},       // AddPartitions while deciding
		{statePrepareAbort, stateEmpty},          // InitProducerID while deciding
		{stateOngoing, stateDead},                // expiring an ongoing transaction
		{statePrepareCommit, stateDead},          // expiring a decision
		{stateDead, stateEmpty},                  // nothing moves out of Dead
		{stateDead, stateOngoing},
		{stateDead, statePrepareAbort},
		{stateCompleteCommit, stateCompleteAbort},
	} {
		if err := transitionError("t", m[0], m[1]); !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("%s -> %s: %v, want ErrInvalidTransition", m[0], m[1], err)
		}
	}
}

// TestStrictTransitions: in strict mode checkTransition panics with the
// error; otherwise it returns it.
func TestStrictTransitions(t *testing.T) {
	if err := checkTransition("t", stateOngoing, statePrepareCommit); err != nil {
		t.Fatalf("a valid move in strict mode: %v", err)
	}
	func() {
		defer func() {
			err, _ := recover().(error)
			if !errors.Is(err, ErrInvalidTransition) {
				t.Fatalf("strict mode: recovered %v, want ErrInvalidTransition", err)
			}
		}()
		_ = checkTransition("t", stateEmpty, statePrepareCommit)
		t.Fatal("no panic in strict mode")
	}()
	restore := SetStrictTransitions(false)
	defer restore()
	if err := checkTransition("t", stateEmpty, statePrepareCommit); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("not strict: %v, want ErrInvalidTransition", err)
	}
}
