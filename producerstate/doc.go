// Package producerstate is the idempotent-producer state machine of one
// partition: per producer id its epoch and a window of its last 5
// accepted batches, the checks that accept a batch or answer DUPLICATE,
// OUT_OF_ORDER or FENCED, replay from the log, transactions and expiry.
// It is pure and in memory: no I/O.
package producerstate
