package catalog

import (
	"errors"
	"fmt"

	"github.com/logstore/logstore"
)

// Sentinel errors of package catalog; test them with errors.Is. The
// Kafka error code each maps to is in parentheses.
var (
	// ErrTopicExists: CreateTopic of a name the catalog holds
	// (TOPIC_ALREADY_EXISTS, 36).
	ErrTopicExists = errors.New("topic already exists")

	// ErrTopicMarkedForDeletion: CreateTopic of a name whose deletion
	// failed part way and is not finished yet (a retried DeleteTopic or
	// the next Open finishes it). It is also ErrTopicExists, as Kafka
	// answers TOPIC_ALREADY_EXISTS (36) for a topic marked for deletion.
	ErrTopicMarkedForDeletion = fmt.Errorf("%w: it is marked for deletion", ErrTopicExists)

	// ErrUnknownTopic: DeleteTopic of a name the catalog does not hold
	// (UNKNOWN_TOPIC_OR_PARTITION, 3).
	ErrUnknownTopic = errors.New("unknown topic")

	// ErrInvalidTopic: a name Kafka would not accept (the error then
	// also wraps logstore.ErrInvalidName), or one that collides with a
	// topic the catalog holds once '.' and '_' are taken as the same
	// character, as Kafka refuses it (INVALID_TOPIC_EXCEPTION, 17).
	ErrInvalidTopic = errors.New("invalid topic")

	// ErrInvalidPartitions: a partition count below 1 or above
	// MaxPartitions (INVALID_PARTITIONS, 37).
	ErrInvalidPartitions = errors.New("invalid number of partitions")

	// ErrUnknownConfig: a topic config this store does not support
	// (INVALID_CONFIG, 40). Always inside a *ConfigError.
	ErrUnknownConfig = errors.New("unknown topic config")

	// ErrInvalidConfig: a supported config with a value out of Kafka's
	// range or not a number (INVALID_CONFIG, 40). Always inside a
	// *ConfigError.
	ErrInvalidConfig = errors.New("invalid topic config value")

	// ErrProducerIDsExhausted: every producer id up to 2^63-1 has been
	// handed out. It cannot happen in practice; NewProducerID refuses
	// cleanly rather than wrap.
	ErrProducerIDsExhausted = errors.New("producer ids exhausted")

	// ErrMalformedMetadata: a partition.metadata file that does not
	// decode. Always inside a *MetadataError.
	ErrMalformedMetadata = errors.New("malformed partition.metadata")

	// ErrDamaged: catalog.db holds what this build cannot read (an
	// unknown format version, a producer id reservation or a topic
	// entry that does not decode, or a file bbolt panics on). Open
	// refuses it rather than guess.
	ErrDamaged = errors.New("catalog.db damaged")

	// ErrInconsistentTopicID: the partition.metadata files of one topic
	// name different topic ids, or one names an id other than the
	// catalog's (Kafka's InconsistentTopicIdException).
	ErrInconsistentTopicID = errors.New("inconsistent topic id")
)

// ErrClosed is logstore.ErrClosed: the catalog was closed.
var ErrClosed = logstore.ErrClosed

// ConfigError is a topic config CreateTopic refused. Err is
// ErrUnknownConfig or ErrInvalidConfig, possibly wrapped with the reason.
type ConfigError struct {
	Name, Value string
	Err         error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config %s=%q: %v", e.Name, e.Value, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// MetadataError is a partition.metadata file that does not decode: the
// file, the byte offset where decoding stopped, and why. It matches
// ErrMalformedMetadata.
type MetadataError struct {
	File   string
	Offset int
	Reason string
}

func (e *MetadataError) Error() string {
	return fmt.Sprintf("%s: byte %d: %s: %s", e.File, e.Offset, ErrMalformedMetadata, e.Reason)
}

func (e *MetadataError) Unwrap() error { return ErrMalformedMetadata }
