package kafkaserver

// AddPartitionsToTxn (key 24), versions 0-3 advertised: the client's.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2 (KIP-588): PRODUCER_FENCED (90) for a fenced epoch; before v2
//     it is INVALID_PRODUCER_EPOCH (47), as Kafka answers older clients.
//   - v3: flexible.
//   - v4+ (KIP-890: brokers batching several transactions) is not
//     advertised.
//
// The partitions join the ongoing transaction of the transactional id.
// The answer is per partition, as Kafka's. When a partition does not
// exist, it is UNKNOWN_TOPIC_OR_PARTITION (3), every other partition of
// the request is OPERATION_NOT_ATTEMPTED (55), and nothing is added.
// Else every partition has the coordinator's answer (txnCode). The
// coordinator's write is not waited for: the decision's carries it. An
// empty transactional id is INVALID_REQUEST (42).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/txncoord"
)

// handleAddPartitionsToTxn answers AddPartitionsToTxn.
func handleAddPartitionsToTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	p.resp = resp
	var tps []txncoord.TopicPartition
	// unknown holds the partitions that fail the request: 3 for one that
	// does not exist, 29 for one of a topic c may not WRITE (checked
	// first, as Kafka does); the others are then 55.
	unknown := make(map[txncoord.TopicPartition]int16)
	for _, rt := range r.Topics {
		t, ok := s.cat.Topic(rt.Topic)
		denied := s.topicCode(c, kmsg.ACLOperationWrite, rt.Topic)
		for _, pn := range rt.Partitions {
			tp := txncoord.TopicPartition{Topic: rt.Topic, Partition: pn}
			if denied != errNone {
				unknown[tp] = denied
			} else if !ok || pn < 0 || pn >= t.Partitions {
				unknown[tp] = errUnknownTopicOrPartition
			}
			tps = append(tps, tp)
		}
	}
	code := errNone
	switch {
	case r.TransactionalID == "":
		code = kerr.InvalidRequest.Code
	case s.txnIDCode(c, kmsg.ACLOperationWrite, r.TransactionalID) != errNone:
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case len(unknown) > 0:
	case len(tps) == 0:
		// Nothing to add and nothing to answer.
	default:
		code = fencedBefore(s.txnCode("AddPartitionsToTxn", r.TransactionalID,
			s.txn.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps)), r.Version, 2)
	}
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.AddPartitionsToTxnRequestTopic, st *kmsg.AddPartitionsToTxnResponseTopic) {
		*st = kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = answerEach(rt.Partitions, func(pn *int32, sp *kmsg.AddPartitionsToTxnResponseTopicPartition) {
			*sp = kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = *pn
			sp.ErrorCode = code
			if len(unknown) > 0 && code == errNone {
				sp.ErrorCode = kerr.OperationNotAttempted.Code
				if u, ok := unknown[txncoord.TopicPartition{Topic: rt.Topic, Partition: *pn}]; ok {
					sp.ErrorCode = u
				}
			}
			p.setErr(sp.ErrorCode)
		})
	})
	return nil
}
