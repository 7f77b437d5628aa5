package recordbatch_test

import (
	"math"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

func TestSequenceArithmetic(t *testing.T) {
	for _, c := range []struct{ seq, by, inc, dec int32 }{
		// The values Kafka's own incrementSequence/decrementSequence give.
		{2147483646, 2, 0, 2147483644},
		{2147483647, 1, 0, 2147483646},
		{0, 1, 1, 2147483647},
		{1, 3, 4, 2147483646},
		{5, 0, 5, 5},
		{0, math.MaxInt32, math.MaxInt32, 1},
		{math.MaxInt32, math.MaxInt32, math.MaxInt32 - 1, 0},
	} {
		if got := recordbatch.IncrementSequence(c.seq, c.by); got != c.inc {
			t.Errorf("IncrementSequence(%d, %d) = %d, want %d", c.seq, c.by, got, c.inc)
		}
		if got := recordbatch.DecrementSequence(c.seq, c.by); got != c.dec {
			t.Errorf("DecrementSequence(%d, %d) = %d, want %d", c.seq, c.by, got, c.dec)
		}
		if back := recordbatch.DecrementSequence(recordbatch.IncrementSequence(c.seq, c.by), c.by); back != c.seq {
			t.Errorf("decrement(increment(%d, %d)) = %d", c.seq, c.by, back)
		}
	}
}

// TestLastSequenceWraps: base sequence 2147483646 with 3 records has last
// sequence 0, and its records carry 2147483646, 2147483647, 0.
func TestLastSequenceWraps(t *testing.T) {
	b := recordbatch.NewBuilder(11)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 7, 0, 2147483646
	for i := range 3 {
		if err := b.Append(int64(1000+i), nil, []byte("w"), nil); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := recordbatch.Parse(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.ValidateClient(); err != nil {
		t.Fatal(err)
	}
	if got := batch.LastSequence(); got != 0 {
		t.Fatalf("LastSequence = %d, want 0", got)
	}
	recs, err := batch.DecodeRecords(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{2147483646, 2147483647, 0}
	for i, r := range recs {
		if r.Sequence != want[i] {
			t.Errorf("record %d: sequence %d, want %d", i, r.Sequence, want[i])
		}
	}
}
