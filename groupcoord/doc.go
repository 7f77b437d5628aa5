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
// DIR/groups.db is a record file of package internal/metalog (format
// 2, magic "LSGRPLOG", 4-byte key lengths, no meta value; see metalog
// for the frames, the replay, the rewrites and the lock). It maps keys
// to records; the first byte of a key says what it holds:
//
//	'g' | group id                             group record
//	'o' | offset key                           offset record
//	'p' | offset key | producer id int64       offset record of a
//	                                           transaction not ended yet
//	offset key:    uint16 len(group) | group | uint16 len(topic) | topic |
//	               int32 partition (big-endian; one group's keys share a prefix)
//	group record:  2 | state int8 | generation int32 | empty-since ms
//	               int64 (-1: not Empty when written) | uint16 len |
//	               protocol type | uint16 len | protocol | uint16 len |
//	               leader | uint32 count | members
//	member:        uint16 len | member id | uint16 len | instance id |
//	               uint16 len | client id | uint16 len | client host |
//	               rebalance timeout ms int64 | session timeout ms int64 |
//	               uint32 len | metadata of the chosen protocol | uint32
//	               len | assignment
//	group record   1 | generation int32 | empty-since ms int64 | uint16
//	  version 1:   len | protocol type (the previous build's: read as an
//	               Empty group, copied as it is by a rewrite, replaced
//	               by the group's next record)
//	offset record: 1 | offset int64 | leader epoch int32 | commit ms int64 |
//	               expire ms int64 (-1: none) | uint32 len | metadata
//
// Open takes the file's exclusive lock and replays it. A whole file is
// appended to as it is. One with a torn tail is written anew with its
// live records (a new file, synced, renamed over the old one, the
// directory synced), which drops the tail (logged with the file and
// offset); so is the file of a new store. Open, and a commit after
// which the file is over 1 MiB and twice its live records, compact it
// the same way. Open refuses a file it cannot read (a bad
// header or version, a frame damaged with a good one after it, a key
// or record that does not decode) with a *DamagedError naming the file,
// the byte, and the kind and key of the record, matching ErrDamaged.
// Read takes a shared lock and changes nothing.
//
// Conversion. A groups.db that does not start with the magic is taken
// for format 1, a bbolt file: bucket "meta" with "version" = 1, buckets
// "groups", "offsets" and "pending" mapping the keys above (without
// their first byte) to the same records. Open reads it whole with bbolt,
// under bbolt's lock, checking it as the previous build did (a
// *DamagedError naming the bucket and key). It then writes the record
// file by the same rewrite: the rename over the bbolt file is what
// removes it. A crash before the rename leaves the bbolt file, converted
// again at the next Open; after it, the whole new file. Read reads a
// bbolt file as it is. bbolt is used for nothing else.
//
// A group record's state is Empty (no members), Stable (members with
// their assignments) or CompletingRebalance (members, no assignment);
// its members are all there, the leader among them, ids and instance
// ids unique. Every length is checked against the bytes left before
// anything is allocated.
//
// A committer goroutine (metalog's) writes what is queued while the
// previous commit ran in one commit (one frame, one write, one
// fdatasync), in queue order, then applies it in memory; concurrent
// OffsetCommits share fsyncs. A group's record is written where
// Kafka's GroupCoordinator stores its GroupMetadata: the leader's
// SyncGroup writes it Stable with the assignment, and the group becomes
// Stable and the SyncGroups are answered only once that is durable (a
// failed write rebalances again); a static member taking over its
// instance in a Stable group writes it with the new member id; the end
// of a join phase writes it Empty (no member left) or, where Kafka
// writes nothing, CompletingRebalance, so that the generation only goes
// up across restarts. These three are not waited for: a crash that
// loses one brings the record before it back, whose members time out
// or rejoin (its generation then comes again, as in Kafka). A member leaving or expiring writes nothing by itself: it
// starts a rebalance, whose end is written. DeleteGroups, and the
// retention scan's removal of an Empty group, delete the record.
// Offsets, pending offsets and deletions are answered only after their
// commit is durable. DeleteGroups deletes every key of the
// group's prefix the file holds when its commit is written, so an
// offset commit queued before it cannot outlive the group.
//
// Why a keyed record file and not Kafka's __consumer_offsets: the state
// is small and keyed (the latest offset per group and partition), so a
// map with one fsync per commit batch is all it needs, with a replay of
// a compacted file at start. The road to Kafka for offsets is an export
// step (or mirroring) that writes them as __consumer_offsets records.
//
// Why catalog.db stays on bbolt (package catalog): it holds the cluster
// id, the end of the reserved producer ids (one commit per block of
// ids) and the topics with their state. Its writes are few and
// serialised by the catalog's own steps (a topic created, adopted,
// deleted, its configs changed), several keys in one transaction (an
// adoption records the topic and moves the reservation in one commit),
// updated in place, and read by key and in name order. bbolt gives it
// exactly that, with nothing to replay. What makes the record file
// better for the coordinators, many small concurrent commits sharing
// one fsync and no page writes per commit, does not arise at its write
// rate. Moving it would be one more conversion to keep tested, for no
// gain.
//
// After a restart the groups come back as Kafka's coordinator loads
// them from __consumer_offsets: a group stored Stable is Stable, with
// its members (static ones with their instance ids), generation,
// leader, protocol and assignments, and each member's session timer
// started afresh at Open, so a live member that goes on heartbeating
// with its member id and generation continues without a rebalance (its
// SyncGroup gets its stored assignment), and a dead one times out as
// usual, starting the normal rebalance. A group stored Empty is Empty
// with its generation, protocol type and offsets. A group stored
// CompletingRebalance (the restart came before the leader's assignment
// was stored) comes back PreparingRebalance with those members, its
// join timer started: their Heartbeats and SyncGroups get
// REBALANCE_IN_PROGRESS and they rejoin with their member ids (in
// Kafka the Stable record before it would come back, and its members'
// requests of the unstored generation would fail the same way). No
// offset is lost.
//
// # Invariants
//
//   - A member is in exactly one group, its instance id maps to it.
//   - The generation of a group only goes up, across restarts too
//     (across a crash, from its last durable record).
//   - A group is Stable only once its record with the assignments of
//     its generation is durable: after a restart or crash it is Stable
//     with those members and assignments (a static member's new id,
//     written without waiting, may come back as its old one, fenced at
//     its next join), or in the state of a later record.
//   - Every JoinGroup and SyncGroup callback is called exactly once: with
//     the answer, with an error when its member is removed or fenced, or
//     NOT_COORDINATOR at Close.
//   - Callbacks run without the coordinator's lock held.
//   - An offset OffsetFetch returns is durable in groups.db.
package groupcoord
