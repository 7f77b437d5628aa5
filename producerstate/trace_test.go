package producerstate_test

import (
	"testing"

	"github.com/logstore/logstore/producerstate"
)

// traceStep is one line of the acceptance trace of issue 4.
type traceStep struct {
	name      string
	b         bspec
	outcome   producerstate.Outcome
	reason    string // a part of the reason, for refusals
	base      int64  // OK: base offset given; DUPLICATE: first copy's base
	last      int64  // DUPLICATE: first copy's last offset
	logEnd    int64  // log end after the step
	window    string // producer 31's window after the step
	wantEpoch int16
}

// acceptanceTrace is issue 4's trace for producer 31 on a partition whose
// log starts at 0, exactly.
var acceptanceTrace = []traceStep{
	{name: "seq 0, 3 records: no state, s = 0", b: bspec{pid: 31, seq: 0, n: 3},
		outcome: producerstate.OK, base: 0, logEnd: 3, window: "[0..2]"},
	{name: "seq 3, 2 records: 3 = 2 + 1", b: bspec{pid: 31, seq: 3, n: 2},
		outcome: producerstate.OK, base: 3, logEnd: 5, window: "[0..2] [3..4]"},
	{name: "seq 3, 2 records again: same range remembered", b: bspec{pid: 31, seq: 3, n: 2},
		outcome: producerstate.Duplicate, base: 3, last: 4, logEnd: 5, window: "[0..2] [3..4]"},
	{name: "seq 7, 1 record: expected 5, got 7", b: bspec{pid: 31, seq: 7, n: 1},
		outcome: producerstate.OutOfOrder, reason: "producer 31 epoch 0: expected sequence 5, got 7", logEnd: 5, window: "[0..2] [3..4]"},
	{name: "same batch, epoch 1: newer epoch, but s = 7", b: bspec{pid: 31, epoch: 1, seq: 7, n: 1},
		outcome: producerstate.OutOfOrder, reason: "must start at sequence 0, got 7", logEnd: 5, window: "[0..2] [3..4]"},
	{name: "seq 0, epoch 1: restart", b: bspec{pid: 31, epoch: 1, seq: 0, n: 1},
		outcome: producerstate.OK, base: 5, logEnd: 6, window: "[0..0]", wantEpoch: 1},
	{name: "seq 5, epoch 0: older epoch", b: bspec{pid: 31, epoch: 0, seq: 5, n: 1},
		outcome: producerstate.Fenced, reason: "epoch 0 is older than the current epoch 1", logEnd: 6, window: "[0..0]", wantEpoch: 1},
}

func TestAcceptanceTrace(t *testing.T) {
	runTrace(t, false)
}

// TestAcceptanceTraceThroughSnapshots runs the trace with the state going
// through Snapshot and FromSnapshot between every two steps, as a close
// and reopen would.
func TestAcceptanceTraceThroughSnapshots(t *testing.T) {
	runTrace(t, true)
}

func runTrace(t *testing.T, restart bool) {
	p := newPartition(t, producerstate.DefaultConfig())
	now := now0
	for i, step := range acceptanceTrace {
		if restart && i > 0 {
			p.restart()
		}
		before := p.st.MapEndOffset()
		d := p.send(data(t, step.b), now)
		if d.Outcome != step.outcome {
			t.Fatalf("step %d (%s): %s (%q), want %s", i+1, step.name, d.Outcome, d.Reason, step.outcome)
		}
		switch step.outcome {
		case producerstate.OK:
			if before != step.base {
				t.Fatalf("step %d (%s): base %d, want %d", i+1, step.name, before, step.base)
			}
		case producerstate.Duplicate:
			wantDup(t, d, step.base, step.last)
		default:
			want(t, d, step.outcome, step.reason)
		}
		if got := p.st.MapEndOffset(); got != step.logEnd {
			t.Fatalf("step %d (%s): log end %d, want %d", i+1, step.name, got, step.logEnd)
		}
		if got := seqs(t, p.st, 31); got != step.window {
			t.Fatalf("step %d (%s): window %s, want %s", i+1, step.name, got, step.window)
		}
		if e, _ := p.st.Producer(31); e.Epoch != step.wantEpoch {
			t.Fatalf("step %d (%s): epoch %d, want %d", i+1, step.name, e.Epoch, step.wantEpoch)
		}
	}
	// The window's offsets are the ones given: [0..0] of epoch 1 at 5.
	e, _ := p.st.Producer(31)
	if got := fmtWindow(e.Batches); got != "[0..0]@5..5" {
		t.Fatalf("final window %s", got)
	}
	if full := replay(t, producerstate.DefaultConfig(), p.log); !full.Equal(p.st) {
		t.Fatalf("full replay differs from the live state:\n%s", diff(full, p.st))
	}
}
