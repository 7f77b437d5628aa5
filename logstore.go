// Package logstore is a durable, single-node store of Kafka v2 record
// batches, kept on disk in Kafka's own partition format.
//
// A Store is a directory of partitions. Each is a subdirectory named as
// Kafka names it, <topic>-<partition>, holding Kafka segment files
// (<base offset>.log, .index, .timeindex; see package segment):
//
//	DIR/
//	  .lock                  flock: one process opens a store at a time
//	  events-0/              partition 0 of topic "events"
//	    00000000000000000000.log
//	    00000000000000000000.index
//	    00000000000000000000.timeindex
//	    logstore.checkpoint      log start, recovery point, clean-shutdown mark
//	    producer-snapshots.db    bbolt: producer state per segment base offset
//	    logstore.next-segment    while open: the next segment's .log, made ahead
//	    partition.metadata       Kafka's topic id file (written by package catalog)
//	    logstore.transactional   made before its first transactional batch (txnmark.go)
//	  catalog.db             package catalog: cluster id, producer ids, topics
//	  logstore.transactions-tracked  the partitions' transactional marks can be trusted
//	  users.json             package users: the SCRAM credentials SASL listeners check
//
// Store.SetTopicOptions overrides the segment, size and retention options
// for one topic's partitions, the open ones at once. Store.DeleteTopic removes a topic's
// directories durably. It renames each to Kafka's
// <topic>-<partition>.<unique>-delete name, which no listing of partitions
// returns. Then it syncs the store directory and removes them. Open
// removes what a crash left of them.
//
// A Partition appends client batches and reads them back. A batch is
// checked with recordbatch.Batch.ValidateClient, every record is decoded
// with recordbatch.ValidateClientRecords, and then the producer rules of
// package producerstate apply. A refused batch writes nothing. It gets a
// *RefusedError that says why as data. A duplicate is answered with the
// first copy's offsets.
//
// On every segment roll, the partition copies the producer state as of
// the new segment's base offset. It saves the copy as a snapshot in the
// background, so appends never wait for bbolt's commit. The segment log
// syncs the sealed segment in the background too; only an acknowledgement
// that needs it waits. A clean close saves one more snapshot, at the log
// end. At open, the partition deletes snapshots above the recovered log
// end, loads the newest good one and replays the batches after it. So the
// state equals a full replay of the log.
//
// Producers expire after Options.ProducerExpiry idle on the store's
// clock. The store keeps, in the snapshots, the time it last accepted a
// batch of each producer; a producer replayed at open counts as seen
// then. Expiry never looks at record timestamps, which are the client's
// data.
//
// Partitions open on first use and stay open, unless
// Options.MaxOpenPartitions bounds them (a store of more partitions than
// the process has file descriptors for): opening one more then closes
// the least recently used one, preferring those idle for
// Options.EvictIdle, never one a DurableWatcher watches, cleanly (so its
// next open is a clean one: no scan, the snapshot at its end loaded),
// and a *Partition taken before answers ErrClosed; with every open
// partition watched or being opened, Partition answers
// ErrTooManyOpenPartitions. A client's retry of a batch it sent to a
// partition closed so is answered as any retry: a duplicate of the first
// copy, whose window the close's snapshot kept.
//
// Topic names follow Kafka's rules. Every name is checked before any file
// is touched, so no name reaches outside DIR.
//
// # Invariants
//
// Offsets strictly increase. Each accepted batch is stamped with the
// partition's log end offset as its base offset, and the log end moves
// past its last offset; a refused batch takes no offset. A reopened
// partition continues at the end of what it recovered.
//
// What is durable when Append returns depends on Options.Sync:
//
//   - SyncAlways (the default): the batch, and every batch acknowledged
//     before it, has been fsynced; it survives a crash of the process or
//     of the machine. Concurrent appenders share fsyncs (group commit).
//   - SyncInterval(d): the batch is written to the page cache and fsynced
//     within about d. A process crash loses nothing acknowledged; a
//     machine crash can lose the appends of the last interval, and their
//     offsets are then assigned again to later batches.
//   - SyncNever: the batch is written to the page cache and fsynced when
//     its segment rolls (in the background) or by a clean Close. A
//     machine crash can lose any acknowledged batch in the active segment
//     or in one whose roll had not been flushed yet.
//
// Partition.DurableEnd is the offset below which every batch is as
// durable as the mode promises an acknowledged one. Under SyncAlways that
// means fsynced. Under SyncInterval and SyncNever it means written to the
// log, so DurableEnd is the log end. DurableEnd is the high watermark: a
// reader such as a Kafka fetch shows nothing at or above it. After Append
// returns, DurableEnd is above the batch in every mode.
// Partition.SyncTo(end) fsyncs everything below end in any mode, and
// concurrent callers share the fsync. It is the wait Append makes under
// SyncAlways.
//
// In every mode, a failed write or fsync poisons the partition, since the
// page cache may have dropped the data. The call that hit it (or, for
// background work, the next call) and every later call return an error
// matching segment.ErrPoisoned. Under SyncAlways no append is
// acknowledged unless the fsync that covers it succeeded. Reopen the
// store to recover what is on disk.
//
// # Transactions
//
// A transactional batch (Append) opens its producer's transaction at its
// base offset when none is open. Partition.AppendMarker is the
// transaction coordinator's path; clients may not send control batches.
// It writes Kafka's COMMIT or ABORT marker batch, checked as
// appendEndTxnMarker checks it. It returns once the marker is durable, in
// every sync mode. Partition.AppendMarkerWritten is the same without the
// wait. A coordinator that writes several partitions' markers uses it,
// then waits for all of them with SyncTo.
//
// Partition.LastStableOffset is the first offset of the oldest open
// transaction, bounded by DurableEnd; with none open, it is DurableEnd. A
// transaction counts as open from before its first batch is written, so
// DurableEnd never covers a batch the LSO does not hold back. It stays
// open until its marker is below DurableEnd, as Kafka holds the LSO for a
// marker not yet replicated. So a read_committed reader
// (Partition.ReadStable) never reads an undecided transaction's data.
// LastStableOffset takes no lock. It makes a few atomic loads, and reads
// again when DurableEnd moves meanwhile.
//
// An ABORT that ends an open transaction adds Kafka's .txnindex entry to
// the segment holding the marker, byte for byte as Kafka's broker writes
// it. The entry holds the producer id, the first offset, the marker's
// offset, and the last stable offset as Kafka computes it then. That is
// the first offset of the oldest other open transaction, else the
// marker's offset + 1. Partition.AbortedTransactions reads the entries
// back for read_committed fetches.
//
// The .txnindex is derived data. At open, the replay of the log after the
// loaded snapshot also rebuilds the entries of the markers it meets, from
// the open transactions of the snapshot. It rewrites any file that
// disagrees. Entries below the snapshot were synced before it was taken.
// A .txnindex that does not decode below the snapshot makes the open
// rebuild every entry from the log start.
//
// # Locking
//
// A Partition's locks, in the order they are taken (those of its
// segment.Log, described in package segment, come after them):
//
//   - mu (read-write): Append, Read, SyncTo and Flushed hold it for
//     reading; Close holds it for writing, so it waits for the calls in
//     flight and no call starts on a closed partition.
//   - appendMu: the producer check, the log append and the state update
//     as one step, so two batches of a producer cannot both pass the
//     check. It guards the producer state and the newest snapshot save.
//     The log's OnRoll hook (onRoll) runs inside the log append, so under
//     appendMu and the log's own lock: it may only read the log's
//     StartOffset and DurableEnd.
//
// An append's fsync never runs under appendMu. Under SyncAlways, Append
// waits for durability after releasing it, in segment.Log.SyncTo. That is
// group commit: one caller leads each fdatasync, and every caller it
// covered returns when it ends.
//
// A roll's snapshot save runs in a goroutine of its own. It waits for the
// sealed segment's flush to be durable, so bbolt's fsyncs come after the
// ones acknowledgements wait for. Then it saves, and prunes snapshots
// below the log start. The next roll's onRoll waits for it under
// appendMu, so there is one save at a time, in order. The roll also waits
// there for the previous roll's flush, up to its directory sync (see
// package segment). A failed save fails the next append.
//
// SyncInterval's syncer is one goroutine calling segment.Log.SyncTo of
// the log end on each tick. Close stops it before it closes the log.
// Close waits for the save in flight, saves the close snapshot under
// appendMu, then closes the log.
//
// One process per store: Open holds an exclusive flock on DIR/.lock until
// Close. A second Open of the same directory, from another process or
// from this one, waits up to Options.LockTimeout and then fails with
// ErrStoreInUse.
//
// # Events
//
// Options.Events reports what the store does without this package
// knowing who listens; package metrics turns the reports into Prometheus
// metrics. It reports each fsync of group commit, with how long it took
// and the batches and bytes it made durable. It reports each segment
// roll, each snapshot save with its duration and error, and each
// partition open with its duration, the log's RecoveryReport and the
// StartupReport. Hooks run synchronously where the work happens: a roll's
// inside the append that rolled, under appendMu; a sync's after its
// waiters are released, under no lock. So they must be quick. A nil
// Events or hook costs nothing. Store.OpenPartitions and
// Partition.Producers let a scrape read the open partitions without
// opening any.
package logstore

import "errors"

// Sentinel errors of package logstore. They are always wrapped, with the
// partition and store directory they concern (so their own text has no
// package prefix); test them with errors.Is. A refused append is also a
// *RefusedError, which says why as data.
var (
	// ErrStoreInUse: another Store (in this process or another) holds
	// the store directory's lock.
	ErrStoreInUse = errors.New("store in use")

	// ErrInvalidName: a topic or partition number that Kafka would not
	// accept. Nothing was touched.
	ErrInvalidName = errors.New("invalid topic or partition")

	// ErrInvalidBatch: Append refused the bytes as a client batch
	// (RefusedInvalid, RefusedTooLarge, RefusedOpenTransaction). Nothing
	// was written. A refusal of the batch itself also wraps the
	// recordbatch sentinel that says why (recordbatch.ErrCRC,
	// recordbatch.ErrControl, recordbatch.ErrRecord for a record that
	// cannot be decoded, whose message names the record and its byte
	// position, ...).
	ErrInvalidBatch = errors.New("invalid batch")

	// ErrClosed: the Store or Partition was closed.
	ErrClosed = errors.New("closed")

	// ErrTooManyOpenPartitions: Partition would open one more partition
	// than Options.MaxOpenPartitions, and every open one is watched by a
	// DurableWatcher (a long-poll fetch) or being opened. It passes: try
	// again.
	ErrTooManyOpenPartitions = errors.New("too many open partitions")

	// ErrOutOfOrder: the producer check refused the batch: its sequence
	// is not the next one the producer's state expects (or a new epoch
	// does not start at 0, or the producer is unknown). The
	// *RefusedError says which, what was expected and what came. Nothing
	// was written.
	ErrOutOfOrder = errors.New("out of order sequence")

	// ErrFenced: the batch's producer epoch is older than the epoch the
	// partition remembers for that producer. Nothing was written.
	ErrFenced = errors.New("producer fenced")
)
