// Package kafkaexport writes a logstore store's partitions as a Kafka
// broker's log directory holds them, so that the files can move to a
// Kafka cluster and keep the producers' deduplication state.
//
// For each partition <topic>-<partition> of the store (or of one topic),
// Export writes into OUT/<topic>-<partition>/:
//
//   - the segment files (.log, .index, .timeindex, .txnindex), copied
//     byte for byte and synced; they are Kafka's formats already;
//   - <end>.snapshot, Kafka's producer-state snapshot (version 1, CRC-32C)
//     of the partition's newest producer state, named by the log end
//     offset, so that a broker loads it and replays nothing;
//   - partition.metadata ("version: 0\ntopic_id: <id>", Kafka's bytes)
//     when the store has one for the partition. A partition without one
//     gets none: a Kafka broker then writes the topic id its cluster
//     metadata gives (UnifiedLog assigns it), where a made-up id would
//     not match the cluster's and the broker would refuse the log;
//   - leader-epoch-checkpoint in Kafka's checkpoint text format, each
//     line ended by "\n": "0", the entry count, then "<epoch>
//     <startOffset>" lines: logstore.Partition.LeaderEpochs. For
//     logstore's own data that is the one entry "0 <log start>" (logstore
//     is one leader that never changes: serve stamps epoch 0 on every
//     batch it takes, and its transaction markers carry 0; batches
//     appended through the CLI or the Go API keep the epoch they were
//     given, -1 from Kafka's clients, which Kafka's recovery skips: it
//     learns epochs >= 0 from batches only), and none for an empty log.
//     For a partition adopted from Kafka it is the adopted checkpoint's
//     entries from the log start, the latest extended by what logstore
//     appended (stamped with that epoch).
//
// Into OUT itself it writes log-start-offset-checkpoint, Kafka's offset
// checkpoint ("0", the entry count, then "<topic> <partition> <offset>"
// lines), with each exported partition's log start: a broker takes the
// larger of it and the first segment's base, so the records a
// DeleteRecords removed from the middle of a segment stay removed. The
// entries of partitions not exported now (an earlier export into OUT)
// are kept; the file is replaced through its .tmp, as Kafka writes it.
// No recovery-point-offset-checkpoint is written: without one a broker
// recovers every segment, which it finds intact.
//
// Each written file is synced, then the partition directory and OUT.
//
// Export opens the store as every writer does: it takes the store's lock,
// so a store a running server holds is refused (an error wrapping
// logstore.ErrStoreInUse), and opening a partition recovers it. A
// partition whose output directory already exists is refused
// (ErrExists), as is one with a transaction still open (its last stable
// offset below its end: ErrOpenTransaction): a Kafka cluster's
// transaction coordinator would know nothing of it and could never end
// it. A partition that fails half written is removed from the output
// (the partitions before it are complete). Nothing else of the store is carried over: consumer group offsets
// (groups.db), the transaction coordinator's state (transactions.db) and
// producer id blocks stay behind.
package kafkaexport
