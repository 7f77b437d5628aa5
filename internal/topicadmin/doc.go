// Package topicadmin is the logic of `logstore topics`: listing and
// describing a store's topics, creating and deleting them, changing
// their configs and partition counts, and deleting records, as Kafka's
// kafka-topics.sh, kafka-configs.sh and kafka-delete-records.sh do.
//
// Admin is the one interface the command uses, with two implementations
// that answer alike:
//
//   - Local works on a store the process opened itself (and so holds
//     its lock): the store's catalog (package catalog) for topics,
//     partitions and configs, logstore.Partition.DeleteRecords for
//     records. Its checks and its refusals are those of logstore serve
//     over the same store: the catalog's own checks, and for configs the
//     server's check of read-only configs (kafkaserver.CheckTopicConfigs)
//     and its table of values and sources (kafkaserver.TopicConfigs).
//   - Broker asks a running server (logstore serve or any Kafka broker)
//     through franz-go's kadm: Metadata, ListOffsets, DescribeConfigs,
//     CreateTopics, DeleteTopics, IncrementalAlterConfigs,
//     CreatePartitions and DeleteRecords.
//
// A refusal is an *Error: the operation, the topic, Kafka's error code
// (a *kerr.Error, which errors.Is matches) and the broker's message, the
// same text from Local as a server over the store would answer, but for
// DeleteRecords, whose answer carries no message (Local adds the store's
// reason). A refusal changes nothing.
//
// What the command prints (the text and the JSON of the values here) is
// its output contract, described in `logstore topics --help`:
//
//   - list: one row per topic, its name, partition count and topic id
//     (Kafka's base64url form, as Kafka's Uuid prints it); JSON
//     {"topic","id","partitions"} per line.
//   - describe: per topic, a line like kafka-topics.sh --describe's
//     (Topic, TopicId, PartitionCount, ReplicationFactor, and Configs:
//     the topic's own, DYNAMIC_TOPIC_CONFIG ones), then one line per
//     partition (Leader 0, Replicas 0, Isr 0 on a single node, and the
//     start and end offsets: the log start and the high watermark), then
//     with all configs one line per config with its value and source, as
//     kafka-configs.sh --describe --all lists them. JSON: one object per
//     topic per line.
//   - create, delete, alter-configs, add-partitions, delete-records: one
//     line saying what was done, in Kafka's words where its tools print
//     one; JSON: one object.
//
// Text columns are aligned with text/tabwriter; topic names hold no
// spaces, and config values shown are numbers or Kafka's fixed words.
package topicadmin
