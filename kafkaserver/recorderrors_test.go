package kafkaserver

import (
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// TestProduceRecordErrors: INVALID_RECORD names the record at fault in
// the partition's RecordErrors (v8+), by its index in the batch, as
// Kafka does, besides the reason in ErrorMessage; a fault of the batch
// as a whole names no record; before v8 the field does not exist.
func TestProduceRecordErrors(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	// Three records, the second numbered 2 instead of 1.
	var section []byte
	for _, d := range []int64{0, 2, 2} {
		section = append(section, testutil.PoisonRecord(d, nil)...)
	}
	h := recordbatch.Header{LastOffsetDelta: 2, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 3}
	bad := recordbatch.AppendBatch(nil, h, section)

	got := producePart(t, c, 9, -1, "t", 0, bad)
	if got.ErrorCode != errInvalidRecord || got.ErrorMessage == nil {
		t.Fatalf("v9: code %d message %v; want %d with a message", got.ErrorCode, got.ErrorMessage, errInvalidRecord)
	}
	if len(got.ErrorRecords) != 1 || got.ErrorRecords[0].RelativeOffset != 1 ||
		got.ErrorRecords[0].ErrorMessage == nil || !strings.Contains(*got.ErrorRecords[0].ErrorMessage, "offset delta 2, want 1") {
		t.Fatalf("v9: RecordErrors %+v; want record 1 with its reason", got.ErrorRecords)
	}
	if got := producePart(t, c, 7, -1, "t", 0, bad); got.ErrorCode != errInvalidRecord || len(got.ErrorRecords) != 0 {
		t.Fatalf("v7: code %d RecordErrors %+v; want %d and none", got.ErrorCode, got.ErrorRecords, errInvalidRecord)
	}
	two := append(batchOf(-1, 0, 0, "y"), batchOf(-1, 0, 0, "z")...)
	if got := producePart(t, c, 9, -1, "t", 0, two); got.ErrorCode != errInvalidRecord || len(got.ErrorRecords) != 0 {
		t.Fatalf("two batches: code %d RecordErrors %+v; want %d and none", got.ErrorCode, got.ErrorRecords, errInvalidRecord)
	}
}
