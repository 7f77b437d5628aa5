package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Admin is what `logstore topics` asks of a store (Local) or a broker
// (Broker). Every method either does all it says or, refused, nothing.
type Admin interface {
	// List returns every topic, sorted by name.
	List(ctx context.Context) ([]Topic, error)
	// Describe returns the topics named, or every topic when none is,
	// sorted by name: partitions with their offsets, and the topic's own
	// configs, or with all every config.
	Describe(ctx context.Context, topics []string, all bool) ([]Description, error)
	// Create creates topic name with partitions partitions (-1: the
	// broker's default) and configs.
	Create(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error)
	// Delete deletes topic name and returns it as it was.
	Delete(ctx context.Context, name string) (Topic, error)
	// AlterConfigs applies ops to topic name's configs, incrementally
	// (IncrementalAlterConfigs' SET and DELETE), and returns the topic's
	// own configs after the change.
	AlterConfigs(ctx context.Context, name string, ops []ConfigOp) ([]Config, error)
	// AddPartitions grows topic name to total partitions.
	AddPartitions(ctx context.Context, name string, total int32) error
	// DeleteRecords moves the log start of a partition to offset (-1:
	// the high watermark) and returns the log start after it, Kafka's
	// low watermark.
	DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error)
}

// Topic is a topic as list shows it.
type Topic struct {
	Topic      string `json:"topic"`
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
}

// Description is a topic as describe shows it.
type Description struct {
	Topic             string      `json:"topic"`
	ID                string      `json:"id"`
	PartitionCount    int32       `json:"partitionCount"`
	ReplicationFactor int         `json:"replicationFactor"`
	Partitions        []Partition `json:"partitions"`
	// Configs are the topic's own (source DYNAMIC_TOPIC_CONFIG), or
	// with all configs every config, sorted by name.
	Configs []Config `json:"configs"`
}

// Partition is a partition of a described topic.
type Partition struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	// StartOffset is the log start (Kafka's earliest offset), EndOffset
	// the high watermark (the latest); -1 where the broker answered an
	// error for the partition.
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// Config is one config of a topic: its value (nil if the broker hides
// it) and its source, as Kafka names it (DYNAMIC_TOPIC_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...).
type Config struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

// sourceTopic is the source of a topic's own config.
const sourceTopic = "DYNAMIC_TOPIC_CONFIG"

// ConfigOp is one change of alter-configs: Value set (SET) or nil
// (DELETE: the topic's own value goes, the broker's applies again).
type ConfigOp struct {
	Name  string
	Value *string
}

// Error is a refusal in Kafka's terms: what was refused (Op, Topic),
// Kafka's error code, and the broker's message ("" when it sent none:
// the code's own description is shown). It matches Code with errors.Is.
type Error struct {
	Op      string // "create topic", "describe topic", ...
	Topic   string
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Description
	}
	return fmt.Sprintf("%s %q: %s: %s", e.Op, e.Topic, e.Code.Message, msg)
}

func (e *Error) Unwrap() error { return e.Code }

// refusal is the *Error of op on topic for err, a *kerr.Error a broker
// answered (other errors, from the client itself, are wrapped as they
// are), with the broker's message.
func refusal(op, topic string, err error, msg string) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &Error{Op: op, Topic: topic, Code: ke, Message: msg}
	}
	return fmt.Errorf("%s %q: %w", op, topic, err)
}

// ParseConfigPairs parses the k=v words of --config and --set into a
// map, refusing a word without '=', an empty name, and a name given
// twice, each error naming the word. The value is what follows the
// first '=' (it may hold '=' and be empty), as kafka-topics.sh splits
// it.
func ParseConfigPairs(flag string, pairs []string) (map[string]string, error) {
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %q: want NAME=VALUE", flag, p)
		case strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("%s %q: the config name is empty", flag, p)
		case !utf8.ValidString(p):
			return nil, fmt.Errorf("%s %q: not valid UTF-8", flag, p)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s %q: config %s given twice", flag, p, name)
		}
		out[name] = value
	}
	return out, nil
}

// ParseConfigOps parses alter-configs' --set NAME=VALUE words and
// --delete NAME words into ops, in that order, refusing what
// ParseConfigPairs refuses, an empty --delete name, and a name both set
// and deleted or deleted twice (the broker would refuse the request:
// "Error due to duplicate config keys").
func ParseConfigOps(sets, deletes []string) ([]ConfigOp, error) {
	set, err := ParseConfigPairs("--set", sets)
	if err != nil {
		return nil, err
	}
	ops := make([]ConfigOp, 0, len(sets)+len(deletes))
	for _, p := range sets {
		name, _, _ := strings.Cut(p, "=")
		v := set[name]
		ops = append(ops, ConfigOp{Name: name, Value: &v})
	}
	deleted := make(map[string]bool, len(deletes))
	for _, name := range deletes {
		_, isSet := set[name]
		switch {
		case strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("--delete %q: the config name is empty", name)
		case isSet:
			return nil, fmt.Errorf("--delete %s: config %s is also given to --set", name, name)
		case deleted[name]:
			return nil, fmt.Errorf("--delete %s: given twice", name)
		}
		deleted[name] = true
		ops = append(ops, ConfigOp{Name: name})
	}
	return ops, nil
}

// ownConfigs keeps the configs whose source is the topic's own.
func ownConfigs(cs []Config) []Config {
	out := []Config{}
	for _, c := range cs {
		if c.Source == sourceTopic {
			out = append(out, c)
		}
	}
	return out
}
