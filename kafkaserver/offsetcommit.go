package kafkaserver

// OffsetCommit (key 8), versions 2-8 advertised (v0 wrote ZooKeeper, v1
// a commit timestamp per partition).
//
//   - v2-4: RetentionTimeMillis, the offsets' retention, kept per offset
//     when above 0; v5 dropped it (the broker's retention applies).
//   - v3: ThrottleMillis in the response. v6 (KIP-320): LeaderEpoch.
//   - v7 (KIP-345): InstanceID, static membership.
//   - v8: flexible.
//   - v9+ (KIP-848's member epochs) is not advertised.
//
// Answered once the offsets are durable in groups.db, without holding
// the reader (answerLater). A partition that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION (3) and is not committed. When the
// connection goes, or the server shuts down, before the commit is
// durable, the partitions are answered NOT_COORDINATOR (16).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleOffsetCommit answers OffsetCommit once its offsets are durable.
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
	// Authorization, as Kafka's: READ on the group (30 for every
	// partition) and on each topic (29).
	groupDenied := s.groupCode(c, kmsg.ACLOperationRead, r.Group)
	resp.Topics = answerEach(r.Topics, func(t *kmsg.OffsetCommitRequestTopic, rt *kmsg.OffsetCommitResponseTopic) {
		*rt = kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		denied := groupDenied
		if denied == errNone {
			denied = s.topicCode(c, kmsg.ACLOperationRead, t.Topic)
		}
		rt.Partitions = answerEach(t.Partitions, func(pt *kmsg.OffsetCommitRequestTopicPartition, rp *kmsg.OffsetCommitResponseTopicPartition) {
			*rp = kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = pt.Partition
			if denied != errNone {
				rp.ErrorCode = denied
				p.setErr(denied)
				return
			}
			if !s.partitionExists(t.Topic, pt.Partition) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				p.setErr(rp.ErrorCode)
				return
			}
			cr.Offsets = append(cr.Offsets, groupcoord.OffsetCommit{
				TopicPartition: groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition},
				Offset:         pt.Offset, LeaderEpoch: pt.LeaderEpoch, Metadata: str(pt.Metadata),
			})
			where = append(where, rp)
		})
	})
	if len(cr.Offsets) == 0 {
		return nil
	}
	complete := c.answerLater(p, func() {
		for _, rp := range where {
			rp.ErrorCode = kerr.NotCoordinator.Code
		}
		p.setErr(kerr.NotCoordinator.Code)
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
