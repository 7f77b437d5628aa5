package kafkaserver

// DescribeTransactions (key 65), version 0 advertised (KIP-664, the
// only version; flexible).
//
// For each transactional id, its state in the transaction coordinator.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/txncoord"
)

// handleDescribeTransactions answers DescribeTransactions (v0) from the
// coordinator, as Kafka's handleDescribeTransactions: per transactional
// id its producer id and epoch, state (Kafka's names), timeout, the
// start of its ongoing transaction (-1 when none: Kafka keeps the start
// of the last transaction through CompleteCommit/CompleteAbort, the
// coordinator here does not) and its partitions by topic; an empty id is
// INVALID_REQUEST (42), an unknown one TRANSACTIONAL_ID_NOT_FOUND (105).
func handleDescribeTransactions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	p.resp = resp
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		tx, ok := s.txn.Describe(id)
		switch {
		case id == "":
			st.ErrorCode = kerr.InvalidRequest.Code
		case s.txnIDCode(c, kmsg.ACLOperationDescribe, id) != errNone:
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case !ok:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			fillDescribedTxn(&st, tx)
		}
		p.setErr(st.ErrorCode)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return nil
}

// fillDescribedTxn sets st from tx.
func fillDescribedTxn(st *kmsg.DescribeTransactionsResponseTransactionState, tx txncoord.Transaction) {
	st.ProducerID, st.ProducerEpoch = tx.ProducerID, tx.Epoch
	st.State = tx.State
	st.TimeoutMillis = int32(min(tx.Timeout.Milliseconds(), 1<<31-1))
	st.StartTimestamp = tx.StartMs()
	// tx.Partitions are sorted by topic: one entry per topic.
	for _, tp := range tx.Partitions {
		if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.Topic
			st.Topics = append(st.Topics, t)
		}
		t := &st.Topics[len(st.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
}
