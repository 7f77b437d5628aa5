// Package kafkaserver serves a logstore.Store over the Kafka protocol, as
// a single-node Kafka broker: real Kafka producers (idempotent) and
// consumers (direct, or in consumer groups: the server is their group
// coordinator) work against it, and so do transactional producers (the
// server is their transaction coordinator); the files they fill stay
// Kafka's own.
//
// Requests and responses are decoded and encoded with franz-go's kmsg;
// the package has no message codec of its own, only the frame and the
// request header around kmsg's bodies.
//
// # Connection model
//
// Each connection has a read goroutine and a write goroutine. The reader
// reads one frame: an int32 size, checked against Config.MaxRequestBytes
// before anything is allocated, then the bytes. The frame's buffer comes
// from a pool by size class and grows with the bytes that come; it goes
// back to its pool once the request's response is written, since the
// decoded request's byte slices point into it. A request other than
// Produce may not exceed 1 MiB, since kmsg allocates an array by its
// count before decoding its elements. The reader decodes the header and
// the body and runs the handler of its API key (dispatch.go: handle, the
// one place every request passes). Once a response is complete,
// finished (dispatch.go) takes its key, version, error code and
// duration.
//
// A handler either answers at once or leaves its response to complete
// later (answerLater, handlers.go): a produce waiting for its fsync
// (group commit) under SyncAlways, a fetch waiting for data, a
// transaction coordinator call, a group answer waiting for a rebalance
// or for groups.db's commit. The reader goes on to the next request
// meanwhile, so the next produce's append does not wait for this one's
// fsync; appends still happen in request order, in the reader. The
// writer writes the responses in request order, each once it is
// complete; responses that are complete when it writes go out in one
// write. A fetch reads its partitions' batches into one pooled buffer
// (fetchbuf.go), which goes back to its pool once the writer has encoded
// the response (kmsg copies the records into the response frame). At
// most 8 requests per connection are read and not yet answered (kgo
// keeps 5 produce requests in flight); the reader waits beyond that.
//
// A write that does not finish within Config.WriteTimeout (a client that
// does not read) closes the connection, and so does a client that sends
// no request, or stops inside one, for Config.IdleTimeout. An unknown
// API key, a version that was not advertised, a frame over the limit or
// one that does not decode, and Produce v0-2 close the connection with
// one log line. A panic in a handler is recovered, logged, and closes
// only that connection; a panic while a later answer is filled is
// logged, and the answer goes out as it was. A produce with acks=0 is
// answered by nothing, and closes the connection when a partition
// failed (as Kafka does: the client has no other way to learn).
// Shutdown stops accepting, stops every reader before its next request,
// answers the requests already read (a waiting fetch answers at once
// with what it has), then closes the connections; Close closes them at
// once.
//
// # Files
//
// Each API the server answers has a file of its own, named after it
// (produce.go, fetch.go, joingroup.go, offsetcommit.go,
// addpartitionstotxn.go, ...), as franz-go's kfake has. Each file opens
// with its version notes: the versions advertised, what differs between
// them, and what logstore does of Kafka's semantics. Every handler has
// one shape: the request and its response from kmsg, p.resp set, the
// topic/partition walk (answerEach) where the answer is per partition,
// each error code noted with p.setErr, and the answer given at once or
// later (answerLater). What the handlers share is in handlers.go: that
// walk, answerLater, the partition lookup, and the failure and refusal
// codes. Error codes are franz-go's kerr. The rest: conn.go (a
// connection's reader and writer), dispatch.go (the API table and
// handle), server.go (New, Serve, Shutdown), groups.go and txn.go (the
// group and transaction coordinators' wiring), topics.go (the catalog),
// fetchbuf.go and framepool.go (pooled buffers), hooks.go (metrics).
//
// # APIs
//
// ApiVersions advertises exactly this table (and no features, so clients
// use neither KIP-890 transactions nor fetch sessions by feature):
//
//	key  API              versions  notes
//	 0   Produce          0-11      v0-2 close the connection (listed for librdkafka's feature check,
//	                                as Kafka 4 does); acks other than 0, 1, -1: 21 per partition
//	 1   Fetch            4-12      no sessions (SessionID 0; a request with a session id: 70);
//	                                v9+: CurrentLeaderEpoch checked (below 0: 74, above: 76)
//	 2   ListOffsets      1-10      v4+: CurrentLeaderEpoch checked as Fetch's; v9: -5 (latest
//	                                tiered) is offset -1, epoch -1 (nothing tiered); v10: TimeoutMillis
//	 3   Metadata         0-13      authorized operations (v8+) as with no authorizer: all;
//	                                v13: top-level error code, 0
//	 8   OffsetCommit     2-8       answered once durable (groups.db); a partition that does not
//	                                exist: 3; v2-4's retention time kept per offset
//	 9   OffsetFetch      1-8       null topics (v2+): every committed partition; v8: several groups;
//	                                -1 where nothing is committed
//	10   FindCoordinator  0-6       this node, for groups and for transactional ids (key type 1);
//	                                share groups (key type 2, v6) and unknown types: 42, node -1
//	11   JoinGroup        0-9       v4+: MEMBER_ID_REQUIRED first (KIP-394); v5+: static members
//	                                (KIP-345); v9: a static leader's rejoin skips the assignment
//	12   Heartbeat        0-4
//	13   LeaveGroup       0-5       v3+: several members, static ones by instance id
//	14   SyncGroup        0-5
//	15   DescribeGroups   0-6       an unknown group: state Dead, no error (as Kafka); v6: 69
//	16   ListGroups       0-5       v4: states filter; v5: types filter, every group "classic"
//	18   ApiVersions      0-4       above 4: a v0 body, error 35, only key 18's range (KIP-511)
//	19   CreateTopics     0-7
//	20   DeleteTopics     0-6
//	21   DeleteRecords    0-2       the log start moves, durably, before the answer (its low watermark);
//	                                -1 the high watermark; past it or below -1: 1; unknown 3
//	22   InitProducerId   0-4       with a transactional id: the transaction coordinator (below)
//	23   OffsetForLeaderEpoch 0-4   Partition.LeaderEpochs (epoch 0, or an adopted checkpoint's);
//	                                the latest epoch ends at the high watermark; v2+: current epoch
//	                                checked as Fetch's; unknown topic or partition 3
//	24   AddPartitionsToTxn 0-3     v4+ (broker to broker, KIP-890) not advertised
//	25   AddOffsetsToTxn  0-3       the group's __consumer_offsets partition joins the transaction
//	26   EndTxn           0-4       v5 (KIP-890's epoch bump) not advertised
//	28   TxnOffsetCommit  0-3       offsets pending until the transaction's marker (groupcoord)
//	32   DescribeConfigs  0-4       topic and broker "0" configs (configs.go's table),
//	                                synonyms v1+, docs and types v3+; unknown topic 3, other
//	                                resource types and broker ids 42
//	33   AlterConfigs     0-2       a topic's whole set replaced, durable, live on its partitions;
//	                                configs logstore does not apply 40; broker changes 42
//	44   IncrementalAlterConfigs 0-1 SET, DELETE, APPEND/SUBTRACT (LIST configs only, else 40)
//	35   DescribeLogDirs  0-4       one dir, the store's (absolute); sizes of the .log files; unknown
//	                                topics and partitions left out; v4: statfs total and usable bytes
//	37   CreatePartitions 0-3       grows a topic durably (catalog first); duplicate names 42,
//	                                unknown 3, no increase or above 10,000 37, assignments other
//	                                than broker 0 alone 39
//	42   DeleteGroups     0-2       only Empty groups (68 NON_EMPTY_GROUP; unknown: 69)
//	47   OffsetDelete     0         a topic members subscribe to: 86 GROUP_SUBSCRIBED_TO_TOPIC
//	60   DescribeCluster  0-1       this node, the controller; no authorizer: every cluster operation
//	                                when asked, else INT32_MIN; v1: a controller endpoint type 114
//	61   DescribeProducers 0        the partition's producer state; unknown topic or partition: 3
//	65   DescribeTransactions 0     from the coordinator; unknown id 105, empty id 42
//	66   ListTransactions 0-1       Kafka's state, producer id and (v1) duration filters;
//	                                v2's transactional id pattern not advertised
//	75   DescribeTopicPartitions 0  Metadata's partitions, paged as Kafka's handler: name order from the
//	                                cursor, at most ResponsePartitionLimit (1-2000), NextCursor
//	17   SaslHandshake    0-1       PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Config.SASLMechanisms); v0: raw
//	                                tokens follow (KIP-152); not a SASL listener or a second one: 34
//	36   SaslAuthenticate 0-2       one token of the exchange; failed: 58 after AuthFailureDelay, then
//	                                closed; SessionLifetimeMillis 0 (no re-authentication, KIP-368)
//	50   DescribeUserScramCredentials 0   the users of users.json and their mechanisms; DESCRIBE on the
//	                                cluster, or without an authorizer super users only (31)
//	51   AlterUserScramCredentials 0      upsert from the client's salted password, delete; ALTER on the
//	                                cluster, or without an authorizer super users only (31); per user
//	                                92, 33, 93, 91 as Kafka
//	29   DescribeAcls     0-3       the ACLs a filter matches, grouped by resource pattern; DESCRIBE on
//	                                the cluster (31); an UNKNOWN field 42; no authorizer: 54
//	30   CreateAcls       0-3       added to acls.json durably in one change; ALTER on the cluster (31);
//	                                Kafka's validation (42 with the reason); no authorizer: 54
//	31   DeleteAcls       0-3       each filter against the ACLs before the request, removed in one
//	                                durable change; ALTER on the cluster (31); no authorizer: 54
//
// Authorization (authz.go; Config.Authorizer, package acl): each API
// asks what Kafka's KafkaApis asks, of the connection's principal
// ("User:NAME" by SASL, "User:CN=..." by client certificate,
// "User:ANONYMOUS" else) and its address: Produce WRITE on the topic
// (29) and on the transactional id (53), creating a topic CREATE on the
// cluster or the topic; Fetch and DescribeProducers READ, ListOffsets
// and OffsetForLeaderEpoch DESCRIBE on the topic; Metadata and
// DescribeTopicPartitions DESCRIBE (a topic not allowed is left out of
// all topics, and answered 29 when named, existing or not); the group
// APIs READ on the group (30) and on each topic committed (29),
// OffsetFetch and DescribeGroups and FindCoordinator DESCRIBE, DeleteGroups
// and OffsetDelete DELETE, ListGroups every group with DESCRIBE on the
// cluster, else those the principal may describe; InitProducerId WRITE
// on the transactional id, or for an idempotent producer IDEMPOTENT_WRITE
// on the cluster or WRITE on some topic (31); AddPartitionsToTxn,
// AddOffsetsToTxn, TxnOffsetCommit and EndTxn WRITE on the id (53) and
// their topics and group as above; DescribeTransactions and
// ListTransactions DESCRIBE on the id; CreateTopics CREATE, DeleteTopics
// and DeleteRecords DELETE, CreatePartitions ALTER on the topic;
// DescribeConfigs DESCRIBE_CONFIGS and the alters ALTER_CONFIGS on the
// topic (29) or the cluster for a broker (31); DescribeLogDirs DESCRIBE on
// the cluster. Authorized operations (Metadata, DescribeCluster,
// DescribeGroups, DescribeTopicPartitions) are those the principal may
// do. Without an authorizer every check passes.
//
// A SASL listener (ListenerConfig.SASL) serves nothing but ApiVersions
// and the two SASL APIs before its connection authenticates (sasl.go):
// another request closes it, as does a frame over 512 KiB or an
// authentication not done within UnauthenticatedTimeout. Every
// connection's requests are charged to the server's request budget
// before their buffers are allocated (reqbudget.go), and a Produce's
// arrays are counted before kmsg decodes it (producescan.go).
//
// The group APIs are the classic protocol of package groupcoord (its doc
// has the states and the file). No KIP-848 (ConsumerGroupHeartbeat, 68,
// closes the connection; OffsetCommit and OffsetFetch stop below v9,
// whose member epochs are KIP-848's), and no v10 (topic ids in offsets).
// JoinGroup and SyncGroup answers wait for the rebalance without holding
// the connection's reader (answerLater, as a produce waits for its
// fsync). OffsetCommit, DeleteGroups and OffsetDelete wait for
// groups.db's commit the same way. When the connection goes, or the
// server shuts down, a waiting answer completes with 16 NOT_COORDINATOR.
//
// GetTelemetrySubscriptions (71) and PushTelemetry (72, KIP-714) are not
// advertised, as Kafka advertises neither without a client metrics
// receiver: clients then send no telemetry.
//
// Every other key closes the connection.
//
// Produce answers each partition with the store's typed outcome:
//
//   - accepted: error 0 and the base offset;
//   - a duplicate: error 0 and the first copy's base offset, once that
//     copy is durable (never 46 DUPLICATE_SEQUENCE_NUMBER);
//   - an unknown producer with a sequence other than 0: 59
//     UNKNOWN_PRODUCER_ID;
//   - a sequence gap, or a new epoch not at sequence 0: 45
//     OUT_OF_ORDER_SEQUENCE_NUMBER;
//   - an older epoch: 47 INVALID_PRODUCER_EPOCH;
//   - bytes that do not decode (CRC, size, magic, codec): 2
//     CORRUPT_MESSAGE;
//   - a zstd batch in a request below v7 (KIP-110): 76
//     UNSUPPORTED_COMPRESSION_TYPE;
//   - a bad timestamp: 32;
//   - any other invalid batch (more than one batch, control batch, bad
//     record): 87 INVALID_RECORD, with the reason in ErrorMessage (v8+).
//     When the check names a record (one that does not decode, whose
//     offset delta is wrong, or that the header claims and the batch
//     lacks), RecordErrors (v8+; BatchIndex, BatchIndexErrorMessage)
//     has its index in the batch and the reason, as Kafka lists the
//     records its validation refused;
//   - larger than max.message.bytes: 10 MESSAGE_TOO_LARGE;
//   - a transactional batch outside an ongoing transaction with its
//     partition added (see Transactions), or a non-transactional batch
//     in an open transaction: 48 INVALID_TXN_STATE.
//
// An unknown topic or partition is 3 (or the topic is created, with
// Config.AutoCreateTopics). A partition that failed (an I/O error
// poisoned it) answers 56 KAFKA_STORAGE_ERROR and is logged. One closed
// under the request by the store's closing answers 6
// NOT_LEADER_OR_FOLLOWER. One of a topic deleted (or being deleted)
// under the request answers 3, as Kafka answers for a partition of a
// deleted topic (Fetch and ListOffsets answer so too).
// LogStartOffset is in every partition's answer, errors included;
// LogAppendTime is -1. The server stamps the partition's leader epoch
// into each batch it appends (bytes 12-15, outside the CRC), as a leader
// does: 0, or for a partition adopted from Kafka the latest epoch of its
// leader-epoch-checkpoint (logstore.Partition.LeaderEpoch), which
// Metadata, ListOffsets and the CurrentLeaderEpoch checks say too
// (Metadata says 0 for a partition not open yet; the client's next
// request with 0 is fenced, 74, and its Metadata refresh then learns the
// epoch).
//
// Fetch serves whole batches from the one that holds the fetch offset,
// at least one even when it exceeds MaxBytes or PartitionMaxBytes, as
// the segment bytes are on disk; an offset below the log start or above
// the high watermark is 1 OFFSET_OUT_OF_RANGE, one at the high
// watermark is an empty answer (or a long poll). At IsolationLevel 1
// (read_committed) no batch at or above the last stable offset is
// served (the LSO is at a batch boundary, so the batch holding the fetch
// offset still goes out whole), and an offset from the LSO up to the
// high watermark is an empty answer, not an error, as Kafka's read
// bounded by the LSO answers; AbortedTransactions then lists the
// aborted transactions with data in the batches returned (producer id
// and first offset, from the .txnindex files by the rules of Kafka's
// collectAbortedTransactions, with the offset after the last batch
// returned as the upper bound: Kafka's bound is looser, the next
// offset-index entry past the bytes read, and may name transactions
// that begin after them, which clients ignore), an empty list when
// there are none. At read_uncommitted, and in an answer with an error,
// it is null, as Kafka sends it. LastStableOffset is the partition's
// LSO in every answer, at both levels; PreferredReadReplica -1. A fetch
// with fewer than MinBytes (counted as its isolation level reads) waits
// up to MaxWaitMillis, woken each time a partition's DurableEnd moves or
// a transaction marker is written (a marker moves the LSO), with one
// timer that it stops. It registers once with each partition through a
// logstore.DurableWatcher, and each wake reads again only the partitions
// that moved.
//
// ListOffsets: -2 and -4 the log start; -1 the high watermark, or at
// IsolationLevel 1 (read_committed, v2+) the last stable offset; -3 (v7+)
// the largest timestamp and the offset of the record that has it (the
// first of equals, in the earliest batch that has it; the first record
// of a LogAppendTime batch), as Kafka 3.8+ answers (KAFKA-16310); when
// that record is at or above the high watermark, offset and timestamp
// -1, as Kafka answers, not an earlier record;
// t >= 0 the first offset whose record timestamp is >= t, by the
// segments' time indexes, with that record's timestamp; else offset and
// timestamp -1; -5 (v9+) offset, timestamp and leader epoch -1, as
// Kafka answers without tiered storage. Leader epoch: the offset's
// (Partition.EpochOf), 0 but for a partition adopted with a
// leader-epoch-checkpoint. No answer names an offset at or above the
// high watermark, nor at read_committed one at or above the LSO (as in
// Kafka's fetchOffsetForTimestamp: -3 and t >= 0 then answer -1).
//
// DescribeProducers (v0, KIP-664) lists, per partition, every producer
// the partition's producer state holds (Partition.ProducerSnapshot), as
// Kafka's activeProducers does: producer id, epoch, the last sequence of
// its newest batch (-1 when none is remembered), its last timestamp,
// the coordinator epoch of its newest marker (-1 when none), and the
// first offset of its open transaction (-1 when none).
//
// Topics, their ids and configs, the cluster id and producer ids are the
// store's catalog (package catalog, opened by New): durable, so a restart
// keeps the ids and never hands out a producer id twice. Metadata lists
// one broker, node 0, at Config.Advertise or the address the client
// connected to; it is the controller and the leader of every partition
// (leader epoch 0, replicas and ISR [0]), with the catalog's cluster id
// and topic ids (v10+). CreateTopics: a name by Kafka's rules (else 17),
// replication factor 1 or -1 (else 38), partitions above 0 or -1 for
// Config.DefaultPartitions (else 37), the configs the catalog supports
// (retention.ms, retention.bytes, segment.bytes, segment.ms,
// max.message.bytes; others and bad values 40), an existing name 36,
// ValidateOnly. DeleteTopics by name, or by topic id (v6; unknown id
// 100), removes the partition directories durably.
//
// Only the catalog makes partition directories (CreateTopics, automatic
// creation, CreatePartitions). Produce, Fetch and ListOffsets look the topic up in the
// catalog and open its partition with logstore.Store.ExistingPartition,
// which never makes a directory: a request that races with a
// DeleteTopics cannot bring the deleted topic's directory back (it
// would be adopted as a topic again at the next start). Such a request
// answers 3; Metadata waits for a deletion in progress (the catalog
// holds its lock through it) and then lists the topic no more.
//
// # Transactions
//
// The server is the transaction coordinator of every transactional id
// (package txncoord, Kafka's classic protocol: no transaction.version
// feature is advertised, so clients use AddPartitionsToTxn v0-3 and
// EndTxn v0-4). New opens it over transactions.db at the store root; it
// writes its COMMIT and ABORT markers into the partitions with
// txncoord.StoreMarkers (Partition.AppendMarkerWritten in each partition,
// then one wait for all of them to be durable, in the background of the
// EndTxn answer), and finishes at New what a crash left decided. Close and Shutdown close it after the connections have ended.
//
// FindCoordinator for a transactional id answers node 0, this server, at
// the address Metadata gives. InitProducerId with a transactional id
// answers the id's durable producer id with its epoch bumped (epoch 0 the
// first time; a new producer id when the epoch is exhausted), aborting
// the id's open transaction first; v3+ pass the client's producer id and
// epoch (KIP-360). Its TransactionTimeoutMillis must be above 0 and at
// most Config.TransactionMaxTimeout (`serve --transaction-max-timeout`,
// Kafka's transaction.max.timeout.ms, 15 minutes), else 50
// INVALID_TRANSACTION_TIMEOUT; a transaction open longer than its timeout
// is aborted by the coordinator (checked every
// Config.TransactionCheckInterval), with the epoch bumped so its producer
// is fenced. A transactional id idle (no transaction ongoing or being
// decided) for Config.TransactionalIDExpiration
// (`serve --transactional-id-expiration`, Kafka's
// transactional.id.expiration.ms, 7 days) is forgotten at that same
// check: DescribeTransactions answers 105 for it, ListTransactions leaves
// it out, AddPartitionsToTxn and EndTxn of its old producer get 49, and
// its next InitProducerId gets a new producer id at epoch 0
// (logstore_transactional_ids_expired_total counts them). An empty transactional id is 42 INVALID_REQUEST, and so is
// a v3+ request with a producer id and no epoch or the reverse; a
// producer id that is not the id's is 90, as Kafka answers. A
// re-init while a transaction is ongoing aborts it whoever sent it: a
// fenced producer coming back with its old epoch (kgo does, for KIP-588's
// recovery) aborts the new owner's ongoing transaction before it is
// refused, as in Kafka.
//
// AddPartitionsToTxn answers per partition: a partition that does not
// exist is 3 UNKNOWN_TOPIC_OR_PARTITION, and then every other partition
// of the request is 55 OPERATION_NOT_ATTEMPTED and nothing is added, as
// Kafka answers; else every partition has the coordinator's code. Its
// write is not waited for (the decision's carries it; see txncoord's
// doc for what Open does after a crash loses it), except for the group
// offsets partition of AddOffsetsToTxn. EndTxn waits, in a goroutine of
// its own, for the decision to be durable and the markers written in
// every partition of the transaction before it answers (the markers
// are durable a sync later; a crash meanwhile leaves the decision, and
// the next start writes them again); a retry of the decision made
// succeeds, the other decision is 48 INVALID_TXN_STATE.
// The coordinator's refusals: 90 PRODUCER_FENCED for an epoch older than
// the id's (47 INVALID_PRODUCER_EPOCH to InitProducerId before v4 and to
// AddPartitionsToTxn and EndTxn before v2, which predate KIP-588's 90, as
// Kafka answers them), 49 INVALID_PRODUCER_ID_MAPPING to
// AddPartitionsToTxn and EndTxn for a producer id that is not the id's
// (or an id the coordinator does not know), 48 for a request in
// the wrong state, 51 CONCURRENT_TRANSACTIONS while a decision is being
// completed. A failure of transactions.db is logged and answered 15
// COORDINATOR_NOT_AVAILABLE, as Kafka answers a failed append to its
// transaction log; clients retry it.
//
// Produce of a transactional batch asks the coordinator first
// (BeginProduce with the request's TransactionalID and the batch's
// producer id, epoch and partition): the transaction must be ongoing with
// the partition added, else 48; an older epoch is 47 (Produce never
// answers 90), a producer id that is not the transactional id's 49. The
// batch is appended while the coordinator holds its transaction open,
// and released before the wait for durability, so an admitted batch
// never lands after its transaction's marker (a fenced producer's batch
// racing the abort). A transactional
// batch in a request without a transactional id is 48 (Kafka refuses the
// whole request with 53 TRANSACTIONAL_ID_AUTHORIZATION_FAILED, its
// answer for an id the principal may not use, which clients take as
// fatal for an id they do not have). The partition's own producer checks
// (sequence, epoch) apply to transactional batches as to idempotent ones.
//
// # High watermark
//
// The high watermark of a partition is Partition.DurableEnd: under
// SyncAlways the end of what is fsynced, so no consumer ever sees a batch
// a crash of the machine could take back; under SyncInterval and
// SyncNever the log end, which is all those modes promise an
// acknowledged produce (a process crash loses nothing; a machine crash
// can lose what was not yet synced, and then the offsets are assigned
// again). A produce is answered, in every mode, once its batch is below
// the high watermark.
//
// # Last stable offset
//
// The last stable offset (LSO) of a partition is
// Partition.LastStableOffset: the first offset of the oldest transaction
// not yet ended by a marker below the high watermark, or the high
// watermark when there is none. A read_committed consumer reads only
// below it, so it never reads a transaction's data before the
// transaction is decided and its marker is as durable as the sync mode
// promises; the data of aborted transactions below it, which it does
// read, is what AbortedTransactions names for the client to drop. The
// gauge logstore_partition_lso_lag_offsets (package metrics) is the high
// watermark minus the LSO.
package kafkaserver
