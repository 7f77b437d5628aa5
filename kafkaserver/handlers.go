package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// What every API's handler shares: the answer that completes later, the
// kmsg topic/partition walk, the partition lookup, and the failure
// codes. Every handler has dispatch.go's signature: it decodes nothing
// (req is kmsg's, decoded), sets p.resp, notes the first error code in
// p (p.setErr), and either answers at once or completes p later through
// answerLater.
//
// The error codes are franz-go's kerr (kerr.X.Code). errNone is no
// error, which kerr does not name.
const errNone int16 = 0

// Two codes keep a short name, which partition and fetch.build use them
// by.
var (
	errUnknownTopicOrPartition = kerr.UnknownTopicOrPartition.Code
	errOffsetOutOfRange        = kerr.OffsetOutOfRange.Code
)

// leaderEpochCode checks a request's CurrentLeaderEpoch (KIP-320: Fetch
// v9+, ListOffsets v4+, OffsetForLeaderEpoch v2+) as Kafka's
// Partition.checkCurrentLeaderEpoch does against the partition's epoch
// (logstore.Partition.LeaderEpoch: 0, or an adopted partition's latest):
// -1 is unchecked, a lower epoch is 74 FENCED_LEADER_EPOCH (the client's
// leader is older than ours), a higher one 76 UNKNOWN_LEADER_EPOCH (the
// client knows of a leader we do not).
func leaderEpochCode(current int32, part *logstore.Partition) int16 {
	leaderEpoch := part.LeaderEpoch()
	switch {
	case current == -1 || current == leaderEpoch:
		return errNone
	case current < leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// answerLater makes p's response complete later, while the reader goes
// on to the next request; the writer keeps the answers in request order.
// The complete it returns runs fill, which sets p's response, and then
// completes p, once: a second call does nothing.
//
// The handler calls complete from wherever its answer comes: a
// coordinator's callback (the group APIs), or a goroutine of its own
// for a wait that blocks (go complete(fill): a produce's fsync, a long
// poll, a transaction coordinator call). When gone is set and c's
// context ends first (the client went, or Shutdown), gone fills the
// response instead, and the later complete does nothing. A panic in a
// fill is logged and leaves the response as it was; p still completes.
func (c *conn) answerLater(p *pending, gone func()) (complete func(fill func())) {
	p.done = make(chan struct{})
	var (
		once sync.Once
		mu   sync.Mutex
		stop func() bool
	)
	complete = func(fill func()) {
		once.Do(func() {
			c.s.fill(p, fill)
			close(p.done)
			mu.Lock()
			st := stop
			mu.Unlock()
			if st != nil {
				st()
			}
		})
	}
	if gone == nil {
		return complete
	}
	mu.Lock()
	stop = context.AfterFunc(c.ctx, func() { complete(gone) })
	mu.Unlock()
	select {
	case <-p.done:
		stop()
	default:
	}
	return complete
}

// fill runs fill, logging a panic (a bug, never a client's doing).
func (s *Server) fill(p *pending, fill func()) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("kafka handler panicked", "api", apiName(p.key), "version", p.version, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	fill()
}

// answerEach is the kmsg walk of a request answered item by item,
// written once: one response item per request item, in request order,
// each made in place by answer (a topic from a request topic; inside
// it, a partition from a request partition). The items stay where
// answer made them, so a handler may keep a partition's address and
// fill it again when its answer completes later. nil for no items.
func answerEach[R, S any](req []R, answer func(r *R, s *S)) []S {
	if len(req) == 0 {
		return nil
	}
	out := make([]S, len(req))
	for i := range req {
		answer(&req[i], &out[i])
	}
	return out
}

// str is a nullable string's value, "" for null.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// strPtr is "" as null, any other s as itself.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// partitionExists: topic is in the catalog with partition p.
func (s *Server) partitionExists(topicName string, p int32) bool {
	t, ok := s.cat.Topic(topicName)
	return ok && p >= 0 && p < t.Partitions
}

// partition returns the open partition topic-partition when the topic
// exists (or, with create and AutoCreateTopics, was created now), or the
// error code to answer.
func (s *Server) partition(topicName string, partition int32, create bool) (*logstore.Partition, int16) {
	t, ok := s.cat.Topic(topicName)
	if !ok {
		if !create || !s.cfg.AutoCreateTopics {
			return nil, errUnknownTopicOrPartition
		}
		var code int16
		if t, code = s.autoCreate(topicName); code != errNone {
			return nil, code
		}
	}
	if partition < 0 || partition >= t.Partitions {
		return nil, errUnknownTopicOrPartition
	}
	// Never Store.Partition: it would make the directory again of a
	// topic deleted since the lookup. Only the catalog makes them.
	part, err := s.store.ExistingPartition(topicName, partition)
	if t2, ok := s.cat.Topic(topicName); !ok || t2.ID != t.ID {
		// Deleted (or deleted and created again) since the lookup.
		return nil, errUnknownTopicOrPartition
	}
	if err != nil {
		return nil, s.failureCode("open", logstore.PartitionID{Topic: topicName, Partition: partition}, err)
	}
	return part, errNone
}

// autoCreate creates topic name with DefaultPartitions; a topic created
// meanwhile by another request is fine.
func (s *Server) autoCreate(name string) (topic, int16) {
	t, err := s.cat.CreateTopic(name, s.cfg.DefaultPartitions, nil, false)
	if err == nil {
		s.log.Info("kafka topic created automatically", "topic", name, "partitions", t.Partitions)
		return t, errNone
	}
	if t, ok := s.cat.Topic(name); ok {
		return t, errNone
	}
	code := topicErrorCode(err)
	if code == kerr.KafkaStorageError.Code {
		s.log.Error("kafka: creating topic failed", "topic", name, "err", err.Error())
	}
	return topic{}, code
}

// failureCode logs a partition failure (not a refusal) and returns its
// code. A poisoned or failing partition answers KAFKA_STORAGE_ERROR, on
// which clients retry. A partition closed under the request (its topic
// deleted, the store closing) answers NOT_LEADER_OR_FOLLOWER, on which
// they refresh their metadata. A partition of a topic deleted or being
// deleted answers UNKNOWN_TOPIC_OR_PARTITION (see topicGone).
func (s *Server) failureCode(op string, id logstore.PartitionID, err error) int16 {
	if gone := s.topicGone(id, err); gone != errNone {
		return gone
	}
	if errors.Is(err, logstore.ErrTooManyOpenPartitions) {
		// It passes as partitions go idle; clients retry on 56.
		s.log.Warn("kafka "+op+": too many partitions open and in use; raise the file descriptor limit or --max-open-partitions", "partition", id.String())
		return kerr.KafkaStorageError.Code
	}
	if errors.Is(err, segment.ErrPoisoned) {
		s.log.Error("kafka "+op+": partition failed", "partition", id.String(), "err", err.Error())
	} else {
		s.log.Error("kafka "+op+" failed", "partition", id.String(), "err", err.Error())
	}
	return kerr.KafkaStorageError.Code
}

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
		return kerr.UnknownTopicOrPartition.Code
	case !closed && !missing:
		return errNone
	}
	if _, ok := s.cat.Topic(id.Topic); !ok {
		return kerr.UnknownTopicOrPartition.Code
	}
	if closed {
		return kerr.NotLeaderForPartition.Code
	}
	return errNone
}

// refusalCode is the Kafka error code of a refused append (see
// logstore.Refusal), by the outcome the metrics count it as
// (metrics.OutcomeOf, the one mapping of a refusal's kind), and for an
// invalid batch by the check that refused it. Never
// DUPLICATE_SEQUENCE_NUMBER (46): a duplicate is answered as a success
// with the first copy's offsets.
func refusalCode(r *logstore.RefusedError) int16 {
	switch metrics.OutcomeOf(logstore.AppendResult{}, r) {
	case metrics.OutcomeTooLarge:
		return kerr.MessageTooLarge.Code
	case metrics.OutcomeUnknownProducer:
		return kerr.UnknownProducerID.Code
	case metrics.OutcomeOutOfOrder:
		return kerr.OutOfOrderSequenceNumber.Code
	case metrics.OutcomeFenced:
		return kerr.InvalidProducerEpoch.Code
	case metrics.OutcomeOpenTransaction:
		return kerr.InvalidTxnState.Code
	}
	for _, undecodable := range []error{recordbatch.ErrCRC, recordbatch.ErrTruncated, recordbatch.ErrBatchTooSmall,
		recordbatch.ErrMagic, recordbatch.ErrUnknownCodec, recordbatch.ErrDecompress} {
		if errors.Is(r.Err, undecodable) {
			return kerr.CorruptMessage.Code
		}
	}
	if errors.Is(r.Err, recordbatch.ErrTimestamp) {
		return kerr.InvalidTimestamp.Code
	}
	return kerr.InvalidRecord.Code
}

// recordErrors is the RecordErrors of a partition's ProduceResponse
// (v8+, KIP-467) for a refusal answered with code. kmsg calls them
// ErrorRecords, with BatchIndex as RelativeOffset and
// BatchIndexErrorMessage as ErrorMessage. For INVALID_RECORD (87) and
// INVALID_TIMESTAMP (32) it names the record the batch's check names, by
// its index in the batch, with the reason, as a Kafka broker lists the
// records its validation refused. It is nil when the refusal names no
// record (a fault of the batch as a whole).
func recordErrors(code int16, r *logstore.RefusedError) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	if code != kerr.InvalidRecord.Code && code != kerr.InvalidTimestamp.Code {
		return nil
	}
	i, ok := r.Record()
	if !ok {
		return nil
	}
	re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
	re.RelativeOffset = int32(i)
	msg := r.Reason
	re.ErrorMessage = &msg
	return []kmsg.ProduceResponseTopicPartitionErrorRecord{re}
}
