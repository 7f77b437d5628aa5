// Package catalog keeps the durable, cluster-wide decisions of a store
// that `logstore serve` answers with: the cluster id, the producer ids
// handed out, and the topics (name, topic id, partition count, configs).
// It also writes Kafka's own partition.metadata file, which names the
// topic id, in every partition directory.
//
// # Files
//
//	DIR/catalog.db                bbolt, on the real OS (like each
//	                              partition's producer-snapshots.db: bbolt
//	                              maps and syncs its file itself, so it is
//	                              outside the vfs seam)
//	DIR/<topic>-<p>/partition.metadata
//	                              Kafka's bytes, through the store's vfs.FS
//
// catalog.db holds bucket "meta" (format version 1; the cluster id, a
// random version 4 UUID as 22 base64url characters like Kafka's; the
// first producer id not yet reserved, 8 bytes big-endian) and bucket
// "topics" (name -> JSON {id, partitions, configs, state, growing},
// state one of "creating", "ready", "deleting"; growing, in a "ready"
// entry only and omitted when 0, the count a CreatePartitions grows the
// topic to, above partitions and at most MaxPartitions). Open refuses a catalog.db it cannot
// read (an unknown format version, an entry that does not decode) with an
// error naming the file that matches ErrDamaged.
//
// partition.metadata is exactly what Kafka writes
// (PartitionMetadataFile): "version: 0\ntopic_id: <id>" with no newline at
// the end, 43 bytes. It is written to partition.metadata.tmp, synced,
// renamed over partition.metadata, and the partition directory is synced,
// so a crash leaves the old file or the new one.
//
// # Producer ids
//
// NewProducerID hands out ids from 0 upward. Before it hands out the first
// id of a block of ProducerIDBlock, it commits the end of that block to
// catalog.db (bbolt fsyncs the commit); Open starts at the committed end.
// So an id is durably reserved before anyone sees it, and after a crash,
// even kill -9 mid-block, the ids not handed out of the last block are
// skipped, never handed out twice. Past 2^63-1 it refuses
// (ErrProducerIDsExhausted).
//
// A partition adopted from elsewhere may remember producers whose ids
// came from another allocator (Kafka's, or hand-set ones written by
// `logstore append`). A new producer given such an id would have its
// first batches refused (out of order, or fenced). So adoption opens the
// adopted partitions and moves the reservation past the highest producer
// id they remember, in the same commit that records the topic. Producers
// written later by hand into a catalog topic are not seen.
//
// # Crash safety: the order of writes
//
// The catalog entry is the point of truth; the directories follow it, and
// Open finishes or undoes whatever a crash left between the two.
//
// CreateTopic:
//
//  1. commit the entry as "creating";
//  2. set the topic's configs on the store (memory only);
//  3. make each partition directory, sync the store directory, write each
//     partition.metadata (temp file, sync, rename, sync the partition
//     directory);
//  4. commit the entry as "ready".
//
// Before 1, directories of the name that something made outside the
// catalog since Open (logstore.Store.Partition of an unknown topic) are
// adopted as Open adopts them, and the creation is refused with
// ErrTopicExists instead of mixing them into a new topic.
//
// A crash before 1 leaves nothing (no directory is made before it). A
// crash after 1 and before 4 leaves a "creating" entry and some
// directories: Open deletes them (logstore.Store.DeleteTopic) and the
// entry, so the topic is wholly absent. After 4 it is wholly there. A
// failure (not a crash) in 2, 3 or 4 undoes the topic at once (see
// Failures below).
//
// DeleteTopic:
//
//  1. commit the entry as "deleting";
//  2. logstore.Store.DeleteTopic: close the partitions, rename each
//     directory to <topic>-<p>.<unique>-delete (a name no listing of
//     partitions returns), sync the store directory, remove them, sync
//     again;
//  3. delete the entry.
//
// A crash before 1 leaves the topic whole. After 1, Open sees "deleting"
// and runs 2 and 3 again (the store's own Open has already removed any
// -delete directory a crash left), so the topic is wholly gone.
//
// CreatePartitions (from N partitions to M):
//
//  1. commit the entry, still "ready" with N partitions, naming M as
//     growing;
//  2. make the directories N..M-1, sync the store directory, write each
//     partition.metadata (as CreateTopic's step 3);
//  3. commit the entry with M partitions and no growing count;
//  4. publish: Metadata shows the M partitions from here.
//
// A crash before 1 leaves the topic at N, with no new directory. After 1
// the growth is finished, never undone: Open, before it looks for
// directories to adopt, runs 2 and 3 again (directories already made are
// taken when their partition.metadata names the topic's id, or has none
// yet), so the topic has M partitions, each directory with its file. So
// after a crash the topic has N partitions or M, never a count between,
// and the new directories are the topic's own: they are never adopted as
// a growth to the highest directory found, and nothing can have written
// to them (no lookup shows them before 4). A failure (not a crash) in 2
// or 3 leaves the growing count in catalog.db and in memory, the topic
// still shown with N: the next CreatePartitions of the topic finishes the
// growth first (then judges its own request against M), and so does the
// next Open; DeleteTopic removes the topic with whatever directories it
// has. The topic's configs are set on the store per topic, so they apply
// to the new partitions as they are opened.
//
// AlterTopicConfigs (the whole new set of a topic's configs, checked as
// CreateTopic checks them):
//
//  1. commit the entry, "ready", with the new configs;
//  2. set them on the store (logstore.Store.SetTopicOptions), which
//     applies them at once to the topic's open partitions;
//  3. publish the change to the lookups, then answer.
//
// A crash before 1 leaves the old configs; after 1 the new ones, which
// Open sets on the store before any partition of the topic opens. So a
// change is durable before anyone is told of it, and a partition never
// runs with configs catalog.db does not hold past the next Open.
//
// # Failures: memory agrees with catalog.db
//
// A failure that is not a crash (an I/O error making, renaming or
// removing a directory, or a catalog.db commit that fails) leaves the
// process running with catalog.db and some directories half way. The
// catalog keeps, in memory, each topic in the state its entry says:
//
//	no entry     absent: CreateTopic makes it, DeleteTopic answers
//	             ErrUnknownTopic
//	"ready"      listed by Topics, Topic and SharedTopic
//	"creating"   a creation failed after step 1 and its undo (remove
//	             the directories, then the entry) failed too: not
//	             listed, DeleteTopic answers ErrUnknownTopic (it never
//	             existed for clients), and CreateTopic of the name first
//	             runs the undo again, then creates afresh (refusing with
//	             the undo's error if it fails again)
//	"deleting"   a deletion failed after its step 1: the topic is marked
//	             for deletion, as Kafka marks one. Not listed (clients
//	             see it gone); CreateTopic of the name is refused with
//	             ErrTopicMarkedForDeletion, which is ErrTopicExists
//	             (Kafka: TOPIC_ALREADY_EXISTS, "marked for deletion"),
//	             and so is a name colliding with it; DeleteTopic runs
//	             steps 2 and 3 again and returns the topic, as Kafka
//	             answers a second deletion of a topic marked for
//	             deletion with no error
//
// The name leaves the in-memory "creating"/"deleting" set only once its
// directories and its entry are gone, and Open finishes both states as it
// finishes them after a crash. So directories left by a failure are
// never taken for ones made outside the catalog and adopted: a
// half-deleted topic does not come back under a new CreateTopic, and a
// half-created one does not lend its directories to the retry.
//
// A deletion that failed after renaming some directories to -delete
// names leaves those to the store's next Open: logstore.Store.DeleteTopic
// removes only the directories it renamed itself. No listing returns
// them, so nothing adopts them.
//
// Open, after those two repairs, sets each topic's configs on the store
// and adopts the partition directories the catalog does not know
// (written by `logstore append`, or copied from Kafka): they become a
// topic whose partition count is the highest partition number + 1, and
// whose id is the one their partition.metadata files name, or a new one.
// Every partition directory of the topic (missing ones are made) gets a
// partition.metadata first; the entry is committed last, so a crash in
// between adopts again, with the same id. A directory of a known topic
// above its partition count grows the topic. partition.metadata files of
// one topic that name different ids are an error
// (ErrInconsistentTopicID), as in Kafka, and so is one that does not
// decode (a *MetadataError naming the file and the byte): Open refuses
// rather than guess, and removing the file lets it write a new one.
//
// # Lookups
//
// Topic, Topics and SharedTopic take no lock. They read a snapshot of the
// topics, which each change publishes under the catalog's lock once it
// is made in memory: a copy of the whole map, never modified after.
// So a lookup never waits for a CreateTopic or DeleteTopic under way,
// whose catalog.db commits and directory work hold that lock. A topic
// shows from just after its "ready" entry is committed (before
// CreateTopic returns) until just after its "deleting" entry is
// committed (before DeleteTopic touches a directory). A creation that
// fails publishes nothing; a deletion that fails after its step 1 has
// published the topic's removal (it is marked for deletion, see
// Failures). Topic and Topics return copies of the configs;
// SharedTopic, the lookup of each partition of a request, returns the
// snapshot's own map, which its callers only read.
//
// # Topic configs
//
// retention.ms, retention.bytes, segment.bytes, segment.ms and
// max.message.bytes, with Kafka 4's types, ranges and meanings (see
// ParseConfigs for how they map onto the store's options). Any other
// config is refused (ErrUnknownConfig). The configs are kept as given and
// set on the store (logstore.Store.SetTopicOptions) at CreateTopic, at
// AlterTopicConfigs (which replaces the whole set, applied at once to the
// open partitions) and at every Open, before a partition of the topic is
// opened.
//
// Topic names follow Kafka: the store's name rules, and a name that equals
// another once '.' is taken as '_' collides with it (ErrInvalidTopic, as
// Kafka's INVALID_TOPIC_EXCEPTION); the same name is ErrTopicExists.
package catalog
