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
//	00000000000000000000.log.cleaned  a cleaning pass's new segment, being written (and .index.cleaned, ...)
//	00000000000000000000.log.swap     ... decided: it replaces the segments it covers (see "Cleaning")
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
// # Cleaning
//
// Log.Clean (clean.go) is one pass of log compaction, as Kafka's Cleaner
// runs it; deciding when to run it, and for which topics
// (cleanup.policy), is the caller's.
//
//   - The offset map (OffsetMap, offsetmap.go) is Kafka's SkimpyOffsetMap:
//     a fixed table sized from a memory bound, each slot the first 16
//     bytes of the key's SHA-256 (Kafka: MD5, also 16 bytes; collisions
//     among n keys have a chance of about n²/2^129) and the key's last
//     offset. It is full at 90% of its slots. The map covers the dirty
//     range [FirstDirty, upper) of data records with a key (control
//     batches are not mapped); upper is the first segment base at or
//     above the smallest of CleanOptions.Upper (the last stable offset),
//     the active segment's base and the recovery point, so only whole,
//     flushed, sealed segments are cleaned. When a key does not fit, the
//     map stops before it: CleanResult.End is the next pass's FirstDirty,
//     and memory never grows.
//   - The segments from Start's up to the map's end are rewritten in
//     groups (Kafka's groupSegmentsBySize: log bytes within segment.bytes,
//     each index within segment.index.bytes, offsets within an int32 of
//     the group's base), each into one new segment named after the
//     group's first. Its indexes are built by the append rules above, so
//     Verify reads it as any other segment: offsets grow, with gaps.
//   - A record is kept when its offset is past the map's reach, when it
//     has no key (Kafka drops those, which a compacted topic refuses at
//     produce time; here refusing them is the caller's job, and the
//     cleaner keeps what it does not understand), or when it is its key's
//     latest (offset >= map[key]) and is not a tombstone whose batch's
//     delete horizon has passed. Kafka's KIP-534 rules for the horizon: a
//     batch that keeps a tombstone and has no horizon yet gets one, Now +
//     DeleteRetention (delete.retention.ms), stored as its base timestamp
//     with attribute bit 6 set (record timestamp deltas are relative to
//     it, so record timestamps do not change); its tombstones go in the
//     first pass at or after the horizon.
//   - Batches are rewritten as MemoryRecords.filterTo writes them: a
//     batch that keeps every record, and needs no horizon, is copied
//     byte for byte; a partly kept one keeps its base offset and last
//     offset delta (so its last sequence), leader epoch, producer id,
//     epoch, base sequence, codec (recompressed), timestamp type and
//     transactional bit, with the base timestamp of its first kept record
//     (or the horizon), the max timestamp of those kept (LogAppendTime:
//     the original), a new count and CRC. A batch that keeps no record
//     goes, except the last batch of an active producer (CleanOptions.
//     ActiveProducer names its last offset: the producer's epoch and
//     sequence must survive) and the last batch of each group (so that
//     the new segment ends at the offset the group ended: Kafka keeps the
//     last batch of the cleaning round for the same reason); those are
//     kept empty, as writeEmptyHeader writes them: header only, count 0,
//     same offsets, producer fields and flags, no codec, both timestamps
//     the max. Control batches are kept whole unless
//     CleanOptions.DiscardControl lets one go. Aborted transactional data
//     is not removed yet, and a group's .txnindex entries are carried
//     over unchanged (every marker is kept, and offsets do not move).
//   - The swap is Kafka's replaceSegments. The new segment is written as
//     BASE.log.cleaned, BASE.index.cleaned, BASE.timeindex.cleaned (and
//     BASE.txnindex.cleaned when it has entries) and each is synced; each
//     is renamed to .swap, the .log first, and the directory synced:
//     once BASE.log.swap exists the swap is decided. The group's old
//     files are removed and the directory synced; the .swap files are
//     renamed to their final names, the .log first, and the directory
//     synced. Only then does the segment list change, under mu, in one
//     step, so Read never misses a range; a Batches call that took the
//     old segments before keeps their open (unlinked) files, which are
//     closed when the last such reader is done (retention's deletions
//     do the same).
//   - Open, before it lists the segments, finishes what a crash left:
//     *.cleaned files are removed (the pass had not decided); for each
//     BASE.log.swap, every segment whose base lies in [BASE, the swap
//     log's end) is removed and the .swap files get their final names;
//     an index's .swap without its .log.swap is renamed when BASE.log
//     exists (the swap had renamed its log). So a crash at any step
//     leaves either the old segments or the new one, never both, never
//     neither; a new segment without its index files has them rebuilt.
//   - A failure before the swap is decided removes the .cleaned files and
//     leaves the log as it was, usable (damage in the segments is a
//     *CorruptionError); one after it poisons the log, and the next Open
//     finishes the swap. Clean holds ckptMu throughout, so retention,
//     DeleteRecordsBefore and another Clean wait for it; appends, reads
//     and syncs do not (a flush's move of the recovery point waits).
//
// # Locking
//
// A Log has three mutexes, always taken in this order, and one more that
// is a leaf:
//
//   - syncMu: held by group commit's leader while it syncs, and by Close
//     from start to end, so no sync runs on files Close closes.
//   - ckptMu: serialises the checkpoint's writers (a flush moving the
//     recovery point, ApplyRetention, DeleteRecordsBefore, Close) and
//     those that change the sealed segments (Clean). The checkpoint in memory
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
