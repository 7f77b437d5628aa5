// Package shutdown turns SIGINT and SIGTERM into a clean stop of a
// long-running command, the same way for every command of logstore
// (append, read, perf, and the network server).
//
// The contract:
//
//   - The first signal cancels the Catcher's context. The command stops
//     taking new work, finishes what is in flight, closes the store
//     cleanly (fsync, snapshot, clean checkpoint), and exits with
//     128 + the signal's number: 130 for SIGINT, 143 for SIGTERM. The
//     error it returns wraps an *Interrupted, which carries that status,
//     so the one place that maps errors to exit statuses maps it too.
//   - A second signal exits at once, with the status of the first,
//     after one line on stderr that says the store was not closed
//     cleanly. Nothing is lost that was acknowledged (acknowledgements
//     follow the sync mode's promise); the next open recovers the store
//     as after a crash.
//
// Why not signal.NotifyContext: its context's cause names the signal
// only as text, so the exit status cannot be derived from it; and until
// its stop function is called it swallows every later signal, so a second
// Ctrl-C during a slow close does nothing, while calling stop early gives
// the second signal the default action, which kills the process by the
// signal instead of exiting with a status and a message.
package shutdown
