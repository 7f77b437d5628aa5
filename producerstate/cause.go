package producerstate

import "strconv"

// Cause is the rule behind a refusal: finer than its Outcome, for callers
// that answer each rule differently (a Kafka broker answers an unknown
// producer with UNKNOWN_PRODUCER_ID and a gap in a known producer's
// sequence with OUT_OF_ORDER_SEQUENCE_NUMBER, though both are
// OUT_OF_ORDER here). Decision.Expected and Decision.Got hold the numbers
// the rule compared; the zero Cause, NoCause, is that of OK and Duplicate.
type Cause uint8

// The causes of a refusal, with the Outcome each belongs to and what
// Expected and Got hold.
const (
	NoCause Cause = iota

	// UnknownProducer (OUT_OF_ORDER): a producer the state does not know
	// sent a base sequence other than 0. Expected 0, Got the base
	// sequence.
	UnknownProducer
	// ExpiredProducer (OUT_OF_ORDER): as UnknownProducer, for a producer
	// the state knew but that has expired (see ExpireProducers).
	ExpiredProducer
	// SequenceGap (OUT_OF_ORDER): a known producer, in its current epoch,
	// sent a base sequence that is not the next one and not a retry of a
	// remembered batch. Expected the next sequence, Got the base
	// sequence.
	SequenceGap
	// NewEpochNotAtZero (OUT_OF_ORDER): a batch with a newer epoch than
	// the remembered one does not start at sequence 0. Expected 0, Got
	// the base sequence.
	NewEpochNotAtZero
	// OlderEpoch (FENCED): the batch's (or marker's) producer epoch is
	// older than the remembered one. Expected the remembered epoch, Got
	// the batch's.
	OlderEpoch
	// OlderCoordinatorEpoch (FENCED): a marker's coordinator epoch is
	// older than the remembered one. Expected the remembered coordinator
	// epoch, Got the marker's.
	OlderCoordinatorEpoch
	// OpenTransaction (INVALID_TXN_STATE): a non-transactional batch
	// while the producer's transaction is open. Expected the offset the
	// open transaction began at; Got 0.
	OpenTransaction
	// NotControlBatch (INVALID): CheckMarker was given a batch that is
	// not a control batch.
	NotControlBatch
	// BadMarker (INVALID): the marker's record does not decode as COMMIT
	// or ABORT.
	BadMarker
	// InvalidEpoch (INVALID): a batch or marker with a producer id has an
	// epoch below -1, which no producer has. Expected -1 (the lowest),
	// Got the epoch.
	InvalidEpoch
)

var causeNames = [...]string{
	NoCause:               "NONE",
	UnknownProducer:       "UNKNOWN_PRODUCER",
	ExpiredProducer:       "EXPIRED_PRODUCER",
	SequenceGap:           "SEQUENCE_GAP",
	NewEpochNotAtZero:     "NEW_EPOCH_NOT_AT_ZERO",
	OlderEpoch:            "OLDER_EPOCH",
	OlderCoordinatorEpoch: "OLDER_COORDINATOR_EPOCH",
	OpenTransaction:       "OPEN_TRANSACTION",
	NotControlBatch:       "NOT_CONTROL_BATCH",
	BadMarker:             "BAD_MARKER",
	InvalidEpoch:          "INVALID_EPOCH",
}

// String returns the cause's name, such as SEQUENCE_GAP.
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// Outcome is the outcome a refusal for c has; 0 (no outcome) for NoCause
// and unknown causes.
func (c Cause) Outcome() Outcome {
	switch c {
	case UnknownProducer, ExpiredProducer, SequenceGap, NewEpochNotAtZero:
		return OutOfOrder
	case OlderEpoch, OlderCoordinatorEpoch:
		return Fenced
	case OpenTransaction:
		return InvalidTxnState
	case NotControlBatch, BadMarker, InvalidEpoch:
		return Invalid
	}
	return 0
}
