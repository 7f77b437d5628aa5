package kafkaserver

// ListTransactions (key 66), versions 0-1 advertised (KIP-664;
// flexible).
//
//   - v1 (KIP-994): DurationFilterMillis.
//   - v2 (KIP-1152's transactional id pattern) is not advertised.
//
// The transactional ids the coordinator holds, filtered as Kafka's
// TransactionStateManager filters them.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaTxnStates are the transaction state names Kafka's
// TransactionState.fromName knows. A ListTransactions state filter
// outside them is answered back in UnknownStateFilters.
var kafkaTxnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// handleListTransactions answers ListTransactions (v0-1) from the
// coordinator, with Kafka's filters (TransactionStateManager's
// listTransactionStates): the state filters (names Kafka does not know
// are answered in UnknownStateFilters and match nothing), the producer
// id filters, and (v1) DurationFilterMillis: when >= 0, only
// transactions that started more than that long ago, where a
// transactional id with no transaction started counts as started at -1
// ms, as in Kafka. v2's transactional id pattern is not advertised.
func handleListTransactions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	p.resp = resp
	var states []string
	for _, name := range r.StateFilters {
		if slices.Contains(kafkaTxnStates, name) {
			states = append(states, name)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	duration := int64(-1)
	if r.Version >= 1 {
		duration = r.DurationFilterMillis
	}
	now := time.Now().UnixMilli()
	for _, tx := range s.txn.List() {
		switch {
		case tx.State == "Dead":
			continue
		case s.txnIDCode(c, kmsg.ACLOperationDescribe, tx.TransactionalID) != errNone:
			continue
		case len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, tx.ProducerID):
			continue
		case len(r.StateFilters) > 0 && !slices.Contains(states, tx.State):
			continue
		case duration >= 0 && now-tx.StartMs() <= duration:
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = tx.TransactionalID, tx.ProducerID, tx.State
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return nil
}
