package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// coordinatorTransaction is FindCoordinator's key type of a
// transactional id (0 is a group).
const coordinatorTransaction = 1

// handleFindCoordinator answers for a transactional id (key type 1, v1+)
// this node, the transaction coordinator of every transactional id, at
// the address Metadata gives (Config.Advertise or the one the client
// connected to). For a group it answers COORDINATOR_NOT_AVAILABLE (15):
// there is no group coordinator yet. v0-3 answer in the top-level
// fields, v4+ with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	txn := r.Version >= 1 && r.CoordinatorType == coordinatorTransaction
	node, host, port := int32(-1), "", int32(-1)
	code, msg := errCoordinatorNotAvailable, "logstore has no group coordinator"
	if txn {
		code = errNone
		node = 0
		host, port = s.advertised(c)
	}
	if r.Version < 4 {
		resp.ErrorCode = code
		if code != errNone {
			resp.ErrorMessage = &msg
		}
		resp.NodeID, resp.Host, resp.Port = node, host, port
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.NodeID, co.Host, co.Port = node, host, port
			co.ErrorCode = code
			if code != errNone {
				co.ErrorMessage = &msg
			}
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	p.setErr(code)
	p.resp = resp
	return nil
}
