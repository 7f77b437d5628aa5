package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// handleFindCoordinator answers COORDINATOR_NOT_AVAILABLE (15) for every
// key: there is no group coordinator, and no transaction coordinator,
// yet. v0-3 answer in the top-level fields, v4+ with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	msg := "logstore has no group or transaction coordinator"
	if r.Version < 4 {
		resp.ErrorCode = errCoordinatorNotAvailable
		resp.ErrorMessage = &msg
		resp.NodeID, resp.Port = -1, -1
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.NodeID, co.Port = -1, -1
			co.ErrorCode = errCoordinatorNotAvailable
			co.ErrorMessage = &msg
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	p.setErr(errCoordinatorNotAvailable)
	p.resp = resp
	return nil
}
