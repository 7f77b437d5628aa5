package kafkaserver

// InitProducerId (key 22), versions 0-4 advertised.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2: flexible.
//   - v3 (KIP-360): the producer id and epoch the client has (-1 and -1
//     for none), so a transactional producer can recover its id.
//   - v4 (KIP-588): PRODUCER_FENCED (90) for a fenced epoch; before v4
//     it is INVALID_PRODUCER_EPOCH (47), as Kafka answers older clients.
//   - v5 (KIP-890) is not advertised.
//
// Without a transactional id: a new producer id from the catalog at
// epoch 0, never handed out twice, even across restarts. With one: the
// transaction coordinator (initTransactional), in a goroutine of its
// own (answerLater).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleInitProducerID hands out a new producer id at epoch 0 for an
// idempotent producer. A producer id and epoch in the request (v3+,
// KIP-360) are ignored without a transactional id, as Kafka does: the
// producer gets a new id. With a transactional id the transaction
// coordinator answers (see initTransactional): the id's durable
// producer id with its epoch bumped, an open transaction aborted, 50 for
// a timeout above Config.TransactionMaxTimeout (or not above 0), 90
// (47 before v4) for a producer id that is not the id's or an epoch
// older than its own, 42 for a producer id without an epoch or the
// reverse, as Kafka answers.
func handleInitProducerID(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	p.resp = resp
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// Authorization, as Kafka's: WRITE on the transactional id (53);
	// an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
	// WRITE on some topic (31).
	if r.TransactionalID != nil {
		if resp.ErrorCode = s.txnIDCode(c, kmsg.ACLOperationWrite, *r.TransactionalID); resp.ErrorCode != errNone {
			p.setErr(resp.ErrorCode)
			return nil
		}
		s.initTransactional(c, r, resp, p)
		return nil
	}
	if a := s.cfg.Authorizer; a != nil && s.clusterCode(c, kmsg.ACLOperationIdempotentWrite) != errNone &&
		!a.AuthorizeAny(principalOf(c), c.ip, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		p.setErr(resp.ErrorCode)
		return nil
	}
	pid, err := s.cat.NewProducerID()
	if err != nil {
		s.log.Error("kafka InitProducerId: no producer id", "err", err.Error())
		resp.ErrorCode = kerr.KafkaStorageError.Code
	} else {
		resp.ProducerID, resp.ProducerEpoch = pid, 0
	}
	p.setErr(resp.ErrorCode)
	return nil
}

// initTransactional answers InitProducerId for a transactional id: the
// coordinator's (producer id, epoch) for it, a bumped epoch (or a new
// producer id when the epoch is exhausted) and any open transaction
// aborted. v3+ carry the producer id and epoch the client has (KIP-360),
// -1 and -1 when it has none. It runs in a goroutine of its own, since
// aborting an open transaction writes markers.
func (s *Server) initTransactional(c *conn, r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse, p *pending) {
	txnID := *r.TransactionalID
	if txnID == "" {
		// Kafka: an empty transactional id is INVALID_REQUEST.
		resp.ErrorCode = kerr.InvalidRequest.Code
		p.setErr(resp.ErrorCode)
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		pid, epoch = r.ProducerID, r.ProducerEpoch
		if (pid == -1) != (epoch == -1) {
			// Kafka: both or neither, else INVALID_REQUEST.
			resp.ErrorCode = kerr.InvalidRequest.Code
			p.setErr(resp.ErrorCode)
			return
		}
	}
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	complete := c.answerLater(p, nil)
	go complete(s.txnCall(func() {
		gotPID, gotEpoch, err := s.txn.InitProducerID(txnID, timeout, pid, epoch)
		if resp.ErrorCode = fencedBefore(s.txnCode("InitProducerId", txnID, err), r.Version, 4); resp.ErrorCode == errNone {
			resp.ProducerID, resp.ProducerEpoch = gotPID, gotEpoch
		}
		p.setErr(resp.ErrorCode)
	}))
}
