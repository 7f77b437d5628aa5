package logstore

import (
	"errors"
	"strconv"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Refusal is the kind of a refused append: the answer a producer gets.
// The comment of each says the word `logstore append` prints for it and
// the Kafka error code a broker answers it with.
type Refusal uint8

const (
	// RefusedInvalid: the bytes are not a batch a producer may send. Err
	// is the check's error: a *recordbatch.CorruptionError, which
	// matches the recordbatch sentinel of the check that failed, or nil
	// when the batch is followed by more bytes. INVALID. Kafka:
	// CORRUPT_MESSAGE (2) for bytes that do not decode (recordbatch.ErrCRC,
	// ErrTruncated, ErrBatchTooSmall, ErrMagic, ErrUnknownCodec,
	// ErrDecompress), INVALID_RECORD (87) for a batch that decodes but a
	// producer may not send (ErrControl, ErrRecordCount, ErrSequence,
	// ErrRecord), INVALID_TIMESTAMP (32) for ErrTimestamp. A producer
	// epoch below -1 is refused so too, with Cause
	// producerstate.InvalidEpoch and Err nil.
	RefusedInvalid Refusal = iota + 1
	// RefusedTooLarge: the batch is larger than Options.MaxMessageBytes or
	// Options.SegmentBytes. Got is its size, Expected the limit it
	// broke; Err a *recordbatch.CorruptionError (recordbatch.ErrBatchTooLarge)
	// or a *segment.BatchTooLargeError. INVALID. Kafka: MESSAGE_TOO_LARGE
	// (10); Kafka answers RECORD_LIST_TOO_LARGE (18) for a batch larger
	// than a segment.
	RefusedTooLarge
	// RefusedUnknownProducer: the partition does not know the producer
	// (never seen, forgotten, or expired: Cause says which) and the base
	// sequence is not 0. Expected 0, Got the base sequence. OUT_OF_ORDER.
	// Kafka: UNKNOWN_PRODUCER_ID (59).
	RefusedUnknownProducer
	// RefusedSequenceGap: the base sequence of a known producer is not
	// the next one, nor a retry of a batch its window remembers. Expected
	// the next sequence, Got the base sequence. OUT_OF_ORDER. Kafka:
	// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	RefusedSequenceGap
	// RefusedNewEpochNotAtZero: a newer epoch than the partition
	// remembers, whose base sequence is not 0. Expected 0, Got the base
	// sequence. OUT_OF_ORDER. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	RefusedNewEpochNotAtZero
	// RefusedOlderEpoch: the producer epoch is older than the one the
	// partition remembers: the producer was fenced. Expected the
	// remembered epoch, Got the batch's. FENCED. Kafka:
	// INVALID_PRODUCER_EPOCH (47).
	RefusedOlderEpoch
	// RefusedOpenTransaction: a non-transactional batch while the
	// producer's transaction is open. Expected the offset the transaction
	// began at. INVALID. Kafka: INVALID_TXN_STATE (48).
	RefusedOpenTransaction
)

var refusalNames = [...]string{
	RefusedInvalid:           "INVALID",
	RefusedTooLarge:          "TOO_LARGE",
	RefusedUnknownProducer:   "UNKNOWN_PRODUCER",
	RefusedSequenceGap:       "SEQUENCE_GAP",
	RefusedNewEpochNotAtZero: "NEW_EPOCH_NOT_AT_ZERO",
	RefusedOlderEpoch:        "OLDER_EPOCH",
	RefusedOpenTransaction:   "OPEN_TRANSACTION",
}

// String returns the refusal's name, such as SEQUENCE_GAP.
func (k Refusal) String() string {
	if k > 0 && int(k) < len(refusalNames) {
		return refusalNames[k]
	}
	return "Refusal(" + strconv.Itoa(int(k)) + ")"
}

// sentinel is the sentinel error a refusal of kind k matches.
func (k Refusal) sentinel() error {
	switch k {
	case RefusedUnknownProducer, RefusedSequenceGap, RefusedNewEpochNotAtZero:
		return ErrOutOfOrder
	case RefusedOlderEpoch:
		return ErrFenced
	}
	return ErrInvalidBatch
}

// RefusedError is Partition.Append's refusal of a batch: nothing was
// written, and the partition goes on. Find it with errors.As; it also
// matches ErrInvalidBatch, ErrOutOfOrder or ErrFenced (see Refusal), and
// Err's sentinels. Any other error of Append is not a refusal, but a
// failure of the partition (closed, or poisoned by an I/O error).
type RefusedError struct {
	Kind Refusal
	// Cause is the producer rule that refused, for the producer kinds
	// (finer than Kind: an expired producer is
	// producerstate.ExpiredProducer); producerstate.NoCause for the
	// others.
	Cause producerstate.Cause
	// Expected and Got are the numbers the check compared; see Kind.
	Expected, Got int64
	// Reason says what was wrong, without the partition, the store, the
	// package or the position in the batch: what `logstore append`
	// prints after the outcome word.
	Reason string
	// Err is the error of the batch's own check that failed, for
	// RefusedInvalid and RefusedTooLarge; nil otherwise.
	Err error
}

func (e *RefusedError) Error() string {
	if e.Err != nil {
		return e.Kind.sentinel().Error() + ": " + e.Err.Error()
	}
	return e.Kind.sentinel().Error() + ": " + e.Reason
}

// Unwrap returns the sentinel of the refusal's kind, and Err.
func (e *RefusedError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind.sentinel(), e.Err}
	}
	return []error{e.Kind.sentinel()}
}

// refuseBatch is the refusal of a batch that failed a check of its own
// with err: a recordbatch check, or the log's size limit. For Parse's
// size limit (recordbatch.ErrBatchTooLarge) the caller sets Got and
// Expected: the error does not carry them.
func refuseBatch(err error) *RefusedError {
	r := &RefusedError{Kind: RefusedInvalid, Reason: err.Error(), Err: err}
	var ce *recordbatch.CorruptionError
	var tl *segment.BatchTooLargeError
	switch {
	case errors.As(err, &tl):
		r.Kind, r.Reason = RefusedTooLarge, tl.Reason()
		r.Got, r.Expected = int64(tl.Size), min(int64(tl.MaxBatchBytes), tl.SegmentBytes)
	case errors.As(err, &ce):
		r.Reason = ce.Reason()
		if errors.Is(err, recordbatch.ErrBatchTooLarge) {
			r.Kind = RefusedTooLarge
		}
	}
	return r
}

// refuseProducer is the refusal of the producer check's decision d.
func refuseProducer(d producerstate.Decision) *RefusedError {
	r := &RefusedError{Cause: d.Cause, Expected: d.Expected, Got: d.Got, Reason: d.Reason}
	switch d.Cause {
	case producerstate.UnknownProducer, producerstate.ExpiredProducer:
		r.Kind = RefusedUnknownProducer
	case producerstate.SequenceGap:
		r.Kind = RefusedSequenceGap
	case producerstate.NewEpochNotAtZero:
		r.Kind = RefusedNewEpochNotAtZero
	case producerstate.OlderEpoch, producerstate.OlderCoordinatorEpoch:
		r.Kind = RefusedOlderEpoch
	case producerstate.OpenTransaction:
		r.Kind = RefusedOpenTransaction
		r.Reason = d.Outcome.String() + ": " + d.Reason
	default:
		// An epoch below -1, or a marker that does not decode (only
		// CheckMarker decides so, and Append never sends it a batch:
		// ValidateClient refuses control batches).
		r.Kind = RefusedInvalid
		r.Reason = d.Outcome.String() + ": " + d.Reason
	}
	return r
}
