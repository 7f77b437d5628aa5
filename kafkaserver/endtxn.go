package kafkaserver

// EndTxn (key 26), versions 0-4 advertised.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2 (KIP-588): PRODUCER_FENCED (90) for a fenced epoch; before v2
//     it is INVALID_PRODUCER_EPOCH (47), as Kafka answers older clients.
//   - v3: flexible. v4 (KIP-890): the client may be answered
//     TRANSACTION_ABORTABLE, which logstore never answers.
//   - v5 (KIP-890's epoch bump at each end) is not advertised.
//
// The coordinator makes the decision durable and writes the COMMIT or
// ABORT marker into every partition of the transaction before it
// returns, so the answer waits for it, in a goroutine of its own
// (answerLater), as a produce waits for its fsync. A retry of the
// decision made succeeds; the other decision is INVALID_TXN_STATE (48).
// An empty transactional id is INVALID_REQUEST (42).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleEndTxn answers EndTxn once the decision and its markers are
// written.
func handleEndTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	p.resp = resp
	if r.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		p.setErr(resp.ErrorCode)
		return nil
	}
	if resp.ErrorCode = s.txnIDCode(c, kmsg.ACLOperationWrite, r.TransactionalID); resp.ErrorCode != errNone {
		p.setErr(resp.ErrorCode)
		return nil
	}
	complete := c.answerLater(p, nil)
	go complete(s.txnCall(func() {
		err := s.txn.EndTxn(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
		resp.ErrorCode = fencedBefore(s.txnCode("EndTxn", r.TransactionalID, err), r.Version, 2)
		p.setErr(resp.ErrorCode)
	}))
	return nil
}
