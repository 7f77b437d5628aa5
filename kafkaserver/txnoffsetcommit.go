package kafkaserver

// TxnOffsetCommit (key 28), versions 0-3 advertised.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2 (KIP-320): LeaderEpoch per partition.
//   - v3 (KIP-447): the consumer's generation, member id and instance
//     id, checked as OffsetCommit's are; before v3 none is checked.
//     Flexible.
//   - v4+ (KIP-890) is not advertised.
//
// The transaction must be ongoing with the group's offsets partition
// added (AddOffsetsToTxn), at the producer's epoch, as a transactional
// batch must be (BeginProduce); its refusals are Produce's
// (produceCode). The offsets are then pending in groups.db until the
// transaction's marker commits or drops them. Answered once durable, in
// a goroutine of its own (answerLater). A partition that does not exist
// is UNKNOWN_TOPIC_OR_PARTITION (3), and an empty transactional id
// INVALID_REQUEST (42) for every other partition.

import (
	"cmp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleTxnOffsetCommit answers TxnOffsetCommit once its pending
// offsets are durable.
func handleTxnOffsetCommit(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	p.resp = resp
	tr := groupcoord.TxnCommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: str(r.InstanceID), Generation: r.Generation,
		ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
	if r.Version < 3 {
		tr.Generation, tr.MemberID, tr.InstanceID = -1, "", ""
	}
	// where[i] is the response partition of tr.Offsets[i].
	var where []*kmsg.TxnOffsetCommitResponseTopicPartition
	// Authorization, as Kafka's: WRITE on the transactional id (53 for
	// every partition), READ on the group (30), READ on each topic (29).
	reqDenied := cmp.Or(s.txnIDCode(c, kmsg.ACLOperationWrite, r.TransactionalID), s.groupCode(c, kmsg.ACLOperationRead, r.Group))
	resp.Topics = answerEach(r.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic, rt *kmsg.TxnOffsetCommitResponseTopic) {
		*rt = kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		denied := reqDenied
		if denied == errNone {
			denied = s.topicCode(c, kmsg.ACLOperationRead, t.Topic)
		}
		rt.Partitions = answerEach(t.Partitions, func(pt *kmsg.TxnOffsetCommitRequestTopicPartition, rp *kmsg.TxnOffsetCommitResponseTopicPartition) {
			*rp = kmsg.NewTxnOffsetCommitResponseTopicPartition()
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
			tr.Offsets = append(tr.Offsets, groupcoord.OffsetCommit{
				TopicPartition: groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition},
				Offset:         pt.Offset, LeaderEpoch: pt.LeaderEpoch, Metadata: str(pt.Metadata),
			})
			where = append(where, rp)
		})
	})
	if len(where) == 0 {
		return nil
	}
	setAll := func(code int16) {
		for _, rp := range where {
			rp.ErrorCode = code
		}
		p.setErr(code)
	}
	if r.TransactionalID == "" {
		setAll(kerr.InvalidRequest.Code)
		return nil
	}
	complete := c.answerLater(p, nil)
	go complete(s.txnCall(func() {
		release, err := s.txn.BeginProduce(r.TransactionalID, r.ProducerID, r.ProducerEpoch, offsetsPartition(r.Group))
		if err != nil {
			setAll(s.produceCode(r.TransactionalID, err))
			return
		}
		done := make(chan []groupcoord.Code, 1)
		s.groups.CommitTxn(tr, func(codes []groupcoord.Code) { done <- codes })
		// Queued: the marker, written after release, comes after it.
		release()
		for i, code := range <-done {
			where[i].ErrorCode = int16(code)
			p.setErr(where[i].ErrorCode)
		}
	}))
	return nil
}
