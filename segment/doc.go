// Package segment keeps one partition's log as Kafka keeps it on disk: a
// directory of segments, each three files named by the segment's base
// offset in 20 digits.
//
//	00000000000000000000.log        record batches (format v2), concatenated, no header
//	00000000000000000000.index      sparse offset index: entries of 8 bytes
//	                                  int32 offset - base | int32 byte position in .log
//	00000000000000000000.timeindex  time index: entries of 12 bytes
//	                                  int64 timestamp | int32 offset - base
//	00000000000000000000.txnindex   aborted transactions, only once one is aborted: entries of 34 bytes
//	                                  int16 version 0 | int64 producer id | int64 first offset |
//	                                  int64 last offset (the ABORT marker) | int64 last stable offset
//	00000000000000004096.log ...    the next segment, named by its first offset
//	logstore.checkpoint             log start offset, recovery point, clean-shutdown mark
//	logstore.next-segment           while open: the next segment's .log, made ahead
//	logstore.next-index             ... and its .index
//	logstore.next-timeindex         ... and its .timeindex
//	00000000000000004096.log.cut-817  bytes recovery cut off that segment at byte 817, kept
//
// The index rules are Kafka's (LogSegment): an offset-index entry maps a
// batch's last offset to its start position and is added when more than
// index.interval.bytes were written since the last entry (so a segment's
// first batch never gets one); a time-index entry, (largest timestamp so
// far, last offset of the batch that has it), is added beside it when the
// timestamp grew, and once more when the segment is sealed. Index files
// hold exactly their entries: Kafka's preallocated, untrimmed or
// zero-tailed files are read (the zero slots dropped) and rewritten.
// Open reads no more of an index than its segment can justify (one entry
// per batch, a batch at least 61 bytes): a zero-padded or sparse
// multi-GiB index costs what its log allows, not what its length claims,
// and an index with more real entries than that is rebuilt from the log.
//
// The .txnindex (txnindex.go) is Kafka's TransactionIndex: Log.AppendAbortedTxn
// adds an entry to the active segment, the one holding the ABORT marker,
// creating the file at its first entry (Kafka opens it lazily) and
// syncing it at each entry, so an entry is durable before any producer
// snapshot taken after it. Entries have increasing last offsets, none
// below the segment's base; Log.AbortedTxns collects the entries that
// overlap a range by Kafka's collectAbortedTxns rules (from the segment
// holding the start, stopping at an entry whose last stable offset
// reaches the upper bound). It is derived data: at open, entries whose
// marker is at or past the recovered segment end are dropped (the file
// rewritten), a file that does not decode is reported in
// RecoveryReport.DamagedTxnIndexes and starts empty, and the caller (the
// root package, which holds the producer state the last stable offsets
// need) rebuilds entries from the log with Log.SetTxnIndex. Retention
// deletes it with its segment; a .txnindex without its .log is removed as
// an orphan, and one whose segment a recovery drops goes with it.
//
// # Invariants
//
//   - Offsets strictly increase across the whole log; a segment's base
//     offset is the base offset of its first batch (or, when empty, the
//     offset its first batch will get).
//   - A segment rolls before a batch that would push it past
//     segment.bytes, when it is older than segment.ms (by the batches'
//     timestamps, or the clock when they have none), when an index is
//     full, or when an offset would not fit int32 relative to its base.
//   - Append writes and does not sync; SyncTo(end) makes every offset
//     below end durable (fdatasync of the active segment) without
//     blocking appends meanwhile, and DurableEnd says how far the log is
//     durable. Concurrent callers share one fdatasync (group commit).
//   - A roll only finishes the active segment (its closing time index
//     entry) and goes on in the spare files (logstore.next-*, whose
//     directory entries are already durable): no creation, rename or
//     sync under the append lock. The sealed segment is flushed in the background:
//     its log; then the spare files are renamed to the new segment's
//     names, new spares created and the directory synced; then the sealed
//     segment's indexes; then the checkpoint's recovery point moves to
//     the new base. Sync waits for the sealed log before it calls
//     anything in the new segment durable, never for a directory sync: a
//     crash that loses the renames leaves the batches in the spare .log,
//     which Open names after its first batch's base offset. A roll waits
//     for the previous roll's flush up to its directory sync, so at most
//     one sealed segment is not yet durable. Everything below the
//     recovery point is durable.
//   - Indexes are derived data: appends do not wait for them, and a crash
//     rebuilds them from the log.
//   - After an unclean shutdown, Open scans every batch (size, magic,
//     CRC) from the segment holding the recovery point, rebuilds the
//     scanned indexes, syncs what it kept and says what it cut
//     (RecoveryReport). A torn write can only lie at or above the
//     recovery point, in the last segment or in the one before it (a
//     roll whose flush had not finished: torn, or ending below the last
//     segment's base because whole batches never reached the disk). Open
//     cuts there, and in the second case deletes the last segment, which
//     held nothing acknowledged. What a cut takes is kept, not thrown
//     away: the bytes cut off a segment are copied to
//     <segment>.log.cut-<byte position> and synced before the log is
//     truncated (an open that a crash interrupts leaves them in the log,
//     and the next open copies them again under the same name), and a
//     deleted last segment's .log is renamed to <segment>.log.cut-0; a
//     name taken by other bytes gets ".1", ".2", ... (RecoveryReport.
//     CutFiles). Nothing reads or removes these files; check lists them.
//     Kafka leaves them alone too: its LogLoader acts only on the
//     suffixes after the last dot .log, .index, .timeindex, .txnindex,
//     .snapshot, .deleted, .cleaned and .swap, and kafka-dump-log.sh
//     prints "Ignoring unknown file" for one. Damage anywhere else is
//     returned as a *CorruptionError and never cut. (Kafka would cut
//     there and delete every later segment.) These decisions are made
//     once, by the planner in plan.go, from the directory listing, the
//     checkpoint and what the scan of each segment found: Open carries
//     them out and Verify reports them, so check's "the next open cuts
//     ..." is what the open does.
//   - Every reader frames batches in a file with recordbatch.NextFrame,
//     Kafka's file-iteration rules: 17 bytes or fewer left, or a batch
//     running past the end, is a torn tail; a length field below 14 is
//     corruption nothing can be read past. StreamReader (stream.go)
//     frames a segment read from an io.Reader the same way (a stream
//     of unknown length, whose end is found by reading), for a file
//     outside any Log, such as `logstore append --from-log`.
//   - A failed write or sync poisons the Log: every later call returns
//     an error matching ErrPoisoned, since the page cache may have dropped
//     the data. Close then leaves no clean mark, so the next Open recovers.
//   - The log start only grows. Retention moves it to a segment's base;
//     DeleteRecordsBefore (Kafka's DeleteRecords) to any offset up to
//     DurableEnd, inside a segment too, whose earlier batches then stay
//     in the file, unread (Read refuses offsets below the start), until
//     the whole segment is below it and goes. The checkpoint holding the
//     new start is synced before any file below it is removed, so a
//     crash never brings back what was deleted, nor leaves a start past
//     the recovered end. A directory without a checkpoint of its own
//     (one a Kafka broker wrote) starts at the larger of its first
//     segment's base and Config.AdoptedLogStart, the start the broker
//     kept in its log dir's log-start-offset-checkpoint, so what Kafka
//     deleted stays deleted; from that open on the checkpoint holds it.
//   - Every file operation goes through vfs.FS, so tests inject faults.
//
// # Locking
//
// A Log has three mutexes, always taken in this order, and one more that
// is a leaf:
//
//   - syncMu: held by group commit's leader while it syncs, and by Close
//     from start to end, so no sync runs on files Close closes.
//   - ckptMu: serialises the checkpoint's writers (a flush moving the
//     recovery point, ApplyRetention, DeleteRecordsBefore, Close). The checkpoint in memory
//     changes under ckptMu and mu both, so either one is enough to read
//     it.
//   - mu (read-write): the segment list, the poison error, closed, the
//     newest flush, and the active segment's state (size, next offset,
//     timestamps, index entries), and the settings Reconfigure changes
//     (segment size and age, batch limit, retention): Append, a roll and
//     Reconfigure hold it for writing, Read, OffsetForTime, EndOffset and
//     the like for reading. Under it
//     nothing waits for the disk but an append's writes (the batch, a
//     block of index entries), a roll's wait for the previous roll's
//     flush up to its directory sync, and Close's last sync and
//     checkpoint.
//   - gcMu, the leaf: guards whether a leader is syncing and the channel
//     it closes when done (syncEnd). Nothing else is taken under it, and
//     nobody waits while holding it.
//
// StartOffset and DurableEnd are atomics and take no lock.
//
// Group commit (SyncTo): a caller whose end is durable returns at once.
// Otherwise, if no leader is syncing, the caller becomes one; if one is,
// the caller waits for its syncEnd and looks again (the running sync may
// have started before the caller's append). The leader reads the active
// segment and the newest flush under mu, releases it, fdatasyncs the
// active .log, waits for the pending flush's sealed .log sync
// (flush.logSynced: never for a directory sync), moves durable under mu
// and closes syncEnd: everyone it covered returns at once, and one of
// the rest leads the next sync. Only then, under no lock, does the
// leader call Config.OnSync with the fsync's duration and the batches
// and bytes appended since the previous one (SyncInfo).
//
// Who owns a sealed segment: a roll (under mu) writes the segment's
// closing time index entry and makes it sealed; from then on nothing
// changes its offsets, size or index entries, and readers use them
// under mu as before. The roll's flush goroutine owns the rest: the
// fdatasync of its .log, the write-out of its index entries (the index
// files and how much of them is written, touched without mu: readers
// use only the entries in memory) and the sync of its index files. A
// leader may fdatasync the same .log beside it. The flush ends in this
// order, and each step is a channel others wait on: logSynced (the
// sealed .log is durable: what a sync waits for), durable (the spare
// files renamed to the new segment's names, the next spare made and the
// directory synced: what the next roll waits for, under mu, and what
// OnRoll's sealed channel closes on), then its index files synced,
// then, taking ckptMu and mu, the recovery point moved past the
// segment and DurableEnd to the new base, then retention, then done.
// Until the recovery point has passed a sealed segment (its flush wrote
// its last byte before), retention leaves it alone; from then on
// nothing writes to it, and retention or Close closes its files. The flush takes no lock
// before durable is closed, since a roll waits for that holding mu; and
// nobody waits for done holding mu or ckptMu, which the flush takes
// after durable. Close waits for the newest flush's done (each flush
// waits for the one before it) before it takes ckptMu.
//
// The spare files (sparePipe): a channel holding at most one set of
// open files for the next segment. Open fills it; a roll takes the
// spare under mu after the previous flush's durable; that roll's flush
// renames the taken files to the new segment's names, creates the next
// spare and puts it in the channel, and its one directory sync makes
// both durable. Close closes a spare still in the channel, after every
// flush has ended.
//
// Config.OnRoll runs inside Append, with mu held for writing, after the
// new segment is active and before the batch that caused the roll is
// written. It may read StartOffset and DurableEnd, take locks of its
// own, and start work that waits for sealed (closed with the flush's
// durable, or when the flush failed before it). It must not call any
// other method of the Log (mu is not reentrant: a deadlock), nor wait
// for anything that needs mu, and it should not wait for sealed itself:
// that holds every append for an fdatasync and a directory sync. An
// error from it fails the append; the roll has happened, and the log
// stays usable.
//
// Legacy message sets (magic 0 and 1) are not read: Open refuses a
// directory holding them rather than cutting them away.
package segment
