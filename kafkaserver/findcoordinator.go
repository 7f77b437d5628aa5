package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// errTransactionalIDAuthorizationFailed is Kafka's
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53).
const errTransactionalIDAuthorizationFailed int16 = 53

// coordinatorTransaction is FindCoordinator's key type of a
// transactional id (0 is a group).
const coordinatorTransaction = 1

// noTxnCoordinator is the message of the answers that refuse a
// transactional id.
const noTxnCoordinator = "logstore has no transaction coordinator: transactional ids are refused (idempotent producers are served)"

// handleFindCoordinator answers for a group this node, the coordinator
// of every group, at the address Metadata gives. For a transactional id
// it answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), as
// InitProducerId does: see handleInitProducerID. v0-3 answer in the
// top-level fields, v4+ with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code, msg := errNone, ""
	node, port := int32(-1), int32(-1)
	host := ""
	if r.Version >= 1 && r.CoordinatorType == coordinatorTransaction {
		code, msg = errTransactionalIDAuthorizationFailed, noTxnCoordinator
	} else {
		node = nodeID
		host, port = s.advertised(c)
	}
	var msgp *string
	if code != errNone {
		msgp = &msg
	}
	if r.Version < 4 {
		resp.ErrorCode = code
		resp.ErrorMessage = msgp
		resp.NodeID, resp.Host, resp.Port = node, host, port
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.NodeID, co.Host, co.Port = node, host, port
			co.ErrorCode = code
			co.ErrorMessage = msgp
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	p.setErr(code)
	p.resp = resp
	return nil
}
