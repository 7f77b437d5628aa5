// Package appender is the engine of `logstore append`: it sends batches
// from a Source (the batch of the arguments, the lines of JSON Lines
// input, or the batches of a segment file) to a store, one at a time,
// and prints one reply line for each as soon as the store has answered:
//
//	OK base=<first offset> last=<last offset>
//	DUPLICATE base=<first copy's first offset> last=<its last offset>
//	OUT_OF_ORDER <the sequence expected and the one that came>
//	FENCED <the epochs>
//	INVALID [line N: | batch N at position P: ]<why the batch was refused>
//
// or, as JSON Lines, {"line":3,"outcome":"OK","base":0,"last":1}. The
// word comes from metrics.OutcomeOf, the one classification of an
// append's result. A line of input that cannot become a batch, or whose
// partition cannot be opened, is answered INVALID and the run goes on;
// any other failure ends it. The source is read in a goroutine of its
// own, only when the next item is wanted. So a context done (a signal)
// stops the wait for input at once, and Run.Unsent says from where the
// input was not sent. Errors of a source name its flag (--input,
// --from-log), as the command prints them.
package appender
