package kafkaserver

// DeleteRecords (key 21), versions 0-2 advertised.
//
//   - v1: the same as v0. v2: flexible.
//
// Each partition's log start moves to the offset asked for
// (logstore.Partition.DeleteRecords), durably before the answer, which
// names the log start after it as the low watermark. TimeoutMillis is
// ignored: with one replica there is no follower to wait for.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/segment"
)

// handleDeleteRecords answers as Kafka's ReplicaManager.deleteRecords
// and Partition.deleteRecordsOnLeader do: offset -1 is the high
// watermark; an offset below -1 or above the high watermark answers
// OFFSET_OUT_OF_RANGE (1), an unknown topic or partition 3, each with
// low watermark -1; an offset at or below the log start changes nothing
// and answers the log start. Every topic's cleanup.policy is delete, so
// POLICY_VIOLATION is never the answer.
func handleDeleteRecords(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	p.resp = resp
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.DeleteRecordsRequestTopic, st *kmsg.DeleteRecordsResponseTopic) {
		*st = kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		denied := s.topicCode(c, kmsg.ACLOperationDelete, rt.Topic)
		st.Partitions = answerEach(rt.Partitions, func(rp *kmsg.DeleteRecordsRequestTopicPartition, sp *kmsg.DeleteRecordsResponseTopicPartition) {
			*sp = kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark, sp.ErrorCode = -1, denied
			if denied == errNone {
				sp.LowWatermark, sp.ErrorCode = s.deleteRecords(rt.Topic, rp.Partition, rp.Offset)
			}
			p.setErr(sp.ErrorCode)
		})
	})
	return nil
}

// deleteRecords moves one partition's log start to offset and returns
// the low watermark and the code to answer.
func (s *Server) deleteRecords(topic string, partition int32, offset int64) (int64, int16) {
	part, code := s.partition(topic, partition, false)
	if code != errNone {
		return -1, code
	}
	low, err := part.DeleteRecords(offset)
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return -1, errOffsetOutOfRange
	case err != nil:
		return -1, s.failureCode(fmt.Sprintf("DeleteRecords to offset %d", offset), logstore.PartitionID{Topic: topic, Partition: partition}, err)
	}
	s.log.Info("kafka records deleted", "partition", logstore.PartitionID{Topic: topic, Partition: partition}.String(), "log_start", low)
	return low, errNone
}
