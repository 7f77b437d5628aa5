// Package producerstate is the idempotent-producer state machine of one
// partition: per producer id its epoch and a window of its last 5
// accepted batches, the checks that accept a batch or answer DUPLICATE,
// OUT_OF_ORDER or FENCED, replay from the log, transactions and expiry.
// It is pure and in memory: no I/O, and no clock of its own (the caller
// passes the current time).
//
// # Use
//
// For each batch a producer sends, after recordbatch's ValidateClient:
//
//	d := st.Check(b, now)          // decides; changes nothing
//	switch d.Outcome {
//	case producerstate.OK:
//		b.SetBaseOffset(logEnd)    // append at the log end, then
//		err = st.Apply(b, now)     // record it, seen at now
//	case producerstate.Duplicate:
//		// answer d.DuplicateFirst, d.DuplicateLast; write nothing
//	default:
//		// refuse with d.Outcome and d.Reason; write nothing. d.Cause
//		// says which rule refused, d.Expected and d.Got the numbers
//		// it compared (an unknown producer and a sequence gap are
//		// both OUT_OF_ORDER, but Kafka answers them differently).
//	}
//
// now is the store's clock, one reading per batch, for both calls.
//
// At startup, FromSnapshot(cfg, snap) (or New(cfg) with SetMapEndOffset
// at the log start; or a Loader, fed one producer at a time by a decoder)
// and then Apply(b, openedAt) for every batch of the log from the
// snapshot's offset on, in order, with the time of the open: Apply checks
// nothing, the log is the truth. Then ExpireProducers(openedAt). Snapshot
// returns the state to save, as of MapEndOffset.
//
// To save the state while holding a lock that appends wait for, as a
// segment roll does, take the copy with Freeze under the lock (a few
// microseconds for 10,000 producers: it copies a pointer per 32
// producers, and the State copies each group of 32 on its first write
// afterwards) and call Frozen.Snapshot outside it, where the sorting and
// the deep copy happen. Snapshot under the lock does all of that work
// there (0.25 ms to over a millisecond for 10,000 producers).
//
// # The rules
//
// Per producer id, for a data batch with epoch e, base sequence s and last
// sequence l, in this order (Check):
//
//  1. No producer id (negative): not checked. An epoch below -1 with a
//     producer id: INVALID, as Kafka refuses it.
//  2. Unknown producer: s must be 0, else OUT_OF_ORDER. Unlike Kafka,
//     this store does not take up a producer mid-stream.
//  3. e older than the remembered epoch: FENCED.
//  4. e newer: s must be 0, else OUT_OF_ORDER; Apply clears the window.
//  5. Same epoch: a remembered batch with exactly (s, l) is DUPLICATE,
//     answered with its original first and last offset. Otherwise s must
//     be the newest remembered l + 1 (2147483647 + 1 is 0; 0 when nothing
//     is remembered in this epoch), else OUT_OF_ORDER. A partial overlap
//     or a retry older than the window is OUT_OF_ORDER.
//  6. Kafka's transaction rule: a non-transactional batch while the
//     producer's transaction is open is INVALID_TXN_STATE.
//
// The window holds the newest WindowSize (5) accepted batches of the
// producer's current epoch, oldest first, as (first sequence, last
// sequence, first offset, last offset, max timestamp); it is always one
// run of consecutive sequences. A marker (COMMIT or ABORT) is checked by
// CheckMarker as Kafka's appendEndTxnMarker does: an older producer epoch
// or an older coordinator epoch is FENCED.
//
// # Transactions
//
// The first transactional batch of a producer with no open transaction
// opens one at its base offset (Entry.TxnFirstOffset); a COMMIT or ABORT
// marker closes it, sets the coordinator epoch and moves the producer to
// the marker's epoch, clearing the window when that differs. A control
// batch with no records changes nothing.
//
// # Expiry and the cap
//
// Each producer keeps two times. LastTimestamp is a record timestamp:
// the max timestamp of its newest batch, or the timestamp of its newest
// marker, as Kafka keeps it. It is the client's data (it may lag the
// clock, lead it, or be -1) and no rule reads it. LastSeen is the
// store's clock, in Unix milliseconds, when the store last accepted a
// batch or marker of the producer: the now given to Apply. At startup a
// producer replayed from the log tail counts as seen at the time of the
// open (the now of that Apply), and a producer loaded without a seen
// time (SeenUnknown, 0: a snapshot written before seen times were kept,
// or Kafka's own snapshot file) is given the now of the next
// ExpireProducers; so a restart never makes a producer expire earlier
// than it would have without one.
//
// A producer with no open transaction expires when now is at least
// Config.ExpireAfter (one day in DefaultConfig; 0 turns expiry off) after
// its LastSeen. Kafka judges expiry on the record timestamp instead; with
// "an unknown producer must start at sequence 0" that would forget a
// live producer whose clock lags (or that sends no timestamps) before
// each of its batches, refusing its next sequence and writing a retry of
// its first batch twice. Check judges an expired producer unknown at
// once; ExpireProducers removes expired producers from memory.
//
// Config.MaxProducers caps the producers: when Apply adds one beyond the
// cap, it forgets the longest-idle ones that have no open transaction:
// lowest LastSeen, then lowest LastApplied (the offset of the producer's
// newest batch or marker), then lowest id. The store's clock does not go
// back, so live this is the order of LastApplied; a replay, which sees
// every producer of the tail at one time, orders them by LastApplied
// too, so it evicts exactly the producers the live state evicted. A
// forgotten producer is unknown again, so its next batch must start at
// sequence 0.
//
// # Invariants
//
//   - Check and CheckMarker never change the state; only Apply,
//     ExpireProducers and SetMapEndOffset do.
//   - Apply is a function of the state, the batch and its now, so the
//     state after FromSnapshot(Snapshot()) plus the batches after it
//     equals the state after replaying the whole log from empty, in
//     everything but the seen times (Snapshot.EqualIgnoringSeen): the log
//     holds no store clock. They are equal outright (State.Equal) when
//     every Apply was given the same now. This holds with a cap too: the
//     cap orders by seen time and then by LastApplied, and with a clock
//     that does not go back both follow the log, so a replay evicts what
//     the live state evicted.
//   - A producer is never seen earlier after a restart than it was
//     before it: the snapshot keeps its seen time, and a replay at open
//     sets it to the open's time.
//   - A retry of any of a producer's last 5 batches, in the same epoch,
//     with no newer epoch since and the producer not expired, is
//     DUPLICATE with its original offsets, before and after a snapshot
//     and restart, whatever the batches' timestamps.
//   - Apply never fails on a log that Kafka or logstore wrote; its only
//     error is a marker record that does not decode.
//
// A State is not safe for concurrent use; the caller serialises. A
// Frozen copy is immutable and may be read from any goroutine while the
// State goes on.
package producerstate
