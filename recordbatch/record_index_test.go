package recordbatch_test

import (
	"errors"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// TestCorruptionErrorRecord: the validation names the index of the
// record at fault, as a broker answers it in RecordErrors, and names
// none for a fault of the batch as a whole.
func TestCorruptionErrorRecord(t *testing.T) {
	rec := testutil.PoisonRecord
	batch := func(count int32, records ...[]byte) recordbatch.Batch {
		var section []byte
		for _, r := range records {
			section = append(section, r...)
		}
		h := recordbatch.Header{LastOffsetDelta: count - 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: count}
		return recordbatch.Batch(recordbatch.AppendBatch(nil, h, section))
	}
	cut := rec(2, nil)
	cut = cut[:len(cut)-3]
	cases := []struct {
		name   string
		b      recordbatch.Batch
		record int // -1: none
	}{
		{"offset delta of record 1", batch(3, rec(0, nil), rec(2, nil), rec(2, nil)), 1},
		{"record 2 cut short", batch(3, rec(0, nil), rec(1, nil), cut), 2},
		{"record 2 missing", batch(3, rec(0, nil), rec(1, nil)), 2},
		{"bytes after the last record", batch(1, rec(0, nil), rec(1, nil)), -1},
	}
	for _, c := range cases {
		err := recordbatch.ValidateClientRecords(c.b, 0)
		var ce *recordbatch.CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v, want a CorruptionError", c.name, err)
		}
		i, ok := ce.Record()
		if c.record < 0 && ok || c.record >= 0 && (!ok || i != c.record) {
			t.Errorf("%s: Record() = %d, %v; want %d (%v)", c.name, i, ok, c.record, err)
		}
	}
	// A header fault names no record.
	b := batch(1, rec(0, nil))
	b[16] = 1
	var ce *recordbatch.CorruptionError
	if _, err := recordbatch.Parse(b, 0); !errors.As(err, &ce) {
		t.Fatalf("magic 1: %v", err)
	}
	if i, ok := ce.Record(); ok {
		t.Errorf("a header fault names record %d", i)
	}
}
