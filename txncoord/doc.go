// Package txncoord is the transaction coordinator of `logstore serve`:
// Kafka's classic (pre-KIP-890) transaction state machine for
// transactional producers, its durable state in DIR/transactions.db (an
// append-only record file, one fdatasync per commit),
// and the COMMIT and ABORT markers it writes to the partitions of each
// transaction through a Markers (StoreMarkers(store) on a server). It
// knows no wire protocol: errors are sentinels that the server maps to
// Kafka codes (see errors.go).
//
// # States and transitions
//
// Each transactional id has a producer id, an epoch and a state, with
// Kafka's names and moves (TransactionMetadata):
//
//	Empty          after InitProducerID; no transaction
//	Ongoing        AddPartitions added the first partition (the start
//	               time is taken then); more partitions may be added
//	PrepareCommit  EndTxn(commit) decided; markers being written
//	PrepareAbort   EndTxn(abort), InitProducerID, the timeout or Open
//	               decided an abort; markers being written
//	CompleteCommit every COMMIT marker written; no partitions
//	CompleteAbort  every ABORT marker written; no partitions
//	Dead           not stored: an expired id (see Expiration) is
//	               forgotten, its record replaced by a tombstone; the
//	               value stays reserved in the record's state byte
//
//	Empty, CompleteX --AddPartitions--> Ongoing --EndTxn--> PrepareX
//	PrepareX --markers written--> CompleteX --InitProducerID--> Empty
//	Ongoing --InitProducerID or timeout (epoch bumped)--> PrepareAbort
//	Empty, Ongoing, CompleteX --Open: data a crash left unrecorded
//	        (epoch bumped)--> PrepareAbort
//	Empty, CompleteX --idle past Config.IDExpiration--> (Dead) forgotten
//
// These moves are one table, validPrevious in state.go: for each
// state, the states it may be entered from, as Kafka's
// TransactionState.validPreviousStates. Every change of an id's state
// is checked against it before its record is written (and the
// expiration scan takes only the ids it lets move to Dead). A move it
// does not allow is refused with ErrInvalidTransition and nothing is
// written; that is a bug, or a Dead record, which no coordinator
// writes. Kafka's PrepareEpochFence is not a state here: fencing moves
// Ongoing straight to PrepareAbort at the bumped epoch, the record
// written.
//
// InitProducerID: an unknown id gets a new producer id (from
// ProducerIDs) at epoch 0. A known one in Empty or CompleteX gets its
// epoch bumped (Kafka's prepareIncrementProducerEpoch, with KIP-360's
// rules when the producer names its producer id and epoch: the current
// epoch bumps, the previous epoch is a retry and gets the current one
// again, any other is ErrProducerFenced), or, when its epoch is
// exhausted (32766 or more: Kafka's isEpochExhausted), a new producer id
// at epoch 0 (the old one is kept as the previous producer id, so a
// retry naming it at its exhausted epoch is recognised). In Ongoing the
// producer is fenced: the epoch is bumped, the transaction moves to
// PrepareAbort with that epoch and its ABORT markers are written, and
// then the Empty path above runs as Kafka's retry would (so the answer
// is the epoch bumped twice, or a new producer id). In PrepareX it
// answers ErrConcurrentTransactions (51), as Kafka.
//
// AddPartitions, EndTxn: the producer id must be the current one
// (else ErrInvalidProducerIDMapping) and the epoch exactly the current
// one (else ErrProducerFenced), then the state is checked as in Kafka's
// handleAddPartitionsToTransaction and endTransaction. EndTxn in Empty
// is ErrInvalidTxnState, as Kafka answers it; in CompleteX with the same
// decision it succeeds (a retry), with the other it is
// ErrInvalidTxnState.
//
// A call that changes an id's state marks it pending until its writes
// are done; any other call for the id meanwhile gets
// ErrConcurrentTransactions (Kafka's pendingTransitionInProgress).
//
// Timeouts: every Config.CheckInterval a scan takes each Ongoing
// transaction whose start plus timeout is before now, bumps its epoch
// (fencing the producer: its EndTxn then gets ErrProducerFenced and its
// produces ErrInvalidProducerEpoch, as with Kafka) and aborts it with
// that epoch. It also finishes a PrepareX whose marker writes failed.
//
// Expiration: the same scan (every Config.CheckInterval, 10 seconds;
// Kafka checks every
// transactions.remove.expired.transaction.cleanup.interval.ms, an hour,
// but the scan already visits every id, so riding it costs little:
// BenchmarkExpireIDs measured 0.66 ms per scan of 10,000 ids, none idle)
// expires transactional ids, as Kafka's TransactionStateManager does
// with transactional.id.expiration.ms: an id in Empty, CompleteCommit or
// CompleteAbort whose last update (when its record was last written,
// kept in the record) is Config.IDExpiration (7 days) or more before
// now, and which no call is changing, is marked pending (any call for
// it meanwhile gets ErrConcurrentTransactions, as Kafka's pending Dead),
// its tombstone is committed (durably, waited for), and then it is
// forgotten: Describe and List no longer show it (the server answers
// DescribeTransactions with TRANSACTIONAL_ID_NOT_FOUND, as for an id
// never seen), and AddPartitions, EndTxn and BeginProduce of its old
// producer get ErrInvalidProducerIDMapping. An id with a transaction
// Ongoing or in PrepareX never expires, however old. Coming back, an id
// is a new one: InitProducerID gives it a new producer id (ProducerIDs
// never hands out one twice) at epoch 0. A negative IDExpiration turns
// expiration off. Each expired id is reported as EventExpired.
//
// # Produces and markers
//
// BeginProduce admits a transactional batch: the id's producer id and
// epoch, state Ongoing, the partition added. It holds the id's produce
// lock shared until the caller's release; writing markers holds it
// exclusively. So a batch admitted is appended before the marker of its
// transaction, and a batch that arrives once the markers are being
// written waits, then finds the state changed and is refused: no batch
// of a transaction can land after its marker in a partition (where it
// would open a transaction nobody ends, holding the partition's last
// stable offset back forever).
//
// # File format
//
// transactions.db is an append-only record file at the store root, on
// the real OS (like catalog.db), version 2 of the format (version 1 was
// a bbolt file: see Conversion below). It is a file of package
// internal/metalog, which writes, replays, compacts and locks it (and
// groups.db, with another magic). This package chooses its magic, its
// 2-byte key lengths, the coordinator epoch as the file's meta value
// (payload type 1), and the check of its records. All integers
// big-endian:
//
//	header (16 bytes)
//	0      8    magic "LSTXNLOG"
//	8      4    format version (2)
//	12     4    CRC-32C (Castagnoli) of bytes 0-11
//	frames, one after the other to the end of the file:
//	0      4    payload length n (1 to 2^30)
//	4      4    CRC-32C of the payload
//	8      n    payload: a type byte, then
//	            1 (coordinator epoch): the epoch (4, >= 0)
//	            2 (puts): one or more entries, each: id length (2, > 0),
//	            the transactional id, record length (4), the record;
//	            a record length of 0 is a tombstone: the id expired
//	            3 (close): nothing; Close appends it after its last
//	            commit, so it ends the file of a clean close only
//
// A record (an id's whole state; the last put of an id wins, and a
// tombstone after it removes the id) is:
//
//	offset size field
//	0      1    record version (2, or 3 for a PrepareX with first offsets)
//	1      1    state: 0 Empty, 1 Ongoing, 2 PrepareCommit,
//	            3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort, 6 Dead
//	2      8    producer id (>= 0)
//	10     2    producer epoch (>= 0)
//	12     8    previous producer id (-1: none)
//	20     2    last producer epoch (-1: none)
//	22     4    transaction timeout, ms (> 0)
//	26     8    start of the ongoing transaction, Unix ms
//	            (>= 0 in Ongoing and PrepareX, -1 in Empty; CompleteX
//	            keeps the start of the transaction it ended, as Kafka
//	            does, or -1 in records written before it was kept)
//	34     4    unused, 0
//	38     8    last update, Unix ms (>= 0): when the record was written
//	46     4    partition count n (> 0 exactly in Ongoing and PrepareX)
//	50     ...  n partitions, sorted by topic then partition:
//	            topic length (2, > 0), topic, partition (4, >= 0), and
//	            in version 3 the first offset of the transaction's data
//	            there when it was decided (8, >= -1; -1: none)
//
// Record version 3 is written for every PrepareX since first offsets
// were kept, version 2 for every other record; a build before that
// reads version 2 only, so it refuses (ErrDamaged) a file with a
// decision not yet finished. Record version 1, which builds before expiration wrote, is the same
// without the last update (the partition count at 38, the partitions
// at 42). It is still read; Open stamps such a record with its own time
// and writes it as version 2 in the file it writes anew, so an id idle
// since before the upgrade expires IDExpiration after the first Open
// that read it.
//
// Invariants. The first frame is the coordinator epoch record, and it
// is the only one (a close record, if any, is the last frame): Open writes the file anew with the next epoch
// (incremented at every Open and written into every marker of that
// Open, so a marker written again after a restart has a coordinator
// epoch no older than one already in the partition). Every frame after
// it is one commit of the committer (below): all the puts it carried,
// under one CRC, appended in one write and synced (one fdatasync)
// before the next commit is appended. A file at the name transactions.db
// is always whole up to its last commit: it only ever comes into place
// by a rename of a file written and synced before (see Rewrites).
//
// Open replays the file: the state is the last put of each id, minus
// the ids whose last entry is a tombstone. It reads
// the file whole (so no length is ever allocated for: each is checked
// against the bytes left) and checks every length, CRC and field. The
// first frame that is cut off, has a length of 0 or over the limit, or
// fails its CRC ends the replay: a torn tail, the last commit a crash
// interrupted before its sync returned (whose caller got no answer).
// Open logs it (the file, the offset of the tail, its size, why) and
// leaves it out of the file it writes. Two things are not taken for a
// torn tail, and make Open fail with an error that matches ErrDamaged
// and names the file and the byte offset (a *DamagedError, with the
// transactional id when known): a frame that fails its CRC with a good
// frame after it (a later commit was appended, so this one had been
// synced: the file was damaged in place), and a frame whose CRC is
// right but whose payload or record does not decode (it was written
// so). A bad header, an unknown format version, and a file without its
// epoch record are ErrDamaged too. It never guesses.
//
// Rewrites. Open, and a commit after which the file is larger than
// Config.CompactBytes (1 MiB) and twice its live records, write the file
// anew: the header, the epoch record, the live records (in frames of
// about 1 MiB; an expired id and its tombstone are not live, so a
// rewrite drops both), into transactions.db.new (TmpFileName), fdatasync, then
// rename it over transactions.db and sync the directory. A crash before
// the rename leaves the old file whole and the tmp file, which is
// ignored and replaced by the next rewrite; after the rename, the new
// file holds the same state (if the directory sync is lost, the old
// name comes back with the old file, also the same state). A rewrite at
// Open is also what drops a torn tail and creates the file in a new
// store. A compaction that fails before its rename leaves the old file,
// which the committer keeps appending to; one whose directory sync
// fails has the sync retried before the next commit is appended.
//
// Conversion. A transactions.db that does not start with the magic is
// taken for the previous format, a bbolt file: bucket "meta" with
// "version" (1 byte, 1) and "coordinator-epoch" (4 bytes), bucket
// "transactions" mapping an id to a record as above. Open reads it with
// bbolt (under bbolt's exclusive lock; nothing in it is changed), checks
// it as the previous version did (a file bbolt cannot open or that
// makes it panic, an unknown version, a record that does not decode:
// ErrDamaged, a *DamagedError naming the bucket and key), and writes
// the new file by the same rewrite, with the coordinator epoch plus
// one: the rename over the bbolt file is what removes it. A crash
// before the rename leaves the bbolt file, converted again at the next
// Open; after it, the new file. No other step writes anything.
//
// Locking. The coordinator holds an exclusive flock on the file for as
// long as it is open (a rewrite locks the new file before its rename).
// Read takes a shared one, waiting at most its timeout (ErrInUse), and
// after taking it checks that the file it locked is still the one named
// transactions.db (a compaction may have renamed a new one in
// meanwhile; then it starts again). The lock is the kind bbolt takes,
// so the previous format's readers are excluded the same way.
//
// Read (for `logstore producers`) reads the file under its shared lock
// and changes nothing: no coordinator epoch bump, no decision finished,
// a torn tail left for the next Open (it reports what is before it), a
// bbolt file read as it is.
//
// # Durability and crash behaviour
//
// Writes go through one committer goroutine that commits every write
// queued while the previous commit ran in one commit (one frame, one
// write, one fdatasync), so concurrent transactions share commits
// without a timer (BenchmarkTransaction: 1.0 commit per transaction
// with one producer, 0.24-0.26 with 8). A commit is whole or, torn by a crash, dropped
// whole, as a bbolt transaction was. A lazy write
// (the caller does not wait) costs no commit of its own: the committer
// holds it until the next write that is waited for, and commits it
// with (before) that one; with none, after at most a second, or at
// Close. A newer write of the same transactional id replaces a held
// one, which is then never written: a producer's CompleteX is usually
// replaced by its next transaction's AddPartitions.
// Which writes are waited for before answering:
//
//   - InitProducerID's new mapping: yes. Otherwise a crash could hand the
//     same epoch to a second producer, or unfence the fenced one.
//   - AddPartitions: no, a lazy write (AddPartitionsDurable, which the
//     server uses for the group offsets partition of AddOffsetsToTxn:
//     yes). The transaction's decision carries it to disk at the
//     latest (same id: the PrepareX replaces it, and lists its
//     partitions). A crash before that leaves data of the transaction
//     in partitions the file does not list, and maybe a PrepareX of the
//     id's previous transaction as its last record (the previous
//     CompleteX was held, then replaced). Two rules make that safe.
//     First, a PrepareX keeps, per partition, the first offset of the
//     transaction's data there when it was decided (-1: none), and a
//     marker written for it at Open is due only where the producer's
//     open transaction still begins there, or, for -1, where none is
//     open (Decision.Due): the previous decision never ends the new
//     transaction, whose data begins later. Second, an Open that
//     follows a crash (the file does not end with the close record
//     Close appends after its last commit) lists the partitions' open
//     transactions (Markers.OpenTransactions, which opens every
//     partition) and aborts each one of a transactional id's current
//     producer id that the id's record does not list, with the id's
//     ongoing transaction, at the epoch bumped: the producer is fenced,
//     so its EndTxn, never answered (its decision would have carried
//     the AddPartitions), is refused rather than taken for a retry of
//     the decision on disk. An open transaction of a producer id no id
//     maps to is logged and left (it is not the coordinator's). The
//     group offsets partition leaves no data a partition could list,
//     so AddOffsetsToTxn's write is waited for; and since it replaces
//     the id's record, pending transactional offsets exist only while
//     the file says the id is Ongoing with that partition.
//   - PrepareX: yes, before any marker is written. A crash after some
//     markers leaves PrepareX on disk, and Open writes the markers still
//     due, then CompleteX: every partition ends with the same decision.
//   - The markers: a decision's markers are all written, and EndTxn
//     answers; then they are waited for together, in the background
//     (Markers.WriteMarkers's sync; StoreMarkers syncs the partitions
//     concurrently). No record of the id after the PrepareX may reach
//     the file before they are durable: CompleteX is queued only then,
//     the next transaction's lazy AddPartitions is not queued meanwhile
//     (its record is, with the CompleteX's, once they are), and every
//     waited write of the id (the next PrepareX, InitProducerID, a
//     tombstone) waits for them first, trying their sync again if the
//     background wait failed, and failing while it fails. Which of them
//     a crash keeps does not matter: the file says PrepareX until then,
//     and Open writes the ones lost. A Close while such a wait has
//     failed writes no close record (the ids' later records were never
//     queued, so the next Open must look for their data). The last
//     stable offset passes the transaction only once its marker is
//     durable, so a read_committed consumer sees it a sync after the
//     answer, as Kafka's consumers see a transaction once its
//     asynchronously written markers are replicated.
//   - CompleteX: no (a lazy write, see above: committed with the next
//     waited-for write, within a second, or at Close, or replaced by the
//     id's next write). If a crash loses it, or it was never written, the
//     file still says PrepareX and Open writes the markers again. That
//     writes only the markers still due (see AddPartitions above): it
//     skips a partition whose marker is there, and one where a later
//     transaction of the producer is open. (A decision recorded before
//     record version 3 has no first offsets; its markers are all
//     written again, which was safe under the build that wrote it, whose
//     AddPartitions was durable: a marker for a producer with no open
//     transaction ends nothing.) Replacing a held CompleteX
//     by a newer write of the id (AddPartitions' Ongoing, or
//     InitProducerID's Empty) is the same as committing both in one
//     commit: the file goes from PrepareX to the newer record (or, if a
//     crash loses a lazy AddPartitions, stays at PrepareX: see above),
//     and the markers of the PrepareX were durable before the CompleteX
//     was queued. After a
//     crash, Read (and so `logstore producers`) may show PrepareX for a
//     transaction already answered as ended; the next Open finishes it.
//   - The coordinator epoch at Open: yes, before any marker.
//   - An expiry's tombstone: yes, before the id is forgotten in memory.
//     The tombstones of one scan are queued together and share commits
//     (the committer takes everything queued while its previous commit
//     ran, its queue unbounded);
//     each is whole or not there. A crash that loses one
//     leaves the id as it was (idle, so it expires again at the next
//     scan after Open); a returning id's new mapping is queued after the
//     tombstone, so the file never has the tombstone after it. A failed
//     tombstone commit leaves the id as it was, in memory and on disk.
//
// Open finishes every PrepareX (the markers due, then a durable
// CompleteX), then, after a crash, aborts the transactions no record
// lists, before it returns. Ongoing transactions the file lists stay
// Ongoing, with their start time, and the timeout scan aborts them when
// due. So after a crash at any point every transaction ends committed
// in every partition or aborted in every partition.
//
// Failures that are not crashes: a failed commit leaves the state in
// memory as it was (the caller gets the error, the server answers 15
// and the client retries). Its frame may have reached the file (a sync
// that fails says nothing of what was written), so the committer
// writes the file anew from the state before the commit (a rewrite, as
// above) and carries on with that file (a lazy write the commit carried
// is then in memory but not in the file, so Close writes no close
// record after a failed commit: the next Open looks for the data no
// record lists); if that fails too, every later
// commit fails (the file is in a state the committer does not know)
// until the coordinator is opened again, whose replay then decides: the
// failed commit's decision may be there (a PrepareX is then finished,
// and a client's retry of its EndTxn is answered as a retry) or not. A failed marker write leaves PrepareX (in
// memory and on disk); an EndTxn retry of the same decision or the next
// scan writes the markers again.
//
// # Limits
//
// Each transactional id costs a record and a little memory until it
// expires (Config.IDExpiration, 7 days idle, as Kafka); with expiration
// off (negative), until deleted by hand. A build before expiration
// cannot read a file this one wrote (record version 2): it reports
// ErrDamaged rather than guess.
package txncoord
