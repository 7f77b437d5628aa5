// Package producerstate will hold the idempotent-producer state machine:
// per producer id its epoch and a window of its last 5 accepted batches,
// the checks that accept a batch or answer DUPLICATE, OUT_OF_ORDER or
// FENCED, replay from the log, and expiry. Pure and in memory, no I/O.
//
// Not implemented yet: this package is a placeholder in the layout, and
// exports nothing.
package producerstate
