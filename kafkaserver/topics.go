package kafkaserver

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
)

// topic is what the server knows of a topic.
type topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Configs, from topicCatalog.Topic, may be the catalog's own map
	// (catalog.SharedTopic): read-only.
	Configs map[string]string
}

// topicCatalog is the store's topic catalog (package catalog) as the
// server uses it.
type topicCatalog interface {
	ClusterID() string
	Topics() []topic
	Topic(name string) (topic, bool)
	CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (topic, error)
	DeleteTopic(name string) (topic, error)
	CreatePartitions(name string, total int32, validateOnly bool) (topic, error)
	UpdateTopicConfigs(name string, update func(current map[string]string) (map[string]string, error), validateOnly bool) (topic, error)
	NewProducerID() (int64, error)
	Close() error
}

// topicErrorCode maps a catalog error to its Kafka code.
func topicErrorCode(err error) int16 {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, catalog.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, catalog.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, catalog.ErrInvalidTopic), errors.Is(err, logstore.ErrInvalidName):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, catalog.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, catalog.ErrUnknownConfig), errors.Is(err, catalog.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	}
	return kerr.KafkaStorageError.Code
}

// storeCatalog adapts *catalog.Catalog.
type storeCatalog struct{ c *catalog.Catalog }

func openCatalog(store *logstore.Store) (topicCatalog, error) {
	c, err := catalog.Open(store)
	if err != nil {
		return nil, err
	}
	return storeCatalog{c}, nil
}

func fromCatalog(t catalog.Topic) topic {
	return topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, Configs: t.Configs}
}

func (a storeCatalog) ClusterID() string { return a.c.ClusterID() }

func (a storeCatalog) Topics() []topic {
	ts := a.c.Topics()
	out := make([]topic, len(ts))
	for i, t := range ts {
		out[i] = fromCatalog(t)
	}
	return out
}

// Topic is the lookup of every partition of a request: lock-free, and
// its Configs are shared (catalog.SharedTopic).
func (a storeCatalog) Topic(name string) (topic, bool) {
	t, ok := a.c.SharedTopic(name)
	return fromCatalog(t), ok
}

func (a storeCatalog) CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (topic, error) {
	t, err := a.c.CreateTopic(name, partitions, configs, validateOnly)
	return fromCatalog(t), err
}

func (a storeCatalog) DeleteTopic(name string) (topic, error) {
	t, err := a.c.DeleteTopic(name)
	return fromCatalog(t), err
}

func (a storeCatalog) UpdateTopicConfigs(name string, update func(map[string]string) (map[string]string, error), validateOnly bool) (topic, error) {
	t, err := a.c.UpdateTopicConfigs(name, update, validateOnly)
	return fromCatalog(t), err
}

func (a storeCatalog) NewProducerID() (int64, error) { return a.c.NewProducerID() }

func (a storeCatalog) Close() error { return a.c.Close() }
