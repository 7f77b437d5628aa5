package kafkaserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// ackWait is an appended batch whose acknowledgement waits for its
// durability (Partition.WaitAcked): group commit under SyncAlways.
type ackWait struct {
	part   *logstore.Partition
	res    logstore.AppendResult
	ti, pi int // its place in the response
}

// handleProduce appends each partition's batch in request order, here in
// the reader goroutine, and answers once every accepted batch is durable
// under the store's sync mode, in a goroutine of its own, so the next
// request's appends do not wait for this one's fsync.
func handleProduce(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ProduceRequest)
	if r.Version < 3 {
		// Listed only for librdkafka's feature check (KAFKA-18659).
		return closeConn("Produce v%d carries message format v0 or v1, which logstore does not take", r.Version)
	}
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	var waits []ackWait
	acksOK := r.Acks == 0 || r.Acks == 1 || r.Acks == -1
	for ti, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if !acksOK {
				sp.ErrorCode = errInvalidRequiredAcks
				if part, code := s.partition(rt.Topic, rp.Partition, false); code == errNone {
					sp.LogStartOffset = part.StartOffset()
				}
			} else if w, ok := s.produceOne(r.Version, r.TransactionID, rt.Topic, &sp, rp.Records); ok {
				w.ti, w.pi = ti, pi
				waits = append(waits, w)
			}
			p.setErr(sp.ErrorCode)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	p.resp = resp
	p.noResponse = r.Acks == 0
	if r.Acks == 0 && p.errCode != errNone {
		// The client hears of nothing else: as Kafka does, close the
		// connection, so it refreshes its metadata and learns. The
		// batches accepted are still made durable.
		for _, w := range waits {
			if w.part.Mode() == logstore.SyncAlways {
				go w.part.WaitAcked(w.res)
			}
		}
		return closeConn("acks=0 Produce refused (error %d): closing the connection, as Kafka does", p.errCode)
	}
	if len(waits) == 0 || waits[0].part.Mode() != logstore.SyncAlways {
		return nil
	}
	// Under acks=0 the wait still runs: it is what moves the high
	// watermark past the batch.
	s.later(p, func() {
		errs := make([]error, len(waits))
		var wg sync.WaitGroup
		for i, w := range waits {
			wg.Go(func() { errs[i] = w.part.WaitAcked(w.res) })
		}
		wg.Wait()
		p.errCode = 0
		for i, err := range errs {
			if err != nil {
				w := waits[i]
				sp := &resp.Topics[w.ti].Partitions[w.pi]
				sp.ErrorCode = s.failureCode("produce", w.part.ID(), err)
				sp.BaseOffset = -1
			}
		}
		for _, t := range resp.Topics {
			for _, sp := range t.Partitions {
				p.setErr(sp.ErrorCode)
			}
		}
	})
	return nil
}

// produceOne appends one partition's records, filling sp; it returns the
// append to wait for when the batch was accepted. version is the
// request's; txnID its transactional id (v3+), nil when it has none.
func (s *Server) produceOne(version int16, txnID *string, topicName string, sp *kmsg.ProduceResponseTopicPartition, records []byte) (ackWait, bool) {
	part, code := s.partition(topicName, sp.Partition, true)
	if code != errNone {
		sp.ErrorCode = code
		s.produced(logstore.PartitionID{Topic: topicName, Partition: sp.Partition}, metrics.OutcomeUnknownTopic, len(records))
		return ackWait{}, false
	}
	sp.LogStartOffset = part.StartOffset()
	if len(records) == 0 {
		sp.ErrorCode = errInvalidRecord
		msg := "the produce request has no record batch for this partition"
		sp.ErrorMessage = &msg
		s.produced(part.ID(), metrics.OutcomeInvalid, 0)
		return ackWait{}, false
	}
	if version < 7 && isZstd(records) {
		// KIP-110: a request below v7 may not carry zstd (Kafka's
		// ProduceRequest.validateRecords refuses it before the log).
		sp.ErrorCode = errUnsupportedCompression
		msg := fmt.Sprintf("a zstd batch needs Produce v7 or later (Kafka 2.1); this request is v%d", version)
		sp.ErrorMessage = &msg
		s.produced(part.ID(), metrics.OutcomeInvalid, len(records))
		return ackWait{}, false
	}
	if isTxnData(records) {
		release, code, msg := s.beginTxnProduce(txnID, topicName, sp.Partition, recordbatch.Batch(records))
		if code != errNone {
			sp.ErrorCode = code
			sp.ErrorMessage = &msg
			o := metrics.OutcomeOpenTransaction
			switch code {
			case errInvalidProducerEpoch:
				o = metrics.OutcomeFenced
			case errKafkaStorageError, errNotLeaderOrFollower:
				o = metrics.OutcomeFailed
			case errInvalidProducerIDMap:
				o = metrics.OutcomeInvalid
			}
			s.produced(part.ID(), o, len(records))
			return ackWait{}, false
		}
		// Released once the batch is in the log (not yet durable): until
		// then no marker of its transaction can be written.
		defer release()
	}
	stampLeaderEpoch(records)
	res, err := part.AppendWritten(records)
	s.produced(part.ID(), metrics.OutcomeOf(res, err), len(records))
	if err != nil {
		var refused *logstore.RefusedError
		if errors.As(err, &refused) {
			sp.ErrorCode = refusalCode(refused)
			msg := refused.Reason
			sp.ErrorMessage = &msg
			sp.ErrorRecords = recordErrors(sp.ErrorCode, refused)
		} else {
			sp.ErrorCode = s.failureCode("produce", part.ID(), err)
		}
		sp.LogStartOffset = part.StartOffset()
		return ackWait{}, false
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogStartOffset = part.StartOffset()
	return ackWait{part: part, res: res}, true
}

// isZstd reports whether records start with a v2 batch compressed with
// zstd.
func isZstd(records []byte) bool {
	return len(records) >= recordbatch.HeaderSize && records[16] == 2 &&
		recordbatch.Batch(records).Attributes().Codec() == recordbatch.CodecZstd
}

// isTxnData reports whether records start with a transactional v2 data
// batch, which the coordinator must admit (a control batch is refused by
// the partition as from any client).
func isTxnData(records []byte) bool {
	if len(records) < recordbatch.HeaderSize || records[16] != 2 {
		return false
	}
	a := recordbatch.Batch(records).Attributes()
	return a.Transactional() && !a.Control()
}

// stampLeaderEpoch sets a v2 batch's PartitionLeaderEpoch (bytes 12-15,
// outside the CRC) to 0, the only leader epoch of a one-node log, as a
// Kafka leader stamps its own (clients send -1).
func stampLeaderEpoch(b []byte) {
	if len(b) >= recordbatch.HeaderSize && b[16] == 2 {
		binary.BigEndian.PutUint32(b[12:], 0)
	}
}

// refusalCode is the Kafka error code of a refused append (see
// logstore.Refusal). Never DUPLICATE_SEQUENCE_NUMBER (46): a duplicate
// is answered as a success with the first copy's offsets.
func refusalCode(r *logstore.RefusedError) int16 {
	switch r.Kind {
	case logstore.RefusedTooLarge:
		return errMessageTooLarge
	case logstore.RefusedUnknownProducer:
		return errUnknownProducerID
	case logstore.RefusedSequenceGap, logstore.RefusedNewEpochNotAtZero:
		return errOutOfOrderSequence
	case logstore.RefusedOlderEpoch:
		return errInvalidProducerEpoch
	case logstore.RefusedOpenTransaction:
		return errInvalidTxnState
	}
	for _, undecodable := range []error{recordbatch.ErrCRC, recordbatch.ErrTruncated, recordbatch.ErrBatchTooSmall,
		recordbatch.ErrMagic, recordbatch.ErrUnknownCodec, recordbatch.ErrDecompress} {
		if errors.Is(r.Err, undecodable) {
			return errCorruptMessage
		}
	}
	if errors.Is(r.Err, recordbatch.ErrTimestamp) {
		return errInvalidTimestamp
	}
	return errInvalidRecord
}

// failureCode logs a partition failure (not a refusal) and returns its
// code: a poisoned or failing partition answers KAFKA_STORAGE_ERROR, on
// which clients retry; a partition closed under the request (its topic
// deleted, the store closing) NOT_LEADER_OR_FOLLOWER, on which they
// refresh their metadata; a partition of a topic deleted or being
// deleted, UNKNOWN_TOPIC_OR_PARTITION (see topicGone).
func (s *Server) failureCode(op string, id logstore.PartitionID, err error) int16 {
	if gone := s.topicGone(id, err); gone != errNone {
		return gone
	}
	if errors.Is(err, segment.ErrPoisoned) {
		s.log.Error("kafka "+op+": partition failed", "partition", id.String(), "err", err.Error())
	} else {
		s.log.Error("kafka "+op+" failed", "partition", id.String(), "err", err.Error())
	}
	return errKafkaStorageError
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
	if code == errKafkaStorageError {
		s.log.Error("kafka: creating topic failed", "topic", name, "err", err.Error())
	}
	return topic{}, code
}
