package metrics

import (
	"errors"

	"github.com/logstore/logstore"
)

// Outcome is what became of a produced batch: the outcome label of
// logstore_produce_batches_total.
type Outcome uint8

// The outcomes, with their label values and the Kafka error code a
// producer gets for each.
const (
	OutcomeOK              Outcome = iota // "ok": written (0)
	OutcomeDuplicate                      // "duplicate": a retry, answered with the first copy's offsets (0)
	OutcomeUnknownProducer                // "unknown_producer": UNKNOWN_PRODUCER_ID (59)
	OutcomeOutOfOrder                     // "out_of_order": OUT_OF_ORDER_SEQUENCE_NUMBER (45)
	OutcomeFenced                         // "fenced": INVALID_PRODUCER_EPOCH (47)
	OutcomeInvalid                        // "invalid": CORRUPT_MESSAGE (2), INVALID_RECORD (87), INVALID_TIMESTAMP (32), UNSUPPORTED_COMPRESSION_TYPE (76), no batch
	OutcomeTooLarge                       // "too_large": MESSAGE_TOO_LARGE (10)
	OutcomeOpenTransaction                // "open_transaction": a plain batch inside the producer's open transaction, INVALID_TXN_STATE (48)
	OutcomeFailed                         // "failed": no refusal but a failure: the partition poisoned (KAFKA_STORAGE_ERROR, 56) or closed
	OutcomeUnknownTopic                   // "unknown_topic": UNKNOWN_TOPIC_OR_PARTITION (3), or the topic could not be created
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	OutcomeOK:              "ok",
	OutcomeDuplicate:       "duplicate",
	OutcomeUnknownProducer: "unknown_producer",
	OutcomeOutOfOrder:      "out_of_order",
	OutcomeFenced:          "fenced",
	OutcomeInvalid:         "invalid",
	OutcomeTooLarge:        "too_large",
	OutcomeOpenTransaction: "open_transaction",
	OutcomeFailed:          "failed",
	OutcomeUnknownTopic:    "unknown_topic",
}

// String returns the outcome's label value.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// OutcomeOf classifies the result of logstore.Partition.Append (or of
// any append that returns the same result and errors, such as
// AppendWritten). It is the one mapping from a refusal's kind to an
// outcome: the metrics count by it, the server's Produce answers take
// their error codes from it, and `logstore append` words its replies
// from it (OUT_OF_ORDER for unknown_producer and out_of_order, FENCED
// for fenced, INVALID for the other refusals). It never returns
// OutcomeUnknownTopic, which is the caller's to know.
func OutcomeOf(res logstore.AppendResult, err error) Outcome {
	if err == nil {
		if res.Duplicate {
			return OutcomeDuplicate
		}
		return OutcomeOK
	}
	var r *logstore.RefusedError
	if !errors.As(err, &r) {
		return OutcomeFailed
	}
	switch r.Kind {
	case logstore.RefusedUnknownProducer:
		return OutcomeUnknownProducer
	case logstore.RefusedSequenceGap, logstore.RefusedNewEpochNotAtZero:
		return OutcomeOutOfOrder
	case logstore.RefusedOlderEpoch:
		return OutcomeFenced
	case logstore.RefusedTooLarge:
		return OutcomeTooLarge
	case logstore.RefusedOpenTransaction:
		return OutcomeOpenTransaction
	}
	return OutcomeInvalid
}
