package producerstate_test

import (
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// TestCauses: every refusal says which rule refused and the numbers it
// compared, as data, and its Outcome is the one its Cause belongs to.
func TestCauses(t *testing.T) {
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 5, epoch: 3, seq: 0, n: 2}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 6, seq: 0, n: 2, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 7, 0, true, 4, ts0), now0), producerstate.OK)
	later := now0.Add(2 * time.Hour)

	for _, tc := range []struct {
		name          string
		b             recordbatch.Batch
		now           time.Time
		cause         producerstate.Cause
		expected, got int64
	}{
		{"unknown producer", data(t, bspec{pid: 23, epoch: 1, seq: 3}), now0, producerstate.UnknownProducer, 0, 3},
		{"expired producer", data(t, bspec{pid: 5, epoch: 3, seq: 2, ts: later.UnixMilli()}), later, producerstate.ExpiredProducer, 0, 2},
		{"sequence gap", data(t, bspec{pid: 5, epoch: 3, seq: 7}), now0, producerstate.SequenceGap, 2, 7},
		{"partial overlap", data(t, bspec{pid: 5, epoch: 3, seq: 1}), now0, producerstate.SequenceGap, 2, 1},
		{"new epoch not at 0", data(t, bspec{pid: 5, epoch: 4, seq: 2}), now0, producerstate.NewEpochNotAtZero, 0, 2},
		{"older epoch", data(t, bspec{pid: 5, epoch: 2, seq: 2}), now0, producerstate.OlderEpoch, 3, 2},
		{"open transaction", data(t, bspec{pid: 6, seq: 2}), now0, producerstate.OpenTransaction, 2, 0},
		{"marker of an older epoch", marker(t, 5, 1, true, 0, ts0), now0, producerstate.OlderEpoch, 3, 1},
		{"marker of an older coordinator", marker(t, 7, 0, false, 3, ts0), now0, producerstate.OlderCoordinatorEpoch, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.st.Check(tc.b, tc.now)
			if d.Cause != tc.cause || d.Expected != tc.expected || d.Got != tc.got {
				t.Errorf("%s %s expected %d got %d (%q); want %s expected %d got %d",
					d.Outcome, d.Cause, d.Expected, d.Got, d.Reason, tc.cause, tc.expected, tc.got)
			}
			if d.Outcome != tc.cause.Outcome() || !d.Outcome.Refused() || d.Reason == "" {
				t.Errorf("outcome %s (%q), want %s with a reason", d.Outcome, d.Reason, tc.cause.Outcome())
			}
		})
	}

	// CheckMarker on data: INVALID, for not being a control batch.
	if d := p.st.CheckMarker(data(t, bspec{pid: 5, epoch: 3, seq: 2}), now0); d.Cause != producerstate.NotControlBatch || d.Outcome != producerstate.Invalid {
		t.Errorf("CheckMarker on data: %s %s, want INVALID NOT_CONTROL_BATCH", d.Outcome, d.Cause)
	}
	// OK and DUPLICATE have no cause.
	for _, d := range []producerstate.Decision{
		p.st.Check(data(t, bspec{pid: 5, epoch: 3, seq: 2}), now0),
		p.st.Check(data(t, bspec{pid: 5, epoch: 3, seq: 0, n: 2}), now0),
	} {
		if d.Cause != producerstate.NoCause || d.Expected != 0 || d.Got != 0 {
			t.Errorf("%s: cause %s, expected %d, got %d; want none", d.Outcome, d.Cause, d.Expected, d.Got)
		}
	}
}

func TestCauseString(t *testing.T) {
	for c, s := range map[producerstate.Cause]string{
		producerstate.NoCause:           "NONE",
		producerstate.UnknownProducer:   "UNKNOWN_PRODUCER",
		producerstate.SequenceGap:       "SEQUENCE_GAP",
		producerstate.NewEpochNotAtZero: "NEW_EPOCH_NOT_AT_ZERO",
		producerstate.OlderEpoch:        "OLDER_EPOCH",
		producerstate.BadMarker:         "BAD_MARKER",
		producerstate.InvalidEpoch:      "INVALID_EPOCH",
		200:                             "Cause(200)",
	} {
		if got := c.String(); got != s {
			t.Errorf("%d: %q, want %q", c, got, s)
		}
	}
	if o := producerstate.NoCause.Outcome(); o != 0 {
		t.Errorf("NoCause has outcome %s", o)
	}
}
