package kafkaserver

// OffsetFetch (key 9), versions 1-8 advertised (v0 read ZooKeeper).
//
//   - v2: null Topics asks for every partition the group committed, and
//     the response has a top-level ErrorCode; before v2 a group error is
//     every partition's.
//   - v3: ThrottleMillis in the response. v5 (KIP-320): LeaderEpoch.
//   - v6: flexible.
//   - v7 (KIP-447): RequireStable: a partition with offsets pending in a
//     transaction answers UNSTABLE_OFFSET_COMMIT (88), and the client
//     retries.
//   - v8 (KIP-709): several groups in one request.
//   - v9+ (KIP-848's member epochs) is not advertised.
//
// Answered at once from the group coordinator. A partition without a
// committed offset answers offset -1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleOffsetFetch answers OffsetFetch.
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
		// Authorization, as Kafka's: DESCRIBE on the group (30; each
		// partition asked for answers it too, which v0-1 need), and on
		// each topic: one not allowed is left out of all offsets, and
		// its partitions asked for are answered 29 with no offset.
		if code := s.groupCode(c, kmsg.ACLOperationDescribe, group); code != errNone {
			offs := make([]groupcoord.Offset, len(tps))
			for i, tp := range tps {
				offs[i] = groupcoord.Offset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1, Code: groupcoord.Code(code)}
			}
			return offs, groupcoord.Code(code)
		}
		offs, code := s.groups.Fetch(group, tps, r.RequireStable)
		if s.cfg.Authorizer == nil {
			return offs, code
		}
		allowed := map[string]bool{}
		kept := offs[:0]
		for _, o := range offs {
			ok, seen := allowed[o.Topic]
			if !seen {
				ok = s.topicCode(c, kmsg.ACLOperationDescribe, o.Topic) == errNone
				allowed[o.Topic] = ok
			}
			if !ok {
				if all {
					continue
				}
				o = groupcoord.Offset{TopicPartition: o.TopicPartition, Offset: -1, LeaderEpoch: -1, Code: groupcoord.Code(kerr.TopicAuthorizationFailed.Code)}
			}
			kept = append(kept, o)
		}
		return kept, code
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
