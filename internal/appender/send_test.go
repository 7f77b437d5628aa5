package appender

import (
	"errors"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
)

// TestReplyOutcome: the reply word of each refusal kind, taken from
// metrics.OutcomeOf, is the one its sentinel names (OUT_OF_ORDER for
// logstore.ErrOutOfOrder, FENCED for ErrFenced, INVALID for the rest);
// a failure is no reply.
func TestReplyOutcome(t *testing.T) {
	for k := logstore.RefusedInvalid; k <= logstore.RefusedOpenTransaction; k++ {
		err := &logstore.RefusedError{Kind: k}
		want := outcomeInvalid
		switch {
		case errors.Is(err, logstore.ErrOutOfOrder):
			want = outcomeOutOfOrder
		case errors.Is(err, logstore.ErrFenced):
			want = outcomeFenced
		}
		if got, ok := replyOutcome(metrics.OutcomeOf(logstore.AppendResult{}, err)); !ok || got != want {
			t.Errorf("%v: %s %v, want %s", k, got, ok, want)
		}
	}
	if _, ok := replyOutcome(metrics.OutcomeOf(logstore.AppendResult{}, logstore.ErrClosed)); ok {
		t.Error("a failure got a reply")
	}
}
