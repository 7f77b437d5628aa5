// Command compat measures which Kafka clients work with `logstore serve`,
// at which of their protocol versions, for which features, and writes
// the matrix to COMPATIBILITY.md. Run it as
//
//	compat/run [-out FILE] [-only REGEXP] [-require-all]
//
// from the repository: compat/run builds logstore from the checkout and
// runs this program with -logstore set to the binary. CI runs it with
// -require-all, so that a client missing from the machine fails the run
// instead of being reported "not installed".
//
// # Cells
//
// A cell is one client x version x feature. Every cell gets a fresh
// `logstore serve` child process (its own store directory, --sync
// always, 64 KiB segments, or 1 KiB for the kgo and sarama cells, whose
// batches are small, so that segments roll within a cell (Cell.
// SegmentBytes; a batch larger than a segment is refused), a 100 ms
// first group rebalance delay) on 127.0.0.1, behind a kafkatest.Proxy whose
// address the server advertises: every connection of every client goes
// through the proxy (but those of the clients under test of the sasl_ssl
// cells, below). Cells run one at a time (the machine has two cores),
// each bounded by -cell-timeout (60 s), the whole run by -timeout (8 m).
// A cell passes only when its checks of the real outcome pass: what the
// client was told, what a consumer reads, and what the store holds once
// the server has stopped (SIGTERM, exit 0) and its directory is scanned
// batch by batch, CRCs checked. A cell that does not apply is "n/a" with
// the reason (a client version that cannot send the feature's requests);
// a client that is not installed is "not installed".
//
// The features:
//
//   - produce: a plain producer (not idempotent where the client allows),
//     acks=all, no faults; the same client reads the records back; each
//     record once, at the offset it was acknowledged at, in the store too.
//   - idempotent retries: an idempotent producer (acks=all, retries on)
//     through the proxy's faults (below), a few hundred records in many
//     small requests; every record acknowledged, and found exactly once,
//     at its acknowledged offset, in production order, by a consumer and
//     by the store scan, whose sequences are contiguous per producer. The
//     detail gives the answers dropped, requests refused, and the retries
//     the server answered as duplicates (counted by the proxy).
//   - transactions: the client's transactional producer, a few
//     transactions alternating commit and abort, through the same faults;
//     every transaction must end as planned; kgo consumers at
//     read_uncommitted and read_committed and the store scan (markers,
//     .txnindex files, Kafka's dump) agree that each committed record is
//     there once and no aborted record is ever committed
//     (kafkatest.VerifyTxnLog and its companions).
//   - fetch read_committed: kgo writes a log of committed and aborted
//     transactions (Env.WriteTxnLog); the client reads it at
//     read_committed and must read exactly the committed records, once
//     each, at their offsets, and no aborted one.
//   - groups: two group consumers of the client (where it allows) join
//     one group and commit what they read; once both hold partitions,
//     half the records are produced and read; member 2 commits and
//     leaves, member 1 takes its partitions over from the committed
//     offsets and reads the other half. Every record is read by some
//     member, none twice (everything read was committed before its
//     partition changed hands), and the offsets fetched back from the
//     server (OffsetFetch; for sarama also with its own admin client)
//     are every partition's end. (Env.CheckGroup alone counts a record
//     read twice rather than failing it: groups promise at least once.)
//   - gzip, snappy, lz4, zstd: the client produces with the codec and
//     reads the records back; every data batch in the store carries the
//     codec. zstd needs Produce v7 (Kafka 2.1): n/a below.
//   - sasl_ssl (sasl.go), at each client's newest version row: the
//     server has a SASL_SSL listener too (a CA and a server certificate
//     for 127.0.0.1 made by this program for the cell, the CA file handed
//     to the client; a user with a random password added with `logstore
//     users add` before serve starts, with SCRAM-SHA-256 and
//     SCRAM-SHA-512 credentials). The client produces idempotently
//     (acks=all) over it with SCRAM-SHA-256 and reads the records back
//     with a consumer of a group that commits: each record once, at its
//     acknowledged offset; the committed offsets fetched back are every
//     partition's end (CheckGroup); a kgo consumer and the store scan
//     agree, sequences contiguous (VerifyProduce). It logs in with
//     SCRAM-SHA-512 and PLAIN too (a Metadata request, or listing the
//     topics), and a producer with a wrong password must report the
//     server's refusal (SASL_AUTHENTICATION_FAILED, error 58, or the
//     message the server sends with it) and write nothing: its topic is
//     not in the store. The checkers keep the PLAINTEXT listener behind
//     the proxy; the client under test dials the SASL_SSL listener
//     directly, as the proxy frames Kafka requests and cannot carry TLS
//     (a ClientHello read as a frame size is some 369 MB, which it
//     refuses): no faults, and no request versions in the details.
//
// The admin features (admin.go) make the report's admin table, one row
// per client and version: kgo's kadm and sarama's ClusterAdmin at 2.8
// and newest, confluent-kafka-python's AdminClient, kafka-python's
// KafkaAdminClient, kafkajs's admin and segmentio/kafka-go's Client
// (the last two clients run admin cells only). Each cell sets up with
// kgo, makes one call with the client under test, and checks the
// outcome with kgo; a client without the call is "n/a" with the reason.
//
//   - create topics: a topic of 3 partitions; kgo's Metadata shows
//     partitions 0-2.
//   - delete topics: a topic of 2 partitions with records; kgo's Metadata
//     answers UNKNOWN_TOPIC_OR_PARTITION, and the stopped store has no
//     directory of it.
//   - describe configs: the client reads retention.ms and
//     max.message.bytes (set at creation), segment.bytes and
//     cleanup.policy with the values kgo's DescribeConfigs reads.
//   - alter configs: AlterConfigs (the whole set) of retention.ms alone;
//     kgo reads the new value as DYNAMIC_TOPIC_CONFIG and
//     max.message.bytes (set at creation) back at its default, before
//     and after a restart of the server (Env.Restart).
//   - incremental alter configs: SET retention.ms; kgo reads it, and
//     max.message.bytes keeps its value, before and after a restart.
//   - create partitions: 2 partitions grown to 5; kgo's Metadata shows
//     0-4 and kgo writes to partition 4.
//   - delete records: partition 0 of 10 records deleted below offset 6;
//     kgo's ListOffsets earliest is 6 there, 0 in the other partition,
//     before and after a restart; the client's low watermark, where it
//     reports one, is 6.
//   - describe cluster: one broker, with kgo's node id, at the address
//     the server advertises; cluster id and controller, where the client
//     says them, as kgo's Metadata says. Most clients describe the
//     cluster with Metadata, not DescribeCluster (API 60): the detail
//     says so, and the requests line shows what was sent.
//   - describe log dirs: 20 records in partition 0 of 2; the client's
//     size of partition 0 is that of its segment files once the server
//     stopped, partition 1's is 0.
//
// The details of each cell in the report give the measured facts (records,
// answers dropped, retries recognised as duplicates, segment files,
// batches per codec) and, for a cell that names its client id
// (Cell.ClientID), the highest version of each request its client sent,
// as the proxy saw it (Env.WireVersions): that is what shows that kgo at
// MaxVersions 0.11 spoke Produce v3, and sarama at 2.1 Produce v7.
//
// # Faults
//
// Env.Faults makes the proxy drop every 7th Produce response after the
// server wrote it, closing both sides (the client must retry, and the
// server must recognise the retry as a duplicate and answer with the
// first copy's offsets), and refuse every 11th Produce request by
// closing before it is forwarded (the server never sees it); each at
// most 5 times, so that a cell ends. A cell whose faults never fired
// fails: it would have measured nothing about retries.
//
// # Adding a client
//
// A file registers its cells from init(): a func returning []Cell
// appended to cellSets, and a ClientInfo (name, exact version measured
// at run time, where it was installed from) appended to clientInfos;
// its name goes into clientOrder, the order of the run and the report.
// Cells use Env: its Bootstrap to dial, CreateTopic, Faults, and the
// checkers VerifyProduce, WriteTxnLog with CheckReadCommitted, VerifyTxn,
// CheckGroup and StoreCodecs.
//
// The Go clients are modules of compat/go.mod: franz-go (kgo, and its
// kadm), which the tests use anyway, and github.com/IBM/sarama and
// github.com/segmentio/kafka-go, which nothing but this program
// imports: they are clients under test, and the only way to measure
// them is to build them in.
//
// The other clients run as child processes, each run bounded by the
// cell's context and killed when it ends: kcat directly, and
// confluent-kafka-python, kafka-python (Debian's python3-kafka, admin
// only) and kafkajs through the drivers in compat/clients (embedded,
// run with python3 -c and node -e), which print one JSON line per
// delivery report, record read, transaction end, group assignment and
// admin call's result; external.go turns those lines into kafkatest's
// results, so the same checkers judge them. Their version column is
// "default": librdkafka, kafka-python, kafkajs and kafka-go pick each
// request's version from the server's ApiVersions answer.
package main
