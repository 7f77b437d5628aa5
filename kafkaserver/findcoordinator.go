package kafkaserver

// FindCoordinator (key 10), versions 0-4 advertised.
//
//   - v1: KeyType (1: a transactional id), ThrottleMillis and an error
//     message. v3: flexible.
//   - v4 (KIP-699): several keys, one entry per key in the response;
//     before v4 the top-level fields answer the one key.
//   - v5+ (KIP-890, then share groups) is not advertised.
//
// This node coordinates every group and every transactional id.

import "github.com/twmb/franz-go/pkg/kmsg"

// coordinatorTransaction is FindCoordinator's key type of a
// transactional id (0 is a group).
const coordinatorTransaction = 1

// handleFindCoordinator answers this node, at the address Metadata gives
// (Config.Advertise or the one the client connected to), for a group
// (key type 0: the group coordinator of every group) and for a
// transactional id (key type 1, v1+: the transaction coordinator of
// every transactional id). v0-3 answer in the top-level fields, v4+
// with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	p.resp = resp
	host, port := s.advertised(c)
	if r.Version < 4 {
		resp.NodeID, resp.Host, resp.Port = nodeID, host, port
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.NodeID, co.Host, co.Port = nodeID, host, port
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	return nil
}
