package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/segment"
)

// nodeID is the broker id of the single node: every partition's leader
// and only replica.
const nodeID = 0

// Local is Admin over a store this process opened (and whose lock it
// holds), with its catalog.
type Local struct {
	store *logstore.Store
	cat   *catalog.Catalog
	// defaultPartitions is what Create makes of -1 partitions, as serve's
	// --default-partitions does.
	defaultPartitions int32
}

// OpenLocal opens the catalog of store (catalog.Open: it finishes what a
// crash interrupted). Create makes -1 partitions defaultPartitions. Close
// closes the catalog, not the store.
func OpenLocal(store *logstore.Store, defaultPartitions int32) (*Local, error) {
	cat, err := catalog.Open(store)
	if err != nil {
		return nil, err
	}
	return &Local{store: store, cat: cat, defaultPartitions: defaultPartitions}, nil
}

// Close closes the catalog.
func (l *Local) Close() error { return l.cat.Close() }

// catalogRefusal is the *Error of op on topic for a catalog error, with
// the code the server answers for it (kafkaserver's topicErrorCode) and
// the catalog's text as the message, as the server sends it. An error
// that is no refusal (I/O) is returned wrapped.
func catalogRefusal(op, topic string, err error) error {
	var code *kerr.Error
	switch {
	case errors.Is(err, catalog.ErrTopicExists):
		code = kerr.TopicAlreadyExists
	case errors.Is(err, catalog.ErrUnknownTopic):
		code = kerr.UnknownTopicOrPartition
	case errors.Is(err, catalog.ErrInvalidTopic), errors.Is(err, logstore.ErrInvalidName):
		code = kerr.InvalidTopicException
	case errors.Is(err, catalog.ErrInvalidPartitions):
		code = kerr.InvalidPartitions
	case errors.Is(err, catalog.ErrUnknownConfig), errors.Is(err, catalog.ErrInvalidConfig):
		code = kerr.InvalidConfig
	default:
		return fmt.Errorf("%s %q: %w", op, topic, err)
	}
	return &Error{Op: op, Topic: topic, Code: code, Message: err.Error()}
}

func topicID(id catalog.TopicID) string { return id.String() }

// List is every topic of the catalog.
func (l *Local) List(context.Context) ([]Topic, error) {
	ts := l.cat.Topics()
	out := make([]Topic, len(ts))
	for i, t := range ts {
		out[i] = Topic{Topic: t.Name, ID: topicID(t.ID), Partitions: t.Partitions}
	}
	return out, nil
}

// Describe opens each partition of the topics to read its offsets.
func (l *Local) Describe(_ context.Context, topics []string, all bool) ([]Description, error) {
	var ts []catalog.Topic
	if len(topics) == 0 {
		ts = l.cat.Topics()
	} else {
		for _, name := range slices.Compact(slices.Sorted(slices.Values(topics))) {
			t, ok := l.cat.Topic(name)
			if !ok {
				return nil, &Error{Op: "describe topic", Topic: name, Code: kerr.UnknownTopicOrPartition,
					Message: "The topic '" + name + "' does not exist."}
			}
			ts = append(ts, t)
		}
	}
	out := make([]Description, 0, len(ts))
	for _, t := range ts {
		d := Description{Topic: t.Name, ID: topicID(t.ID), PartitionCount: t.Partitions, ReplicationFactor: 1,
			Partitions: make([]Partition, 0, t.Partitions)}
		for p := range t.Partitions {
			part, err := l.store.ExistingPartition(t.Name, p)
			if err != nil {
				return nil, fmt.Errorf("describe topic %q: %w", t.Name, err)
			}
			d.Partitions = append(d.Partitions, Partition{Partition: p, Leader: nodeID, Replicas: []int32{nodeID}, ISR: []int32{nodeID},
				StartOffset: part.StartOffset(), EndOffset: part.DurableEnd()})
		}
		d.Configs = l.configs(t.Configs, all)
		out = append(out, d)
	}
	return out, nil
}

// configs are a topic's configs as a server over the store describes
// them: all, or only the topic's own.
func (l *Local) configs(own map[string]string, all bool) []Config {
	entries := kafkaserver.TopicConfigs(l.store.Options(), own)
	out := make([]Config, 0, len(entries))
	for _, e := range entries {
		out = append(out, Config{Name: e.Name, Value: e.Value, Source: e.Source.String()})
	}
	if !all {
		out = ownConfigs(out)
	}
	return out
}

// Create is catalog.Catalog.CreateTopic, the configs checked first as
// the server's CreateTopics checks them (kafkaserver.CheckTopicConfigs:
// a config logstore does not apply is accepted at the value it behaves
// as, and not kept).
func (l *Local) Create(_ context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	if partitions == -1 {
		partitions = l.defaultPartitions
	}
	configs = maps.Clone(configs)
	if err := kafkaserver.CheckTopicConfigs(configs, l.store.Options()); err != nil {
		return Topic{}, &Error{Op: "create topic", Topic: name, Code: kerr.InvalidConfig, Message: err.Error()}
	}
	t, err := l.cat.CreateTopic(name, partitions, configs, false)
	if err != nil {
		return Topic{}, catalogRefusal("create topic", name, err)
	}
	return Topic{Topic: t.Name, ID: topicID(t.ID), Partitions: t.Partitions}, nil
}

// Delete is catalog.Catalog.DeleteTopic.
func (l *Local) Delete(_ context.Context, name string) (Topic, error) {
	t, err := l.cat.DeleteTopic(name)
	if err != nil {
		return Topic{}, catalogRefusal("delete topic", name, err)
	}
	return Topic{Topic: t.Name, ID: topicID(t.ID), Partitions: t.Partitions}, nil
}

// configRefused carries a refusal out of UpdateTopicConfigs' update.
type configRefused struct{ err error }

func (e *configRefused) Error() string { return e.err.Error() }

// AlterConfigs checks ops as the server's IncrementalAlterConfigs does,
// in its order (a config named twice, a bad topic name, then under the
// catalog's lock the new set: names Kafka does not know or read-only
// configs not at their fixed value, then the values, then whether the
// topic exists), with the server's messages, and changes the configs
// durably (catalog.Catalog.UpdateTopicConfigs).
func (l *Local) AlterConfigs(_ context.Context, name string, ops []ConfigOp) ([]Config, error) {
	const op = "alter configs of topic"
	seen := make(map[string]bool, len(ops))
	for _, o := range ops {
		if seen[o.Name] {
			return nil, &Error{Op: op, Topic: name, Code: kerr.InvalidRequest, Message: "Error due to duplicate config keys"}
		}
		seen[o.Name] = true
	}
	if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
		return nil, &Error{Op: op, Topic: name, Code: kerr.InvalidTopicException, Message: err.Error()}
	}
	opts := l.store.Options()
	update := func(current map[string]string) (map[string]string, error) {
		next := current
		if next == nil {
			next = make(map[string]string, len(ops))
		}
		for _, o := range ops {
			if o.Value == nil {
				delete(next, o.Name)
			} else {
				next[o.Name] = *o.Value
			}
		}
		if err := kafkaserver.CheckTopicConfigs(next, opts); err != nil {
			return nil, &configRefused{err}
		}
		return next, nil
	}
	t, err := l.cat.UpdateTopicConfigs(name, update, false)
	var refused *configRefused
	var ce *catalog.ConfigError
	switch {
	case err == nil:
		return l.configs(t.Configs, false), nil
	case errors.As(err, &refused):
		return nil, &Error{Op: op, Topic: name, Code: kerr.InvalidConfig, Message: refused.err.Error()}
	case errors.As(err, &ce):
		return nil, &Error{Op: op, Topic: name, Code: kerr.InvalidConfig,
			Message: "Invalid value " + ce.Value + " for configuration " + ce.Name + ": " + ce.Err.Error()}
	case errors.Is(err, catalog.ErrUnknownTopic):
		return nil, &Error{Op: op, Topic: name, Code: kerr.UnknownTopicOrPartition, Message: "The topic '" + name + "' does not exist."}
	}
	return nil, fmt.Errorf("%s %q: %w", op, name, err)
}

// AddPartitions is catalog.Catalog.CreatePartitions.
func (l *Local) AddPartitions(_ context.Context, name string, total int32) error {
	if _, err := l.cat.CreatePartitions(name, total, false); err != nil {
		return catalogRefusal("add partitions to topic", name, err)
	}
	return nil
}

// DeleteRecords is logstore.Partition.DeleteRecords of a partition of a
// catalog topic.
func (l *Local) DeleteRecords(_ context.Context, topic string, partition int32, offset int64) (int64, error) {
	const op = "delete records of"
	where := topic + "-" + strconv.Itoa(int(partition))
	t, ok := l.cat.Topic(topic)
	if !ok || partition < 0 || partition >= t.Partitions {
		return -1, &Error{Op: op, Topic: where, Code: kerr.UnknownTopicOrPartition}
	}
	part, err := l.store.ExistingPartition(topic, partition)
	if err != nil {
		return -1, fmt.Errorf("%s %q: %w", op, where, err)
	}
	low, err := part.DeleteRecords(offset)
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return -1, &Error{Op: op, Topic: where, Code: kerr.OffsetOutOfRange, Message: kerr.OffsetOutOfRange.Description + " (" + err.Error() + ")"}
	case err != nil:
		return -1, fmt.Errorf("%s %q: %w", op, where, err)
	}
	return low, nil
}
