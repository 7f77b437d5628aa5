package producerstate_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

func TestOutcomeString(t *testing.T) {
	for o, s := range map[producerstate.Outcome]string{
		producerstate.OK:              "OK",
		producerstate.Duplicate:       "DUPLICATE",
		producerstate.OutOfOrder:      "OUT_OF_ORDER",
		producerstate.Fenced:          "FENCED",
		producerstate.InvalidTxnState: "INVALID_TXN_STATE",
		producerstate.Invalid:         "INVALID",
		0:                             "Outcome(0)",
		200:                           "Outcome(200)",
	} {
		if got := o.String(); got != s {
			t.Errorf("%d: %q, want %q", o, got, s)
		}
	}
	var zero producerstate.Decision
	if zero.Outcome == producerstate.OK {
		t.Fatal("the zero Decision reads as OK")
	}
	for _, o := range []producerstate.Outcome{producerstate.OK, producerstate.Duplicate} {
		if o.Refused() {
			t.Errorf("%s is refused", o)
		}
	}
	for _, o := range []producerstate.Outcome{producerstate.OutOfOrder, producerstate.Fenced, producerstate.InvalidTxnState, producerstate.Invalid, 0} {
		if !o.Refused() {
			t.Errorf("%s is not refused", o)
		}
	}
}

// Each rule of the check, in isolation.

func TestNoProducerIsUnchecked(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	for range 3 {
		want(t, p.send(plain(t, 2), now0), producerstate.OK)
	}
	if p.st.Len() != 0 || p.st.MapEndOffset() != 6 {
		t.Fatalf("len %d, map end %d; want 0, 6", p.st.Len(), p.st.MapEndOffset())
	}
	// Any negative producer id means none (Kafka's hasProducerId).
	b := data(t, bspec{pid: -7, seq: 9})
	want(t, p.st.Check(b, now0), producerstate.OK)
}

func TestUnknownProducerMustStartAtZero(t *testing.T) {
	// Scenario 8 of kafka-format.md §7, where this store deliberately
	// differs from Kafka: pid 23, epoch 1, seq 3 is refused.
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 23, epoch: 1, seq: 3}), now0), producerstate.OutOfOrder,
		"producer 23 epoch 1: unknown producer must start at sequence 0, got 3")
	if p.st.Len() != 0 {
		t.Fatal("a refused batch left state")
	}
	// Any epoch is fine for a new producer.
	want(t, p.send(data(t, bspec{pid: 23, epoch: 1, seq: 0}), now0), producerstate.OK)
	if e, _ := p.st.Producer(23); e.Epoch != 1 || e.CoordinatorEpoch != -1 || e.TxnFirstOffset != -1 {
		t.Fatalf("new entry %+v", e)
	}
}

// TestEpochBelowMinusOneIsInvalid: a batch with a producer id and an
// epoch below -1 (Kafka's "no epoch") is refused as INVALID, as Kafka
// refuses it, whether the producer is new or known; so is such a marker.
// Epoch -1 with a producer id stays accepted.
func TestEpochBelowMinusOneIsInvalid(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	for _, epoch := range []int16{-2, -3, math.MinInt16} {
		want(t, p.send(data(t, bspec{pid: 23, epoch: epoch, seq: 0}), now0), producerstate.Invalid,
			fmt.Sprintf("producer 23: epoch %d is not a producer epoch (the lowest is -1)", epoch))
		want(t, p.send(marker(t, 23, epoch, true, 0, ts0), now0), producerstate.Invalid, "is not a producer epoch")
	}
	if p.st.Len() != 0 {
		t.Fatal("a refused batch left state")
	}
	want(t, p.send(data(t, bspec{pid: 23, epoch: 0, seq: 0}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 23, epoch: -2, seq: 1}), now0), producerstate.Invalid, "epoch -2 is not a producer epoch")
	want(t, p.send(data(t, bspec{pid: 24, epoch: -1, seq: 0}), now0), producerstate.OK)
}

func TestOlderEpochIsFenced(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 5, epoch: 3, seq: 0}), now0), producerstate.OK)
	// Whatever the sequence, even the next one or a duplicate's.
	for _, seq := range []int32{0, 1, 7} {
		want(t, p.send(data(t, bspec{pid: 5, epoch: 2, seq: seq}), now0), producerstate.Fenced,
			"producer 5: epoch 2 is older than the current epoch 3")
	}
}

func TestNewerEpochMustStartAtZero(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	for seq := int32(0); seq < 9; seq += 3 {
		want(t, p.send(data(t, bspec{pid: 5, seq: seq, n: 3}), now0), producerstate.OK)
	}
	want(t, p.send(data(t, bspec{pid: 5, epoch: 1, seq: 9}), now0), producerstate.OutOfOrder,
		"producer 5 epoch 1: a new epoch (current 0) must start at sequence 0, got 9")
	// Also a jump of several epochs.
	want(t, p.send(data(t, bspec{pid: 5, epoch: 4, seq: 0, n: 2}), now0), producerstate.OK)
	if got := seqs(t, p.st, 5); got != "[0..1]" {
		t.Fatalf("window %s, want it cleared to [0..1]", got)
	}
	want(t, p.send(data(t, bspec{pid: 5, epoch: 4, seq: 2}), now0), producerstate.OK)
}

func TestSameEpochSequence(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 9, seq: 0, n: 4}), now0), producerstate.OK)
	for _, tc := range []struct {
		seq int32
		n   int
	}{{5, 1}, {3, 1}, {1, 3}, {0, 3}, {math.MaxInt32, 1}} {
		want(t, p.send(data(t, bspec{pid: 9, seq: tc.seq, n: tc.n}), now0), producerstate.OutOfOrder,
			"producer 9 epoch 0: expected sequence 4, got ")
	}
	want(t, p.send(data(t, bspec{pid: 9, seq: 4, n: 2}), now0), producerstate.OK)
	if got := seqs(t, p.st, 9); got != "[0..3] [4..5]" {
		t.Fatalf("window %s", got)
	}
}

func TestDuplicateReturnsOriginalOffsets(t *testing.T) {
	// Scenario 6 [ULT testDuplicateAppends]: six single-record batches,
	// then one of three records.
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(plain(t, 2), now0), producerstate.OK) // offsets 0..1 are another writer's
	for seq := range int32(6) {
		want(t, p.send(data(t, bspec{pid: 1, seq: seq}), now0), producerstate.OK)
	}
	three := data(t, bspec{pid: 1, seq: 6, n: 3})
	want(t, p.send(three, now0), producerstate.OK)
	end := p.st.MapEndOffset()
	if end != 11 {
		t.Fatalf("log end %d, want 11", end)
	}
	wantDup(t, p.send(three, now0), 8, 10)
	if d := p.send(three, now0); d.Reason != "producer 1 epoch 0: sequences 6..8 were written at offsets 8..10" {
		t.Fatalf("duplicate reason %q", d.Reason)
	}
	if p.st.MapEndOffset() != end {
		t.Fatal("a duplicate moved the log end")
	}
	// A partial overlap, same start or same end, is OUT_OF_ORDER.
	want(t, p.send(data(t, bspec{pid: 1, seq: 7, n: 2}), now0), producerstate.OutOfOrder, "expected sequence 9, got 7")
	want(t, p.send(data(t, bspec{pid: 1, seq: 6, n: 2}), now0), producerstate.OutOfOrder, "expected sequence 9, got 6")
	want(t, p.send(data(t, bspec{pid: 1, seq: 6, n: 4}), now0), producerstate.OutOfOrder, "expected sequence 9, got 6")
	// The window is seqs 2, 3, 4, 5, 6..8: seq 2 (5th newest) is a
	// duplicate, seq 1 (6th newest) is not.
	if got := seqs(t, p.st, 1); got != "[2..2] [3..3] [4..4] [5..5] [6..8]" {
		t.Fatalf("window %s", got)
	}
	wantDup(t, p.send(data(t, bspec{pid: 1, seq: 2}), now0), 4, 4)
	want(t, p.send(data(t, bspec{pid: 1, seq: 1}), now0), producerstate.OutOfOrder, "expected sequence 9, got 1")
}

func TestWindowKeepsFiveNewest(t *testing.T) {
	// After 7 single-record batches with seq 0..6 the window holds 2..6
	// (kafka-format.md §4.5); the 6th newest retry is OUT_OF_ORDER, the
	// 5th newest and every newer one DUPLICATE with its own offsets.
	p := newPartition(t, producerstate.DefaultConfig())
	for seq := range int32(7) {
		want(t, p.send(data(t, bspec{pid: 2, seq: seq}), now0), producerstate.OK)
	}
	if got := seqs(t, p.st, 2); got != "[2..2] [3..3] [4..4] [5..5] [6..6]" {
		t.Fatalf("window %s", got)
	}
	for seq := int64(2); seq <= 6; seq++ {
		wantDup(t, p.send(data(t, bspec{pid: 2, seq: int32(seq)}), now0), seq, seq)
	}
	for _, seq := range []int32{0, 1} {
		want(t, p.send(data(t, bspec{pid: 2, seq: seq}), now0), producerstate.OutOfOrder, "expected sequence 7")
	}
}

func TestDuplicateOnlyInSameEpoch(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 3, seq: 0, n: 2}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 3, epoch: 1, seq: 0, n: 3}), now0), producerstate.OK)
	// The same sequences under the old epoch are fenced, not duplicates.
	want(t, p.send(data(t, bspec{pid: 3, seq: 0, n: 2}), now0), producerstate.Fenced)
	// And a batch of the new epoch is a duplicate only with its own range.
	wantDup(t, p.send(data(t, bspec{pid: 3, epoch: 1, seq: 0, n: 3}), now0), 2, 4)
	want(t, p.send(data(t, bspec{pid: 3, epoch: 1, seq: 0, n: 2}), now0), producerstate.OutOfOrder, "expected sequence 3, got 0")
}

func TestBasicIDMapping(t *testing.T) {
	// Scenario 5 [PSMT testBasicIdMapping]. Kafka's test calls the
	// sequence check directly, so its "seq 1 again" is out of order; here
	// it goes through the duplicate check first and is a DUPLICATE.
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 1, seq: 0}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 1}), now0), producerstate.OK)
	wantDup(t, p.send(data(t, bspec{pid: 1, seq: 1}), now0), 1, 1)
	want(t, p.send(data(t, bspec{pid: 1, seq: 5}), now0), producerstate.OutOfOrder, "expected sequence 2, got 5")
	want(t, p.send(data(t, bspec{pid: 1, epoch: 1, seq: 0}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, epoch: 0, seq: 2}), now0), producerstate.Fenced)
}

func TestWrapInsideBatch(t *testing.T) {
	// Base 2147483646 with 3 records has last sequence 0; next must be 1.
	p := newPartition(t, producerstate.DefaultConfig())
	// Reach sequence 2147483645 by the replay path (no 2^31 records).
	p.appendBatch(spread(t, 4, 0, 0, math.MaxInt32-2, ts0))
	if got := seqs(t, p.st, 4); got != "[0..2147483645]" {
		t.Fatalf("window %s", got)
	}
	b := data(t, bspec{pid: 4, seq: math.MaxInt32 - 1, n: 3})
	if b.LastSequence() != 0 {
		t.Fatalf("last sequence %d", b.LastSequence())
	}
	want(t, p.send(b, now0), producerstate.OK)
	if got := seqs(t, p.st, 4); got != "[0..2147483645] [2147483646..0]" {
		t.Fatalf("window %s", got)
	}
	base := p.log[len(p.log)-1].BaseOffset()
	wantDup(t, p.send(b, now0), base, base+2)
	want(t, p.send(data(t, bspec{pid: 4, seq: 0}), now0), producerstate.OutOfOrder, "expected sequence 1, got 0")
	want(t, p.send(data(t, bspec{pid: 4, seq: 1, n: 2}), now0), producerstate.OK)
	if got := seqs(t, p.st, 4); got != "[0..2147483645] [2147483646..0] [1..2]" {
		t.Fatalf("window %s", got)
	}
}

func TestWrapAcrossBatches(t *testing.T) {
	// Scenario 7 [PSMT testProducerSequenceWrapAround / InvalidWrapAround]:
	// last sequence 2147483647 at epoch 15. Seq 1 is refused; seq 0 is
	// accepted, and then seq 1.
	p := newPartition(t, producerstate.DefaultConfig())
	p.appendBatch(spread(t, 8, 15, 0, math.MaxInt32, ts0))
	want(t, p.send(data(t, bspec{pid: 8, epoch: 15, seq: 1}), now0), producerstate.OutOfOrder,
		"producer 8 epoch 15: expected sequence 0, got 1")
	want(t, p.send(data(t, bspec{pid: 8, epoch: 15, seq: 0}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 8, epoch: 15, seq: 1}), now0), producerstate.OK)
	if got := seqs(t, p.st, 8); got != "[0..2147483647] [0..0] [1..1]" {
		t.Fatalf("window %s", got)
	}
}

func TestPartitionsAreIndependent(t *testing.T) {
	// One producer writing to two partitions keeps a sequence per
	// partition: two State values share nothing.
	a := newPartition(t, producerstate.DefaultConfig())
	b := newPartition(t, producerstate.DefaultConfig())
	want(t, a.send(data(t, bspec{pid: 77, seq: 0, n: 3}), now0), producerstate.OK)
	want(t, a.send(data(t, bspec{pid: 77, seq: 3, n: 2}), now0), producerstate.OK)
	want(t, b.send(data(t, bspec{pid: 77, seq: 0, n: 1}), now0), producerstate.OK)

	want(t, b.send(data(t, bspec{pid: 77, seq: 5}), now0), producerstate.OutOfOrder, "expected sequence 1, got 5")
	want(t, a.send(data(t, bspec{pid: 77, seq: 1}), now0), producerstate.OutOfOrder, "expected sequence 5, got 1")
	want(t, b.send(data(t, bspec{pid: 77, seq: 1}), now0), producerstate.OK)
	want(t, a.send(data(t, bspec{pid: 77, seq: 5}), now0), producerstate.OK)
	// A duplicate on one partition is not one on the other.
	wantDup(t, a.send(data(t, bspec{pid: 77, seq: 3, n: 2}), now0), 3, 4)
	want(t, b.send(data(t, bspec{pid: 77, seq: 3, n: 2}), now0), producerstate.OutOfOrder)
	// An epoch bump on one partition does not fence the other.
	want(t, a.send(data(t, bspec{pid: 77, epoch: 1, seq: 0}), now0), producerstate.OK)
	want(t, b.send(data(t, bspec{pid: 77, seq: 2}), now0), producerstate.OK)
	if got := seqs(t, a.st, 77); got != "[0..0]" {
		t.Fatalf("partition a window %s", got)
	}
	if got := seqs(t, b.st, 77); got != "[0..0] [1..1] [2..2]" {
		t.Fatalf("partition b window %s", got)
	}
}

func TestCheckChangesNothing(t *testing.T) {
	cfg := producerstate.Config{ExpireAfter: time.Hour, MaxProducers: 2}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, n: 2, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, epoch: 2, seq: 0}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 3, seq: 0, ts: ts0 - 10}), now0), producerstate.OK)
	before := p.st.Snapshot()
	late := now0.Add(2 * time.Hour) // producers 2 and 3 expired
	for _, b := range []recordbatch.Batch{
		data(t, bspec{pid: 1, seq: 2, txn: true}),        // OK
		data(t, bspec{pid: 1, seq: 0, n: 2, txn: true}),  // DUPLICATE
		data(t, bspec{pid: 1, seq: 2}),                   // INVALID_TXN_STATE
		data(t, bspec{pid: 2, epoch: 1, seq: 1}),         // FENCED, or OUT_OF_ORDER once expired
		data(t, bspec{pid: 3, seq: 1}),                   // OUT_OF_ORDER
		data(t, bspec{pid: 99, seq: 0}),                  // new producer beyond the cap
		marker(t, 1, 0, true, 5, ts0),                    // OK
		marker(t, 2, 1, true, 5, ts0),                    // FENCED
		leaderChange(t, 1, 0),                            // INVALID
		plain(t, 1),                                      // OK
		emptyControl(t, 1, 0),                            // OK
		spread(t, 1, 0, math.MaxInt32, math.MaxInt32, 0), // OUT_OF_ORDER
	} {
		for _, now := range []time.Time{now0, late, {}} {
			p.st.Check(b, now)
			p.st.CheckMarker(b, now)
		}
	}
	if after := p.st.Snapshot(); !after.Equal(before) {
		t.Fatalf("Check changed the state:\n%+v\n%+v", before, after)
	}
}

// Transactions and markers (kafka-format.md §4.6, §7 scenarios 9–11).

func TestTransactionBookkeeping(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(plain(t, 3), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 6, seq: 0, n: 2, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 6, seq: 2, n: 2, txn: true}), now0), producerstate.OK)
	if e, _ := p.st.Producer(6); e.TxnFirstOffset != 3 {
		t.Fatalf("txn first offset %d, want 3 (the first transactional batch)", e.TxnFirstOffset)
	}
	// Non-transactional data while the transaction is open is refused,
	// after the sequence checks, and it changes nothing.
	want(t, p.send(data(t, bspec{pid: 6, seq: 4}), now0), producerstate.InvalidTxnState,
		"producer 6 epoch 0: expected a transactional batch, since the transaction begun at offset 3 is open")
	want(t, p.send(data(t, bspec{pid: 6, seq: 9}), now0), producerstate.OutOfOrder)
	// Also under a new epoch: only a marker closes the transaction.
	want(t, p.send(data(t, bspec{pid: 6, epoch: 1, seq: 0}), now0), producerstate.InvalidTxnState)
	// A retry of a transactional batch is still a duplicate.
	wantDup(t, p.send(data(t, bspec{pid: 6, seq: 2, n: 2, txn: true}), now0), 5, 6)

	want(t, p.send(marker(t, 6, 0, true, 4, ts0+5), now0), producerstate.OK)
	e, _ := p.st.Producer(6)
	if e.TxnFirstOffset != -1 || e.CoordinatorEpoch != 4 || e.LastTimestamp != ts0+5 || e.Epoch != 0 {
		t.Fatalf("after COMMIT: %+v", e)
	}
	if got := seqs(t, p.st, 6); got != "[0..1] [2..3]" {
		t.Fatalf("a marker of the same epoch changed the window: %s", got)
	}
	if p.st.MapEndOffset() != 8 {
		t.Fatalf("map end %d, want 8", p.st.MapEndOffset())
	}
	// Now non-transactional data is fine, and the next transaction opens
	// at its own first batch.
	want(t, p.send(data(t, bspec{pid: 6, seq: 4}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 6, seq: 5, txn: true}), now0), producerstate.OK)
	if e, _ := p.st.Producer(6); e.TxnFirstOffset != 9 {
		t.Fatalf("second txn first offset %d, want 9", e.TxnFirstOffset)
	}
	want(t, p.send(marker(t, 6, 0, false, 4, ts0+6), now0), producerstate.OK)
	if e, _ := p.st.Producer(6); e.TxnFirstOffset != -1 {
		t.Fatal("ABORT did not close the transaction")
	}
	// A marker with no transaction open is accepted and changes only the
	// coordinator epoch and timestamp.
	want(t, p.send(marker(t, 6, 0, true, 4, ts0+7), now0), producerstate.OK)
	if e, _ := p.st.Producer(6); e.TxnFirstOffset != -1 || e.LastTimestamp != ts0+7 {
		t.Fatalf("%+v", e)
	}
}

func TestMarkerBumpsEpoch(t *testing.T) {
	// Scenario 9 [PSMT testOutOfSequenceAfterControlRecordEpochBump].
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 1, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 1, 1, false, 0, ts0), now0), producerstate.OK)
	e, _ := p.st.Producer(1)
	if e.Epoch != 1 || len(e.Batches) != 0 || e.TxnFirstOffset != -1 {
		t.Fatalf("after ABORT at epoch 1: %+v", e)
	}
	want(t, p.send(data(t, bspec{pid: 1, epoch: 1, seq: 2}), now0), producerstate.OutOfOrder, "expected sequence 0, got 2")
	want(t, p.send(data(t, bspec{pid: 1, epoch: 2, seq: 2}), now0), producerstate.OutOfOrder, "must start at sequence 0, got 2")
	want(t, p.send(data(t, bspec{pid: 1, epoch: 0, seq: 2}), now0), producerstate.Fenced)
	want(t, p.send(data(t, bspec{pid: 1, epoch: 1, seq: 0}), now0), producerstate.OK)
}

func TestMarkerOnlyState(t *testing.T) {
	// Scenario 10 [PSMT testAppendTxnMarkerWithNoProducerState].
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(marker(t, 1, 2, true, 7, ts0), now0), producerstate.OK)
	e, ok := p.st.Producer(1)
	if !ok || e.Epoch != 2 || e.CoordinatorEpoch != 7 || len(e.Batches) != 0 || e.TxnFirstOffset != -1 || e.LastTimestamp != ts0 {
		t.Fatalf("marker-only entry %+v %v", e, ok)
	}
	want(t, p.send(data(t, bspec{pid: 1, epoch: 0, seq: 0}), now0), producerstate.Fenced)
	want(t, p.send(data(t, bspec{pid: 1, epoch: 2, seq: 17}), now0), producerstate.OutOfOrder, "expected sequence 0, got 17")
	want(t, p.send(data(t, bspec{pid: 1, epoch: 2, seq: 0}), now0), producerstate.OK)
}

func TestCoordinatorFencing(t *testing.T) {
	// Scenario 11 [PSMT testCoordinatorFencing].
	p := newPartition(t, producerstate.DefaultConfig())
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 1, 0, true, 1, ts0), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 1, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 1, 0, true, 1, ts0), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 2, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 1, 0, true, 2, ts0), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 3, txn: true}), now0), producerstate.OK)
	want(t, p.send(marker(t, 1, 0, false, 1, ts0), now0), producerstate.Fenced,
		"producer 1: ABORT marker coordinator epoch 1 is older than the current coordinator epoch 2")
	if e, _ := p.st.Producer(1); e.TxnFirstOffset < 0 {
		t.Fatal("a fenced marker closed the transaction")
	}
	// A marker of an older producer epoch is fenced too.
	want(t, p.send(data(t, bspec{pid: 2, epoch: 3, seq: 0}), now0), producerstate.OK)
	want(t, p.send(marker(t, 2, 2, true, 9, ts0), now0), producerstate.Fenced,
		"producer 2: COMMIT marker epoch 2 is older than the current epoch 3")
	// Check passes a control batch on to CheckMarker.
	want(t, p.st.Check(marker(t, 1, 0, true, 1, ts0), now0), producerstate.Fenced)
	want(t, p.st.Check(marker(t, 1, 0, true, 2, ts0), now0), producerstate.OK)
}

func TestCheckMarkerRefusesWhatIsNotAMarker(t *testing.T) {
	st := producerstate.New(noExpiry)
	want(t, st.CheckMarker(data(t, bspec{pid: 1, seq: 0}), now0), producerstate.Invalid, "not a control batch")
	want(t, st.CheckMarker(leaderChange(t, 1, 0), now0), producerstate.Invalid, "Invalid control record type for end transaction marker")
	want(t, st.CheckMarker(emptyControl(t, 1, 0), now0), producerstate.OK)
	want(t, st.CheckMarker(plain(t, 1), now0), producerstate.OK)
}

func TestEmptyControlBatchIsNoOp(t *testing.T) {
	p := newPartition(t, noExpiry)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, txn: true}), now0), producerstate.OK)
	before, _ := p.st.Producer(1)
	p.appendBatch(emptyControl(t, 1, 5)) // even with another epoch
	after, _ := p.st.Producer(1)
	if !after.Equal(before) {
		t.Fatalf("empty control batch changed the entry: %+v -> %+v", before, after)
	}
	if p.st.MapEndOffset() != 2 {
		t.Fatalf("map end %d, want 2", p.st.MapEndOffset())
	}
	p.appendBatch(emptyControl(t, 2, 0))
	if _, ok := p.st.Producer(2); ok || p.st.Len() != 1 {
		t.Fatal("empty control batch added a producer")
	}
}

func TestApplyUndecodableMarker(t *testing.T) {
	st := producerstate.New(noExpiry)
	b := leaderChange(t, 1, 0)
	b.SetBaseOffset(4)
	before := st.Snapshot()
	err := st.Apply(b, now0)
	if err == nil || !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("Apply: %v, want an error matching recordbatch.ErrCorrupt", err)
	}
	if after := st.Snapshot(); !after.Equal(before) {
		t.Fatal("a failed Apply changed the state")
	}
	// A leader-change record without producer id, as KRaft writes it, is
	// not read at all.
	bl := recordbatch.NewBuilder(4)
	bl.Control = true
	if err := bl.Append(ts0, recordbatch.AppendControlKey(nil, recordbatch.ControlLeaderChange), []byte{0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(build(t, bl), now0); err != nil || st.MapEndOffset() != 5 {
		t.Fatalf("Apply: %v, map end %d", err, st.MapEndOffset())
	}
}

// Replay (kafka-format.md §4.7, scenario 12).

func TestReplayAcceptsWhatCheckRefuses(t *testing.T) {
	p := newPartition(t, noExpiry)
	// A sequence gap, a duplicate at new offsets, an older epoch: Apply
	// takes them all, as Kafka's REPLICATION origin does, and the state
	// follows the log.
	p.appendBatch(data(t, bspec{pid: 1, epoch: 3, seq: 5, n: 2}))
	p.appendBatch(data(t, bspec{pid: 1, epoch: 3, seq: 7}))
	if got := seqs(t, p.st, 1); got != "[5..6] [7..7]" {
		t.Fatalf("window %s", got)
	}
	// A gap in the same epoch starts the window over: it is always one
	// run of consecutive sequences.
	p.appendBatch(data(t, bspec{pid: 1, epoch: 3, seq: 20}))
	if got := seqs(t, p.st, 1); got != "[20..20]" {
		t.Fatalf("window after a gap %s", got)
	}
	p.appendBatch(data(t, bspec{pid: 1, epoch: 3, seq: 20}))
	if got := fmtWindow(mustProducer(t, p.st, 1).Batches); got != "[20..20]@4..4" {
		t.Fatalf("window after a duplicate %s", got)
	}
	p.appendBatch(data(t, bspec{pid: 1, epoch: 1, seq: 9}))
	e := mustProducer(t, p.st, 1)
	if e.Epoch != 1 || fmtWindow(e.Batches) != "[9..9]@5..5" {
		t.Fatalf("after an older epoch: %s", fmtEntry(e, true))
	}
	want(t, p.st.Check(data(t, bspec{pid: 1, epoch: 1, seq: 10}), now0), producerstate.OK)
	want(t, p.st.Check(data(t, bspec{pid: 1, epoch: 0, seq: 10}), now0), producerstate.Fenced)
	// An older marker epoch and coordinator epoch too.
	p.appendBatch(marker(t, 1, 4, true, 9, ts0))
	p.appendBatch(marker(t, 1, 2, true, 3, ts0+1))
	if e := mustProducer(t, p.st, 1); e.Epoch != 2 || e.CoordinatorEpoch != 3 || len(e.Batches) != 0 {
		t.Fatalf("after older markers: %s", fmtEntry(e, true))
	}
}

func TestApplyUpdatesMapEndOffset(t *testing.T) {
	st := producerstate.New(noExpiry)
	if st.MapEndOffset() != 0 {
		t.Fatal("new state's map end offset is not 0")
	}
	st.SetMapEndOffset(100)
	for _, b := range []recordbatch.Batch{plain(t, 3), data(t, bspec{pid: 1, seq: 0, n: 4}), marker(t, 1, 0, true, 0, ts0), emptyControl(t, 1, 0)} {
		off := st.MapEndOffset()
		b.SetBaseOffset(off)
		if err := st.Apply(b, now0); err != nil {
			t.Fatal(err)
		}
		if st.MapEndOffset() != b.LastOffset()+1 {
			t.Fatalf("map end %d after a batch at %d..%d", st.MapEndOffset(), b.BaseOffset(), b.LastOffset())
		}
	}
	if got := st.Snapshot().Offset; got != 109 {
		t.Fatalf("snapshot offset %d, want 109", got)
	}
}

func TestLastTimestampAndWindowTimestamp(t *testing.T) {
	p := newPartition(t, noExpiry)
	bl := recordbatch.NewBuilder(0)
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = 1, 0, 0
	for _, ts := range []int64{ts0 + 30, ts0 + 90, ts0 + 10} {
		if err := bl.Append(ts, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	p.appendBatch(build(t, bl))
	e := mustProducer(t, p.st, 1)
	if e.LastTimestamp != ts0+90 || e.Batches[0].Timestamp != ts0+90 {
		t.Fatalf("timestamps %+v, want the max timestamp %d", e, ts0+90)
	}
}

// Snapshots.

func TestSnapshotIsDeepAndSorted(t *testing.T) {
	p := newPartition(t, noExpiry)
	for _, pid := range []int64{50, 3, 900, 12} {
		want(t, p.send(data(t, bspec{pid: pid, seq: 0, n: 2}), now0), producerstate.OK)
	}
	want(t, p.send(marker(t, 77, 1, true, 2, ts0), now0), producerstate.OK)
	snap := p.st.Snapshot()
	var ids []int64
	for _, e := range snap.Producers {
		ids = append(ids, e.ProducerID)
	}
	if len(ids) != 5 || ids[0] != 3 || ids[1] != 12 || ids[2] != 50 || ids[3] != 77 || ids[4] != 900 {
		t.Fatalf("producer order %v", ids)
	}
	if snap.Producers[3].Batches != nil {
		t.Fatal("an empty window is not nil in the snapshot")
	}
	// Changing the snapshot does not change the state, and the other way.
	snap.Producers[0].Batches[0].FirstOffset = 999
	snap.Producers[0].Epoch = 9
	if e := mustProducer(t, p.st, 3); e.Epoch != 0 || e.Batches[0].FirstOffset != 2 {
		t.Fatal("the snapshot shares memory with the state")
	}
	snap = p.st.Snapshot()
	st := producerstate.FromSnapshot(noExpiry, snap)
	snap.Producers[0].Batches[0].FirstSeq = 42
	if !st.Equal(p.st) {
		t.Fatal("FromSnapshot shares memory with the snapshot")
	}
	e := mustProducer(t, st, 3)
	e.Batches[0].FirstSeq = 42
	if !st.Equal(p.st) {
		t.Fatal("Producer shares memory with the state")
	}
	if st.Snapshot().Offset != p.st.MapEndOffset() || st.Len() != 5 {
		t.Fatal("FromSnapshot lost the offset or a producer")
	}
}

func TestFromSnapshotKeepsNewestFive(t *testing.T) {
	var w []producerstate.BatchMeta
	for i := range int32(8) {
		w = append(w, producerstate.BatchMeta{FirstSeq: i, LastSeq: i, FirstOffset: int64(i), LastOffset: int64(i)})
	}
	st := producerstate.FromSnapshot(noExpiry, producerstate.Snapshot{Offset: 8, Producers: []producerstate.Entry{
		{ProducerID: 1, TxnFirstOffset: -1, Batches: w},
	}})
	if got := seqs(t, st, 1); got != "[3..3] [4..4] [5..5] [6..6] [7..7]" {
		t.Fatalf("window %s", got)
	}
	want(t, st.Check(data(t, bspec{pid: 1, seq: 8}), now0), producerstate.OK)
	wantDup(t, st.Check(data(t, bspec{pid: 1, seq: 3}), now0), 3, 3)
	want(t, st.Check(data(t, bspec{pid: 1, seq: 2}), now0), producerstate.OutOfOrder)
}

func TestEqual(t *testing.T) {
	a := producerstate.New(noExpiry)
	b := producerstate.New(producerstate.DefaultConfig()) // configurations are not compared
	if !a.Equal(b) {
		t.Fatal("empty states differ")
	}
	x := data(t, bspec{pid: 1, seq: 0})
	if err := a.Apply(x, now0); err != nil {
		t.Fatal(err)
	}
	if a.Equal(b) || b.Equal(a) {
		t.Fatal("states with different producers are equal")
	}
	if err := b.Apply(x, now0); err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Fatalf("same batches, different states:\n%s", diff(a, b))
	}
	b.SetMapEndOffset(7)
	if a.Equal(b) {
		t.Fatal("states with different map end offsets are equal")
	}
	// A window cleared in place equals a nil one.
	e := producerstate.Entry{ProducerID: 1, Batches: []producerstate.BatchMeta{}}
	if !e.Equal(producerstate.Entry{ProducerID: 1}) {
		t.Fatal("empty and nil windows differ")
	}
}

func mustProducer(t testing.TB, st *producerstate.State, pid int64) producerstate.Entry {
	t.Helper()
	e, ok := st.Producer(pid)
	if !ok {
		t.Fatalf("producer %d unknown", pid)
	}
	return e
}
