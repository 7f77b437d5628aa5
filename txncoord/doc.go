// Package txncoord is the transaction coordinator of `logstore serve`:
// Kafka's classic (pre-KIP-890) transaction state machine for
// transactional producers, its durable state in DIR/transactions.db,
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
//	PrepareAbort   EndTxn(abort), InitProducerID or the timeout decided
//	               an abort; markers being written
//	CompleteCommit every COMMIT marker written; no partitions
//	CompleteAbort  every ABORT marker written; no partitions
//	Dead           not used (Kafka's expired ids; this coordinator does
//	               not expire transactional ids yet)
//
//	Empty, CompleteX --AddPartitions--> Ongoing --EndTxn--> PrepareX
//	PrepareX --markers written--> CompleteX --InitProducerID--> Empty
//	Ongoing --InitProducerID or timeout (epoch bumped)--> PrepareAbort
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
// transactions.db is a bbolt file at the store root, on the real OS
// (like catalog.db). Bucket "meta": "version" (one byte, 1) and
// "coordinator-epoch" (4 bytes big-endian; incremented and committed at
// every Open, and written into every marker of that Open, so a marker
// written again after a restart has a coordinator epoch no older than
// one already in the partition). Bucket "transactions": key the
// transactional id (its UTF-8 bytes), value a record, big-endian:
//
//	offset size field
//	0      1    record version (1)
//	1      1    state: 0 Empty, 1 Ongoing, 2 PrepareCommit,
//	            3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort, 6 Dead
//	2      8    producer id (>= 0)
//	10     2    producer epoch (>= 0)
//	12     8    previous producer id (-1: none)
//	20     2    last producer epoch (-1: none)
//	22     4    transaction timeout, ms (> 0)
//	26     8    start of the ongoing transaction, Unix ms
//	            (>= 0 in Ongoing and PrepareX, -1 otherwise)
//	34     4    unused, 0
//	38     4    partition count n (> 0 exactly in Ongoing and PrepareX)
//	42     ...  n partitions, sorted by topic then partition:
//	            topic length (2, > 0), topic, partition (4, >= 0)
//
// The decoder checks every length against the bytes left before reading
// or allocating, and every field against what the coordinator writes; a
// record that does not decode, an unknown format version or a file
// bbolt cannot open makes Open fail with an error that matches
// ErrDamaged and names the file (and, for a record, the key and byte
// offset, as a *DamagedError). It never guesses.
//
// Read (for `logstore producers`) opens the file read-only, with a
// shared lock it waits for at most a timeout (a running server's
// coordinator holds the file: ErrInUse), and changes nothing: no
// coordinator epoch bump, no decision finished.
//
// # Durability and crash behaviour
//
// Writes go through one committer goroutine that commits every write
// queued while the previous commit ran in one bbolt transaction (one
// commit: bbolt syncs twice, the pages then the meta page), so
// concurrent transactions share commits without a timer. A lazy write
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
//   - AddPartitions: yes. A partition gets transactional data only after
//     its AddPartitions answered; if the coordinator could forget the
//     partition, the transaction's markers would never reach it and its
//     last stable offset would stay stuck for ever. Aborting, at Open,
//     the open transactions the partitions hold that no durable record
//     lists would not be enough: the first AddPartitions of a
//     transaction usually replaces the previous transaction's held
//     CompleteX, so a crash could lose both and leave the previous
//     PrepareX on disk while the new transaction has data in the
//     partitions; Open would then write the old decision's markers again
//     and they would end the new transaction (same producer id and
//     epoch) in the partitions the old one listed, committed there and
//     aborted elsewhere. Ruling that out needs the CompleteX durable
//     before the next AddPartitions is answered, which is the commit
//     this would save.
//   - PrepareX: yes, before any marker is written. A crash after some
//     markers leaves PrepareX on disk, and Open writes every marker of
//     the decision again, then CompleteX: every partition ends with the
//     same decision.
//   - The markers: a decision's markers are all written, then waited
//     for together (Markers.WriteMarkers; StoreMarkers syncs the
//     partitions concurrently), before CompleteX is queued and before
//     EndTxn answers. Which of them a crash keeps does not matter: the
//     file says PrepareX until CompleteX is committed, and Open writes
//     them all again.
//   - CompleteX: no (a lazy write, see above: committed with the next
//     waited-for write, within a second, or at Close, or replaced by the
//     id's next write). If a crash loses it, or it was never written, the
//     file still says PrepareX and Open writes the markers again. That
//     is harmless: the marker for a
//     producer with no open transaction in a partition is accepted by
//     Partition.AppendMarker (its checks refuse only an older producer
//     epoch or coordinator epoch, and the new Open's coordinator epoch
//     is higher) and ends nothing: no .txnindex entry, no change of the
//     last stable offset. And it cannot end a later transaction of the
//     producer: a later transaction begins with an AddPartitions whose
//     durable write replaces the record (same key) before any of its
//     data is admitted, so the file can only say PrepareX while the
//     producer has no data after the markers. Replacing a held CompleteX
//     by a newer write of the id (AddPartitions' Ongoing, or
//     InitProducerID's Empty) is the same as committing both in one
//     commit: the file goes from PrepareX to the newer record, which is
//     durable before its caller is answered, and the markers of the
//     PrepareX were durable before the CompleteX was queued. After a
//     crash, Read (and so `logstore producers`) may show PrepareX for a
//     transaction already answered as ended; the next Open finishes it.
//   - The coordinator epoch at Open: yes, before any marker.
//
// Open finishes every PrepareX (markers, then a durable CompleteX)
// before it returns. Ongoing transactions stay Ongoing, with their start
// time, and the timeout scan aborts them when due. So after a crash at
// any point every transaction ends committed in every partition or
// aborted in every partition.
//
// Failures that are not crashes: a failed commit leaves the state in
// memory as it was (the caller gets the error, the server answers 15
// and the client retries). A failed marker write leaves PrepareX (in
// memory and on disk); an EndTxn retry of the same decision or the next
// scan writes the markers again.
//
// # Limits
//
// Transactional ids are never expired (Kafka's
// transactional.id.expiration.ms); each costs a record and a little
// memory until deleted by hand.
package txncoord
