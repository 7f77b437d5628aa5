package kafkaserver

import "github.com/logstore/logstore/metrics"

// metricsOutcome is the outcome label (package metrics) of each produce
// outcome: one for one.
var metricsOutcome = [...]metrics.Outcome{
	outcomeOK:              metrics.OutcomeOK,
	outcomeDuplicate:       metrics.OutcomeDuplicate,
	outcomeUnknownProducer: metrics.OutcomeUnknownProducer,
	outcomeOutOfOrder:      metrics.OutcomeOutOfOrder,
	outcomeFenced:          metrics.OutcomeFenced,
	outcomeInvalid:         metrics.OutcomeInvalid,
	outcomeTooLarge:        metrics.OutcomeTooLarge,
	outcomeOpenTransaction: metrics.OutcomeOpenTransaction,
	outcomeFailed:          metrics.OutcomeFailed,
	outcomeUnknownTopic:    metrics.OutcomeUnknownTopic,
}
