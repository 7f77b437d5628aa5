package txncoord

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// The package's tests run in strict mode: an invalid transition ends
// the test binary at once, with the move and the stack that attempted
// it, so every flow they drive also asserts that the coordinator never
// attempts one. (A panic would not do: it can happen with c.mu held,
// and the test's cleanup, closing the coordinator, would wait for it.)
func init() { SetInvalidTransitionHook(exitOnInvalidTransition) }

func exitOnInvalidTransition(err error) {
	fmt.Fprintf(os.Stderr, "txncoord strict mode: the coordinator attempted an invalid transition: %v\n%s", err, debug.Stack())
	os.Exit(2)
}

// SetInvalidTransitionHook sets the func called with the error of each
// invalid transition refused (nil: none), for a test that wants that
// error returned rather than the test binary ended; the returned func
// restores the previous one.
func SetInvalidTransitionHook(fn func(error)) (restore func()) {
	var p *func(error)
	if fn != nil {
		p = &fn
	}
	old := onInvalidTransition.Swap(p)
	return func() { onInvalidTransition.Store(old) }
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

// TestInvalidTransitionHook: checkTransition reports each refused move
// to the hook, and returns its error; a valid move reports nothing.
func TestInvalidTransitionHook(t *testing.T) {
	var got []error
	restore := SetInvalidTransitionHook(func(err error) { got = append(got, err) })
	defer restore()
	if err := checkTransition("t", stateOngoing, statePrepareCommit); err != nil {
		t.Fatalf("a valid move: %v", err)
	}
	err := checkTransition("t", stateEmpty, statePrepareCommit)
	if !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("an invalid move: %v, want ErrInvalidTransition", err)
	}
	if len(got) != 1 || got[0] != err {
		t.Fatalf("hook got %v, want [%v]", got, err)
	}
	SetInvalidTransitionHook(nil)
	if err := checkTransition("t", stateEmpty, statePrepareCommit); !errors.Is(err, ErrInvalidTransition) || len(got) != 1 {
		t.Fatalf("no hook: %v (hook got %v)", err, got)
	}
}
