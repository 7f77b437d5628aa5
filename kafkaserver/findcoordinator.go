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

// handleFindCoordinator answers for a group COORDINATOR_NOT_AVAILABLE
// (15): there is no group coordinator yet. For a transactional id it
// answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), as InitProducerId
// does: see handleInitProducerID. v0-3 answer in the top-level fields,
// v4+ with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code, msg := errCoordinatorNotAvailable, "logstore has no group coordinator"
	if r.Version >= 1 && r.CoordinatorType == coordinatorTransaction {
		code, msg = errTransactionalIDAuthorizationFailed, noTxnCoordinator
	}
	if r.Version < 4 {
		resp.ErrorCode = code
		resp.ErrorMessage = &msg
		resp.NodeID, resp.Port = -1, -1
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.NodeID, co.Port = -1, -1
			co.ErrorCode = code
			co.ErrorMessage = &msg
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	p.setErr(code)
	p.resp = resp
	return nil
}
