package kafkaserver

import (
	"errors"

	"github.com/logstore/logstore"
)

// topicGone is the code of a partition error that says the partition is
// not there to serve, or errNone for any other error:
//
//   - its topic is being deleted (logstore.ErrTopicDeleting), or is no
//     longer in the catalog, and the partition was closed under the
//     request (logstore.ErrClosed) or its directory is gone
//     (logstore.ErrNoPartition): UNKNOWN_TOPIC_OR_PARTITION (3), as
//     Kafka answers for a partition of a deleted topic (its replica
//     manager no longer hosts it and its metadata no longer names it);
//   - closed while the topic is still there (the store is closing):
//     NOT_LEADER_OR_FOLLOWER (6), on which clients refresh their
//     metadata and retry;
//   - no directory for a topic the catalog still holds: the store was
//     damaged under the server; that is a storage error (56), logged by
//     failureCode, so errNone here.
func (s *Server) topicGone(id logstore.PartitionID, err error) int16 {
	closed, missing := errors.Is(err, logstore.ErrClosed), errors.Is(err, logstore.ErrNoPartition)
	switch {
	case errors.Is(err, logstore.ErrTopicDeleting):
		return errUnknownTopicOrPartition
	case !closed && !missing:
		return errNone
	}
	if _, ok := s.cat.Topic(id.Topic); !ok {
		return errUnknownTopicOrPartition
	}
	if closed {
		return errNotLeaderOrFollower
	}
	return errNone
}
