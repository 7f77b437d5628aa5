package logstore

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNoPartition: Store.ExistingPartition was asked for a partition whose
// directory does not exist (never made, or removed by DeleteTopic).
var ErrNoPartition = errors.New("partition directory does not exist")

// ExistingPartition is Partition for a partition whose directory exists
// already: it never creates one. A missing directory is an error
// wrapping ErrNoPartition; a topic that DeleteTopic is removing,
// ErrTopicDeleting, as for Partition.
//
// A server that learns of topics from a catalog opens their partitions
// with it, so a request that raced with the deletion of its topic cannot
// bring the topic's directory back: the existence check and the open are
// one step against DeleteTopic, which waits for partitions being opened
// and closes them before it renames their directories. The catalog alone
// makes partition directories.
func (s *Store) ExistingPartition(topic string, partition int32) (*Partition, error) {
	return s.partition(topic, partition, false)
}

// existingPartitionDir checks that pdir is a directory that exists:
// ErrNoPartition when there is none.
func (s *Store) existingPartitionDir(pdir string) error {
	_, err := s.fs.ReadDir(pdir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNoPartition, pdir)
	}
	return err
}
