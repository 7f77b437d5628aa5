package kafkaserver

// The config table: every topic config and broker config DescribeConfigs
// lists, by Kafka's name, with Kafka's type and default (Kafka 4's
// LogConfig and KafkaConfig), the broker config a topic config falls
// back to (Kafka's ServerTopicConfigSynonyms), a short doc of our own,
// and where the server's value comes from. AlterConfigs and
// IncrementalAlterConfigs (alterconfigs.go) use it too: a topic config
// with perTopic set is one the catalog takes (catalog.SupportedConfigs)
// and the alter calls change (not read-only); the others are read-only
// and refused with INVALID_CONFIG, and so is a name not in the table;
// typ LIST is what APPEND and SUBTRACT take.

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/segment"
)

// topicConfig is one topic config as DescribeConfigs reports it.
type topicConfig struct {
	name string
	typ  kmsg.ConfigType
	// kafkaDefault is Kafka's default value of the topic config.
	kafkaDefault string
	// broker is the broker config the topic config falls back to
	// (Kafka's first synonym), "" for none. brokerDefault says whether
	// Kafka gives that broker config a default of its own (log.roll.ms
	// and log.retention.ms have none: Kafka derives them from
	// log.roll.hours and log.retention.hours and lists no synonym).
	broker        string
	brokerDefault bool
	// hoursSynonym, for a broker config without a default, is the one
	// Kafka derives it from, at its default of 168 hours (log.roll.hours,
	// log.retention.hours): Kafka lists it after the broker config when
	// that is set.
	hoursSynonym string
	doc          string
	// perTopic: the catalog takes it per topic (CreateTopics,
	// AlterConfigs, IncrementalAlterConfigs), so it is not read-only.
	// The others are fixed for every topic.
	perTopic bool
	// store is the store-wide value the server applies (the broker's),
	// from the store's Options; nil is kafkaDefault, which the server
	// then applies or, for a config logstore does not implement, at
	// least behaves as.
	store func(o logstore.Options) string
}

// brokerConfig is one broker config as DescribeConfigs reports it.
type brokerConfig struct {
	name string
	typ  kmsg.ConfigType
	// kafkaDefault is Kafka's default, nil for none.
	kafkaDefault *string
	doc          string
	// value is the server's value, nil for none.
	value func(s *Server) *string
	// hoursSynonym: as topicConfig's.
	hoursSynonym string
}

const maxLong = "9223372036854775807"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ms(d time.Duration) string { return itoa(d.Milliseconds()) }

// Store-wide values, from the store's Options: zero is Kafka's default
// for the segment fields (as segment.Config applies it); retention zero
// or negative keeps everything, Kafka's -1 (logstore's default, where
// Kafka's retention.ms is 7 days).
func storeSegmentBytes(o logstore.Options) string {
	return orDefault(o.SegmentBytes, segment.DefaultSegmentBytes)
}
func storeMaxMessageBytes(o logstore.Options) string {
	return orDefault(o.MaxMessageBytes, segment.DefaultMaxBatchBytes)
}
func storeIndexBytes(o logstore.Options) string {
	return orDefault(o.SegmentIndexBytes, segment.DefaultIndexMaxBytes)
}
func storeIndexInterval(o logstore.Options) string {
	return orDefault(o.IndexIntervalBytes, segment.DefaultIndexIntervalBytes)
}
func storeSegmentMs(o logstore.Options) string {
	return ms(cmp.Or(o.SegmentTime, segment.DefaultSegmentMaxAge))
}
func storeRetentionBytes(o logstore.Options) string {
	if o.RetentionBytes <= 0 {
		return "-1"
	}
	return itoa(o.RetentionBytes)
}
func storeRetentionMs(o logstore.Options) string {
	if o.RetentionTime <= 0 {
		return "-1"
	}
	return ms(o.RetentionTime)
}

// orDefault is v, or def when v is zero, in decimal.
func orDefault[N ~int | ~int32 | ~int64](v N, def int64) string {
	return itoa(cmp.Or(int64(v), def))
}

// topicConfigs are the topic configs, sorted by name (init). The first
// five are the ones the catalog takes per topic; the index ones the
// store applies store-wide only; the rest logstore does not implement
// (no replication, no compaction, no flush policy but --sync, batches
// kept as the producer compressed them, timestamps as the producer set
// them), reported at Kafka's default, read-only. cleanup.policy is
// "delete": retention deletes whole segments; compaction does not exist.
var topicConfigs = []topicConfig{
	{name: catalog.ConfigSegmentBytes, typ: kmsg.ConfigTypeInt, kafkaDefault: "1073741824", broker: "log.segment.bytes", brokerDefault: true, perTopic: true, store: storeSegmentBytes,
		doc: "The size in bytes at which a partition rolls to a new segment file."},
	{name: catalog.ConfigSegmentMs, typ: kmsg.ConfigTypeLong, kafkaDefault: "604800000", broker: "log.roll.ms", hoursSynonym: "log.roll.hours", perTopic: true, store: storeSegmentMs,
		doc: "The time in milliseconds after which a partition rolls to a new segment file."},
	{name: catalog.ConfigMaxMessageBytes, typ: kmsg.ConfigTypeInt, kafkaDefault: "1048588", broker: "message.max.bytes", brokerDefault: true, perTopic: true, store: storeMaxMessageBytes,
		doc: "The largest record batch, in bytes, a partition accepts."},
	{name: catalog.ConfigRetentionBytes, typ: kmsg.ConfigTypeLong, kafkaDefault: "-1", broker: "log.retention.bytes", brokerDefault: true, perTopic: true, store: storeRetentionBytes,
		doc: "The size in bytes a partition is kept to by deleting its oldest segments; -1 keeps everything."},
	{name: catalog.ConfigRetentionMs, typ: kmsg.ConfigTypeLong, kafkaDefault: "604800000", broker: "log.retention.ms", hoursSynonym: "log.retention.hours", perTopic: true, store: storeRetentionMs,
		doc: "How long in milliseconds a segment is kept after its newest record; -1 keeps everything."},
	{name: "segment.index.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: "10485760", broker: "log.index.size.max.bytes", brokerDefault: true, store: storeIndexBytes,
		doc: "The largest offset or time index of a segment, in bytes; a full index rolls the segment."},
	{name: "index.interval.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: "4096", broker: "log.index.interval.bytes", brokerDefault: true, store: storeIndexInterval,
		doc: "How many bytes of batches go between two offset index entries."},
	{name: "cleanup.policy", typ: kmsg.ConfigTypeList, kafkaDefault: "delete", broker: "log.cleanup.policy", brokerDefault: true,
		doc: "How old segments are removed: delete, by retention; compaction is not supported."},
	{name: "compression.type", typ: kmsg.ConfigTypeString, kafkaDefault: "producer", broker: "compression.type", brokerDefault: true,
		doc: "Batches are stored compressed as the producer compressed them."},
	{name: "message.timestamp.type", typ: kmsg.ConfigTypeString, kafkaDefault: "CreateTime", broker: "log.message.timestamp.type", brokerDefault: true,
		doc: "Records keep the timestamp the producer gave them."},
	{name: "min.insync.replicas", typ: kmsg.ConfigTypeInt, kafkaDefault: "1", broker: "min.insync.replicas", brokerDefault: true,
		doc: "The replicas that must acknowledge a write with acks=all; a single node has one."},
	{name: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean, kafkaDefault: "false", broker: "unclean.leader.election.enable", brokerDefault: true,
		doc: "Whether an out-of-sync replica may become leader; a single node has no other replica."},
	{name: "preallocate", typ: kmsg.ConfigTypeBoolean, kafkaDefault: "false", broker: "log.preallocate", brokerDefault: true,
		doc: "Whether segment files are preallocated; they are not."},
	{name: "flush.messages", typ: kmsg.ConfigTypeLong, kafkaDefault: maxLong, broker: "log.flush.interval.messages", brokerDefault: true,
		doc: "Records between forced fsyncs; the server's sync mode decides fsyncs instead."},
	{name: "flush.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: maxLong, broker: "log.flush.interval.ms",
		doc: "Milliseconds between forced fsyncs; the server's sync mode decides fsyncs instead."},
	{name: "file.delete.delay.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: "60000", broker: "log.segment.delete.delay.ms", brokerDefault: true,
		doc: "How long a deleted segment's files wait before removal."},
	{name: "segment.jitter.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: "0", broker: "log.roll.jitter.ms",
		doc: "Random jitter subtracted from segment.ms; none is applied."},
	{name: "delete.retention.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: "86400000", broker: "log.cleaner.delete.retention.ms", brokerDefault: true,
		doc: "How long compaction keeps delete markers; no compaction is done."},
	{name: "min.compaction.lag.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: "0", broker: "log.cleaner.min.compaction.lag.ms", brokerDefault: true,
		doc: "The least time a record stays uncompacted; no compaction is done."},
	{name: "max.compaction.lag.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: maxLong, broker: "log.cleaner.max.compaction.lag.ms", brokerDefault: true,
		doc: "The most time a record stays uncompacted; no compaction is done."},
	{name: "min.cleanable.dirty.ratio", typ: kmsg.ConfigTypeDouble, kafkaDefault: "0.5", broker: "log.cleaner.min.cleanable.ratio", brokerDefault: true,
		doc: "The dirty share of a log that starts compaction; no compaction is done."},
}

var topicConfigByName map[string]*topicConfig

func sp(s string) *string { return &s }

// brokerConfigs are the broker configs, sorted by name (init): the ones
// the server has a value for, from its Config (the serve flags) and the
// store's Options. None is dynamic, so all are read-only.
var brokerConfigs = []brokerConfig{
	{name: "broker.id", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("-1"), doc: "The id of this broker, always 0.",
		value: func(*Server) *string { return sp(strconv.Itoa(nodeID)) }},
	{name: "log.dir", typ: kmsg.ConfigTypeString, kafkaDefault: sp("/tmp/kafka-logs"), doc: "The store's directory.",
		value: func(s *Server) *string { return sp(s.store.Dir()) }},
	{name: "log.dirs", typ: kmsg.ConfigTypeString, doc: "The store's directory; a store has one.",
		value: func(s *Server) *string { return sp(s.store.Dir()) }},
	{name: "log.segment.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("1073741824"), doc: "The size in bytes at which a partition rolls to a new segment, for topics that do not set segment.bytes.",
		value: func(s *Server) *string { return sp(storeSegmentBytes(s.store.Options())) }},
	{name: "log.roll.ms", typ: kmsg.ConfigTypeLong, hoursSynonym: "log.roll.hours", doc: "The age in milliseconds at which a partition rolls to a new segment, for topics that do not set segment.ms.",
		value: func(s *Server) *string { return nonDefault(storeSegmentMs(s.store.Options()), "604800000") }},
	{name: "log.retention.ms", typ: kmsg.ConfigTypeLong, hoursSynonym: "log.retention.hours", doc: "How long in milliseconds segments are kept, for topics that do not set retention.ms; -1 keeps everything.",
		value: func(s *Server) *string { return nonDefault(storeRetentionMs(s.store.Options()), "604800000") }},
	{name: "log.roll.hours", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("168"), doc: "The age in hours at which a partition rolls to a new segment, unless log.roll.ms is set.",
		value: func(*Server) *string { return sp("168") }},
	{name: "log.retention.hours", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("168"), doc: "How long in hours segments are kept, unless log.retention.ms is set.",
		value: func(*Server) *string { return sp("168") }},
	{name: "log.retention.bytes", typ: kmsg.ConfigTypeLong, kafkaDefault: sp("-1"), doc: "The size in bytes a partition is kept to, for topics that do not set retention.bytes; -1 keeps everything.",
		value: func(s *Server) *string { return sp(storeRetentionBytes(s.store.Options())) }},
	{name: "message.max.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("1048588"), doc: "The largest record batch in bytes, for topics that do not set max.message.bytes.",
		value: func(s *Server) *string { return sp(storeMaxMessageBytes(s.store.Options())) }},
	{name: "log.index.size.max.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("10485760"), doc: "The largest offset or time index of a segment, in bytes.",
		value: func(s *Server) *string { return sp(storeIndexBytes(s.store.Options())) }},
	{name: "log.index.interval.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("4096"), doc: "How many bytes of batches go between two offset index entries.",
		value: func(s *Server) *string { return sp(storeIndexInterval(s.store.Options())) }},
	{name: "log.cleanup.policy", typ: kmsg.ConfigTypeList, kafkaDefault: sp("delete"), doc: "How old segments are removed: delete, by retention.",
		value: func(*Server) *string { return sp("delete") }},
	{name: "auto.create.topics.enable", typ: kmsg.ConfigTypeBoolean, kafkaDefault: sp("true"), doc: "Whether a topic a producer or a metadata request names is created when it does not exist.",
		value: func(s *Server) *string { return sp(strconv.FormatBool(s.cfg.AutoCreateTopics)) }},
	{name: "num.partitions", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("1"), doc: "The partitions of a topic created automatically or with -1.",
		value: func(s *Server) *string { return sp(itoa(int64(s.cfg.DefaultPartitions))) }},
	{name: "default.replication.factor", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("1"), doc: "The replication factor of new topics; a single node has 1.",
		value: func(*Server) *string { return sp("1") }},
	{name: "socket.request.max.bytes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("104857600"), doc: "The largest request in bytes; a larger one closes its connection.",
		value: func(s *Server) *string { return sp(itoa(int64(s.cfg.MaxRequestBytes))) }},
	{name: "connections.max.idle.ms", typ: kmsg.ConfigTypeLong, kafkaDefault: sp("600000"), doc: "How long in milliseconds a connection may send nothing before it is closed.",
		value: func(s *Server) *string { return sp(ms(s.cfg.IdleTimeout)) }},
	{name: "transaction.max.timeout.ms", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("900000"), doc: "The longest transaction timeout in milliseconds a producer may ask for.",
		value: func(s *Server) *string { return sp(ms(s.cfg.TransactionMaxTimeout)) }},
	{name: "transactional.id.expiration.ms", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("604800000"), doc: "How long in milliseconds an idle transactional id is remembered; -1 is forever.",
		value: func(s *Server) *string {
			return sp(durationOr(s.cfg.TransactionalIDExpiration, DefaultTransactionalIDExpiration, "-1"))
		}},
	{name: "group.initial.rebalance.delay.ms", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("3000"), doc: "How long in milliseconds a new group's first rebalance waits for more members.",
		value: func(s *Server) *string {
			return sp(durationOr(s.cfg.GroupInitialRebalanceDelay, 3*time.Second, "0"))
		}},
	{name: "offsets.retention.minutes", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("10080"), doc: "How long in minutes an empty group's committed offsets are kept.",
		value: func(s *Server) *string {
			d := s.cfg.OffsetsRetention
			if d <= 0 {
				d = 7 * 24 * time.Hour
			}
			return sp(itoa(int64(d / time.Minute)))
		}},
	{name: "group.min.session.timeout.ms", typ: kmsg.ConfigTypeInt, kafkaDefault: sp("6000"), doc: "The shortest session timeout in milliseconds a group member may ask for.",
		value: func(s *Server) *string { return sp(durationOr(s.cfg.GroupMinSessionTimeout, 6*time.Second, "")) }},
}

// nonDefault is v, or nil when v is Kafka's derived default def (the
// broker configs Kafka defines without a default: it derives them).
func nonDefault(v, def string) *string {
	if v == def {
		return nil
	}
	return &v
}

// durationOr is d in milliseconds, def's when d is 0, negative when d
// is negative (or def's if negative is "").
func durationOr(d, def time.Duration, negative string) string {
	switch {
	case d == 0:
		d = def
	case d < 0 && negative != "":
		return negative
	case d < 0:
		d = def
	}
	return ms(min(d, time.Duration(math.MaxInt32)*time.Millisecond))
}

func init() {
	slices.SortFunc(topicConfigs, func(a, b topicConfig) int { return strings.Compare(a.name, b.name) })
	slices.SortFunc(brokerConfigs, func(a, b brokerConfig) int { return strings.Compare(a.name, b.name) })
	topicConfigByName = make(map[string]*topicConfig, len(topicConfigs))
	for i := range topicConfigs {
		topicConfigByName[topicConfigs[i].name] = &topicConfigs[i]
	}
}

// topicValue is a topic's own value of c as Kafka shows it (parsed, then
// printed: " 1000" is 1000), from the configs it was created with.
func (c *topicConfig) topicValue(raw string) string {
	if c.typ == kmsg.ConfigTypeInt || c.typ == kmsg.ConfigTypeLong {
		if v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64); err == nil {
			return itoa(v)
		}
	}
	return raw
}
