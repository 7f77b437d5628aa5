package kafkaserver

// AddOffsetsToTxn (key 25), versions 0-3 advertised.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2 (KIP-588): PRODUCER_FENCED (90) for a fenced epoch; before v2
//     it is INVALID_PRODUCER_EPOCH (47), as Kafka answers older clients.
//   - v3: flexible.
//   - v4 (KIP-890) is not advertised.
//
// The group's offsets partition (Kafka's __consumer_offsets partition of
// the group) joins the transaction, as in Kafka, durably before the
// answer: TxnOffsetCommit then puts the offsets in it. An empty
// transactional id is INVALID_REQUEST (42), an empty group
// INVALID_GROUP_ID (24).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/txncoord"
)

// offsetsPartition is the transaction partition that holds a group's
// offsets: Kafka's __consumer_offsets partition of the group.
func offsetsPartition(group string) txncoord.TopicPartition {
	return txncoord.TopicPartition{Topic: groupcoord.OffsetsTopic, Partition: groupcoord.OffsetsPartition(group)}
}

// handleAddOffsetsToTxn answers AddOffsetsToTxn once the offsets
// partition is durably in the transaction.
func handleAddOffsetsToTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	p.resp = resp
	switch {
	case r.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case r.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	case s.txnIDCode(c, kmsg.ACLOperationWrite, r.TransactionalID) != errNone:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case s.groupCode(c, kmsg.ACLOperationRead, r.Group) != errNone:
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		resp.ErrorCode = fencedBefore(s.txnCode("AddOffsetsToTxn", r.TransactionalID,
			s.txn.AddPartitionsDurable(r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txncoord.TopicPartition{offsetsPartition(r.Group)})), r.Version, 2)
	}
	p.setErr(resp.ErrorCode)
	return nil
}
