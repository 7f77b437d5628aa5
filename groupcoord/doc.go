// Package groupcoord is the group coordinator of `logstore serve`:
// Kafka's classic consumer group protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups) and
// committed offsets (OffsetCommit, OffsetFetch, OffsetDelete), for one
// node. It has no wire types: the server maps kmsg requests onto
// JoinRequest, SyncRequest, CommitRequest and the rest, and puts the
// Code of each answer on the wire (the numbers are Kafka's). The
// assignment itself is the clients' job: whatever the leader sends in
// SyncGroup is handed to the members unchanged, so range, roundrobin,
// sticky and cooperative-sticky (which drives its incremental rebalance
// with ordinary JoinGroup rounds) all work alike.
//
// # States
//
// A group is Empty, PreparingRebalance, CompletingRebalance, Stable or
// Dead, as in Kafka's GroupMetadata:
//
//	Empty -> PreparingRebalance        a member joins
//	PreparingRebalance -> Completing-  every member rejoined, or the rebalance
//	    Rebalance                      timeout (the largest of the members')
//	                                   passed: members that did not rejoin are
//	                                   removed (static ones stay), the
//	                                   generation goes up, the protocol is
//	                                   chosen, the JoinGroups are answered
//	PreparingRebalance -> Empty        the same, and no member is left
//	CompletingRebalance -> Stable      the leader's SyncGroup: its assignment
//	                                   answers every SyncGroup
//	CompletingRebalance, Stable ->     a member joins, rejoins with other
//	    PreparingRebalance             protocols, leaves, or its session
//	                                   expires; the leader rejoins
//	Empty -> Dead                      DeleteGroups, or its last offset expired
//
// The first rebalance of an Empty group waits InitialRebalanceDelay
// (group.initial.rebalance.delay.ms, 3 s) for more members, again as long
// as members keep coming, up to the rebalance timeout. A first JoinGroup
// (v4+) without member id is answered MEMBER_ID_REQUIRED with a new id
// (KIP-394); until the member comes back with it (within its session
// timeout) the rebalance waits for it. A member with group.instance.id
// (KIP-345) that joins without a member id replaces the member of its
// instance: the old id is fenced (FENCED_INSTANCE_ID) and, in a Stable
// group whose chosen protocol stays the same, it gets the current
// generation and keeps its assignment without a rebalance.
//
// The protocol is chosen as Kafka chooses it: among the protocols every
// member supports, each member votes for the first in its own order;
// most votes win (a tie goes to the first member's order). A JoinGroup
// of another protocol type, or with no protocol every member supports,
// is INCONSISTENT_GROUP_PROTOCOL.
//
// Sessions: every Heartbeat, a SyncGroup and an OffsetCommit of a member
// restart its session timer; a member whose timer runs out is removed
// (a rebalance follows). A member waiting in JoinGroup or SyncGroup is
// not expired until that is answered.
//
// # Committed offsets
//
// A member commits with its member id (and instance id) and the current
// generation, during Stable and PreparingRebalance (REBALANCE_IN_PROGRESS
// during CompletingRebalance, ILLEGAL_GENERATION for another generation,
// UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID for an unknown member). A
// consumer outside group management commits with generation -1 and no
// member id, which an Empty group (or one that does not exist yet)
// accepts. Commit answers once the offsets are durable; OffsetFetch only
// ever sees durable offsets.
//
// Retention is Kafka's since 2.1: the offsets of a group that has a
// protocol type expire all together OffsetsRetention
// (offsets.retention.minutes, 7 days) after the group became Empty; a
// Stable "consumer" group whose subscriptions decode loses the offsets of
// topics none of its members subscribes to, by commit time; offsets
// committed without a group protocol (simple consumers) expire by commit
// time. A scan every RetentionCheckInterval removes them, and deletes an
// Empty group left with no offsets.
//
// # Transactional offsets
//
// A transactional producer (consume-transform-produce, kgo's
// GroupTransactSession) adds the group's offsets partition to its
// transaction (AddOffsetsToTxn: partition OffsetsPartition(group) of
// OffsetsTopic, "__consumer_offsets", as Kafka names it) and commits
// offsets with TxnOffsetCommit: CommitTxn keeps them pending for its
// producer id, durably, invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT
// to a fetch that requires stable offsets). The transaction
// coordinator's marker for that partition reaches CompleteTxn: a commit
// makes the producer's pending offsets of the groups of that partition
// committed offsets (unless a later plain commit of the partition is
// there: Kafka keeps the newer one; here newer is by commit time), an
// abort drops them, durably before it returns. A marker without pending
// offsets (written again after a restart of the transaction coordinator)
// changes nothing. Transactional commits need no generation (Kafka's
// rule: older producers do not know it) and are accepted in any state;
// with a member id and generation they are checked as a member's.
//
// # File
//
// DIR/groups.db is a bbolt file (on the real OS, like catalog.db):
// bucket "meta" holds "version" = 1; bucket "groups"
// maps a group id to its record; bucket "offsets" maps
// uint16 len(group) | group | uint16 len(topic) | topic | int32 partition
// (big-endian; one group's keys share a prefix) to an offset record;
// bucket "pending" maps the same key followed by the producer id (int64)
// to the offset record of a transaction not ended yet.
//
//	group record:  1 | generation int32 | empty-since ms int64 (-1: not
//	               Empty when written) | uint16 len | protocol type
//	offset record: 1 | offset int64 | leader epoch int32 | commit ms int64 |
//	               expire ms int64 (-1: none) | uint32 len | metadata
//
// A committer goroutine writes what is queued while the previous commit
// ran in one bbolt transaction (one fsync), in queue order, then applies
// it in memory; concurrent OffsetCommits share fsyncs. Group records are
// written without waiting (they hold the generation and the start of
// emptiness; losing the last one to a crash delays retention or repeats
// nothing that matters to offsets); offsets and deletions are answered
// only after their commit. Open refuses a file it cannot read (an unknown
// format version, a key or record that does not decode, a file bbolt
// refuses) with a *DamagedError naming the file, bucket, key and byte,
// matching ErrDamaged.
//
// Why bbolt and not Kafka's __consumer_offsets: the state is small and
// keyed (the latest offset per group and partition), so a keyed file with
// one fsync per commit batch is all it needs, with no compaction and no
// replay at start. The road to Kafka for offsets is an export step (or
// mirroring) that writes them as __consumer_offsets records.
//
// After a restart the groups come back Empty, without members, with
// their generation, protocol type and offsets: the members rejoin (their
// old member ids are unknown, so they get UNKNOWN_MEMBER_ID and join
// afresh), as after a coordinator move in Kafka; no offset is lost.
//
// # Invariants
//
//   - A member is in exactly one group, its instance id maps to it.
//   - The generation of a group only goes up, across restarts too.
//   - Every JoinGroup and SyncGroup callback is called exactly once: with
//     the answer, with an error when its member is removed or fenced, or
//     NOT_COORDINATOR at Close.
//   - Callbacks run without the coordinator's lock held.
//   - An offset OffsetFetch returns is in groups.db.
package groupcoord
