package kafkaserver

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore"
)

// topic is what the server knows of a topic.
type topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// topicCatalog is the store's topic catalog as the server uses it.
type topicCatalog interface {
	ClusterID() string
	Topics() []topic
	Topic(name string) (topic, bool)
	CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (topic, error)
	DeleteTopic(name string) (topic, error)
	NewProducerID() (int64, error)
	Close() error
}

// Errors of the catalog, by Kafka code.
var (
	errTopicExists       = errors.New("topic already exists")
	errUnknownTopic      = errors.New("unknown topic")
	errInvalidTopicName  = errors.New("invalid topic")
	errBadPartitions     = errors.New("invalid partition count")
	errUnknownConfig     = errors.New("unknown config")
	errDeleteUnsupported = errors.New("deleting topics is not supported yet")
)

// topicErrorCode maps a catalog error to its Kafka code.
func topicErrorCode(err error) int16 {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, errTopicExists):
		return errTopicAlreadyExists
	case errors.Is(err, errUnknownTopic):
		return errUnknownTopicOrPartition
	case errors.Is(err, errInvalidTopicName), errors.Is(err, logstore.ErrInvalidName):
		return errInvalidTopic
	case errors.Is(err, errBadPartitions):
		return errInvalidPartitions
	case errors.Is(err, errUnknownConfig):
		return errInvalidConfig
	case errors.Is(err, errDeleteUnsupported):
		return errInvalidRequest
	}
	return errKafkaStorageError
}

// dirCatalog is the catalog the server keeps until the store has a
// durable one: the topics are the partition directories, and cluster
// and producer ids live in memory.
type dirCatalog struct {
	store   *logstore.Store
	cluster string
	nextPID atomic.Int64

	mu     sync.Mutex
	topics map[string]topic
}

func openCatalog(store *logstore.Store) (topicCatalog, error) {
	ids, err := store.Partitions()
	if err != nil {
		return nil, err
	}
	c := &dirCatalog{store: store, topics: make(map[string]topic)}
	var id [16]byte
	rand.Read(id[:])
	c.cluster = base64.RawURLEncoding.EncodeToString(id[:])
	c.nextPID.Store(time.Now().UnixMilli() << 10)
	for _, p := range ids {
		t := c.topics[p.Topic]
		if t.Name == "" {
			t = topic{Name: p.Topic}
			rand.Read(t.ID[:])
		}
		t.Partitions = max(t.Partitions, p.Partition+1)
		c.topics[p.Topic] = t
	}
	return c, nil
}

func (c *dirCatalog) ClusterID() string { return c.cluster }

func (c *dirCatalog) Topics() []topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]topic, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (c *dirCatalog) Topic(name string) (topic, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topics[name]
	return t, ok
}

func (c *dirCatalog) CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (topic, error) {
	if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
		return topic{}, fmt.Errorf("%w: %w", errInvalidTopicName, err)
	}
	if partitions <= 0 {
		return topic{}, fmt.Errorf("%w: %d", errBadPartitions, partitions)
	}
	for k := range configs {
		return topic{}, fmt.Errorf("%w: %s", errUnknownConfig, k)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.topics[name]; ok {
		return topic{}, fmt.Errorf("%w: %s", errTopicExists, name)
	}
	t := topic{Name: name, Partitions: partitions}
	rand.Read(t.ID[:])
	if validateOnly {
		return t, nil
	}
	for i := range partitions {
		if _, err := c.store.Partition(name, i); err != nil {
			return topic{}, err
		}
	}
	c.topics[name] = t
	return t, nil
}

func (c *dirCatalog) DeleteTopic(name string) (topic, error) {
	if _, ok := c.Topic(name); !ok {
		return topic{}, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	return topic{}, errDeleteUnsupported
}

func (c *dirCatalog) NewProducerID() (int64, error) { return c.nextPID.Add(1), nil }

func (c *dirCatalog) Close() error { return nil }
