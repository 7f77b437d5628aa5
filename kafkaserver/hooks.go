package kafkaserver

import (
	"errors"

	"github.com/logstore/logstore"
)

// The places where the server's metrics are taken, each called from one
// place: finished (dispatch.go) once per request, with its key, version,
// error code and duration; produced once per partition of a produce;
// and the byte counts of frames read and written. They do nothing until
// a metrics registry is wired in (Config gains it then).

// produceOutcome is what a partition of a produce came to.
type produceOutcome uint8

const (
	outcomeOK produceOutcome = iota
	outcomeDuplicate
	outcomeUnknownProducer
	outcomeOutOfOrder
	outcomeFenced
	outcomeInvalid
	outcomeTooLarge
	outcomeOpenTransaction
	outcomeFailed // not a refusal: the partition failed, or is closed
	outcomeUnknownTopic
)

var produceOutcomeNames = [...]string{
	outcomeOK:              "ok",
	outcomeDuplicate:       "duplicate",
	outcomeUnknownProducer: "unknown_producer",
	outcomeOutOfOrder:      "out_of_order",
	outcomeFenced:          "fenced",
	outcomeInvalid:         "invalid",
	outcomeTooLarge:        "too_large",
	outcomeOpenTransaction: "open_transaction",
	outcomeFailed:          "failed",
	outcomeUnknownTopic:    "unknown_topic",
}

func (o produceOutcome) String() string { return produceOutcomeNames[o] }

// outcomeOf classifies an append's result.
func outcomeOf(res logstore.AppendResult, err error) produceOutcome {
	var r *logstore.RefusedError
	switch {
	case err == nil && res.Duplicate:
		return outcomeDuplicate
	case err == nil:
		return outcomeOK
	case !errors.As(err, &r):
		return outcomeFailed
	}
	switch r.Kind {
	case logstore.RefusedUnknownProducer:
		return outcomeUnknownProducer
	case logstore.RefusedSequenceGap, logstore.RefusedNewEpochNotAtZero:
		return outcomeOutOfOrder
	case logstore.RefusedOlderEpoch:
		return outcomeFenced
	case logstore.RefusedTooLarge:
		return outcomeTooLarge
	case logstore.RefusedOpenTransaction:
		return outcomeOpenTransaction
	}
	return outcomeInvalid
}

// produced is called once per partition of a produce request, with the
// batch's size.
func (s *Server) produced(id logstore.PartitionID, o produceOutcome, bytes int) {
	s.cfg.Metrics.ProduceBatch(metricsOutcome[o])
	if o == outcomeDuplicate {
		s.log.Debug("kafka produce: duplicate answered with the first copy's offsets", "partition", id.String(), "bytes", bytes)
	}
}

// bytesRead and bytesWritten count request and response frames.
func (s *Server) bytesRead(n int)    { s.cfg.Metrics.BytesIn(n) }
func (s *Server) bytesWritten(n int) { s.cfg.Metrics.BytesOut(n) }
