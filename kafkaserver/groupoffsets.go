package kafkaserver

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// partitionExists: topic is in the catalog with partition p.
func (s *Server) partitionExists(topicName string, p int32) bool {
	t, ok := s.cat.Topic(topicName)
	return ok && p >= 0 && p < t.Partitions
}

// handleOffsetCommit: OffsetCommit v2-8 (v2-4 carry a retention time;
// v7 group.instance.id). Answered once the offsets are durable. A
// partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
func handleOffsetCommit(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.OffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	p.resp = resp
	cr := groupcoord.CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: str(r.InstanceID), Generation: r.Generation}
	if r.Version >= 2 && r.Version <= 4 && r.RetentionTimeMillis > 0 {
		cr.Retention = time.Duration(r.RetentionTimeMillis) * time.Millisecond
	}
	// where[i] is the response partition of cr.Offsets[i].
	var where []*kmsg.OffsetCommitResponseTopicPartition
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for i, t := range r.Topics {
		for j, pt := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			*rp = kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = pt.Partition
			if !s.partitionExists(t.Topic, pt.Partition) {
				rp.ErrorCode = errUnknownTopicOrPartition
				p.setErr(rp.ErrorCode)
				continue
			}
			cr.Offsets = append(cr.Offsets, groupcoord.OffsetCommit{
				TopicPartition: groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition},
				Offset:         pt.Offset, LeaderEpoch: pt.LeaderEpoch, Metadata: str(pt.Metadata),
			})
			where = append(where, rp)
		}
	}
	if len(cr.Offsets) == 0 {
		return nil
	}
	complete := c.answerLater(p, func() {
		for _, rp := range where {
			rp.ErrorCode = errNotCoordinator
		}
		p.setErr(errNotCoordinator)
	})
	s.groups.Commit(cr, func(codes []groupcoord.Code) {
		complete(func() {
			for i, code := range codes {
				where[i].ErrorCode = int16(code)
				p.setErr(where[i].ErrorCode)
			}
		})
	})
	return nil
}

// handleOffsetFetch: OffsetFetch v1-8 (v2+: null topics is every
// committed partition, and a top-level error; v7+: RequireStable, a
// partition with offsets pending in a transaction is 88
// UNSTABLE_OFFSET_COMMIT; v8: several groups).
// A partition without a committed offset answers -1.
func handleOffsetFetch(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.OffsetFetchRequest)
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	p.resp = resp
	fetch := func(group string, topics map[string][]int32, order []string, all bool) ([]groupcoord.Offset, groupcoord.Code) {
		var tps []groupcoord.TopicPartition
		if !all {
			tps = []groupcoord.TopicPartition{}
			for _, t := range order {
				for _, pa := range topics[t] {
					tps = append(tps, groupcoord.TopicPartition{Topic: t, Partition: pa})
				}
			}
		}
		return s.groups.Fetch(group, tps, r.RequireStable)
	}
	if r.Version < 8 {
		topics, order := map[string][]int32{}, []string(nil)
		for _, t := range r.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		offs, code := fetch(r.Group, topics, order, r.Topics == nil && r.Version >= 2)
		if r.Version >= 2 {
			resp.ErrorCode = int16(code)
		}
		p.setErr(int16(code))
		var cur *kmsg.OffsetFetchResponseTopic
		for _, o := range offs {
			if cur == nil || cur.Topic != o.Topic {
				resp.Topics = append(resp.Topics, kmsg.NewOffsetFetchResponseTopic())
				cur = &resp.Topics[len(resp.Topics)-1]
				cur.Topic = o.Topic
			}
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
			rp.Metadata = &o.Metadata
			rp.ErrorCode = int16(o.Code)
			if r.Version < 2 && code != groupcoord.None {
				rp.ErrorCode = int16(code)
			}
			p.setErr(rp.ErrorCode)
			cur.Partitions = append(cur.Partitions, rp)
		}
		return nil
	}
	for _, g := range r.Groups {
		topics, order := map[string][]int32{}, []string(nil)
		for _, t := range g.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		offs, code := fetch(g.Group, topics, order, g.Topics == nil)
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, int16(code)
		p.setErr(rg.ErrorCode)
		var cur *kmsg.OffsetFetchResponseGroupTopic
		for _, o := range offs {
			if cur == nil || cur.Topic != o.Topic {
				rg.Topics = append(rg.Topics, kmsg.NewOffsetFetchResponseGroupTopic())
				cur = &rg.Topics[len(rg.Topics)-1]
				cur.Topic = o.Topic
			}
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
			rp.Metadata = &o.Metadata
			rp.ErrorCode = int16(o.Code)
			p.setErr(rp.ErrorCode)
			cur.Partitions = append(cur.Partitions, rp)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return nil
}

// handleOffsetDelete: OffsetDelete v0. Refused for the topics a group
// with members subscribes to (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka.
func handleOffsetDelete(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.OffsetDeleteRequest)
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	p.resp = resp
	var tps []groupcoord.TopicPartition
	var where []*kmsg.OffsetDeleteResponseTopicPartition
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for i, t := range r.Topics {
		for j, pt := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			*rp = kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = pt.Partition
			if !s.partitionExists(t.Topic, pt.Partition) {
				rp.ErrorCode = errUnknownTopicOrPartition
				continue
			}
			tps = append(tps, groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition})
			where = append(where, rp)
		}
	}
	complete := c.answerLater(p, func() {
		resp.ErrorCode = errNotCoordinator
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
