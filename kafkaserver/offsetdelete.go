package kafkaserver

// OffsetDelete (key 47), version 0 advertised (KIP-496; the only
// version, not flexible).
//
// The group's committed offsets of the partitions named are deleted,
// answered once durable in groups.db (answerLater). As in Kafka, the
// topics a group with members subscribes to are refused per partition
// with GROUP_SUBSCRIBED_TO_TOPIC (86). A partition that does not exist
// is UNKNOWN_TOPIC_OR_PARTITION (3). A group error (an unknown group:
// GROUP_ID_NOT_FOUND, 69) is the top-level code. When the connection
// goes, or the server shuts down, first, the answer is NOT_COORDINATOR
// (16).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleOffsetDelete answers OffsetDelete once the deletion is durable.
func handleOffsetDelete(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.OffsetDeleteRequest)
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	p.resp = resp
	if code := s.groupCode(c, kmsg.ACLOperationDelete, r.Group); code != errNone {
		resp.ErrorCode = code
		p.setErr(code)
		return nil
	}
	var tps []groupcoord.TopicPartition
	// where[i] is the response partition of tps[i].
	var where []*kmsg.OffsetDeleteResponseTopicPartition
	resp.Topics = answerEach(r.Topics, func(t *kmsg.OffsetDeleteRequestTopic, rt *kmsg.OffsetDeleteResponseTopic) {
		*rt = kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		denied := s.topicCode(c, kmsg.ACLOperationRead, t.Topic)
		rt.Partitions = answerEach(t.Partitions, func(pt *kmsg.OffsetDeleteRequestTopicPartition, rp *kmsg.OffsetDeleteResponseTopicPartition) {
			*rp = kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = pt.Partition
			if denied != errNone {
				rp.ErrorCode = denied
				return
			}
			if !s.partitionExists(t.Topic, pt.Partition) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				return
			}
			tps = append(tps, groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition})
			where = append(where, rp)
		})
	})
	complete := c.answerLater(p, func() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		p.setErr(resp.ErrorCode)
	})
	s.groups.DeleteOffsets(r.Group, tps, func(top groupcoord.Code, codes []groupcoord.Code) {
		complete(func() {
			resp.ErrorCode = int16(top)
			p.setErr(resp.ErrorCode)
			if top != groupcoord.None {
				return
			}
			for i, code := range codes {
				where[i].ErrorCode = int16(code)
				p.setErr(where[i].ErrorCode)
			}
		})
	})
	return nil
}
