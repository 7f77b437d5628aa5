package kafkaserver

// Heartbeat (key 12), versions 0-4 advertised.
//
//   - v1: ThrottleMillis in the response.
//   - v3 (KIP-345): InstanceID, static membership.
//   - v4: flexible.
//
// Answered at once from the group coordinator: REBALANCE_IN_PROGRESS
// (27) tells the member to join again.

import "github.com/twmb/franz-go/pkg/kmsg"

// handleHeartbeat answers Heartbeat.
func handleHeartbeat(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	p.resp = resp
	if code := s.groupCode(c, kmsg.ACLOperationRead, r.Group); code != errNone {
		resp.ErrorCode = code
		p.setErr(code)
		return nil
	}
	resp.ErrorCode = int16(s.groups.Heartbeat(r.Group, r.MemberID, str(r.InstanceID), r.Generation))
	p.setErr(resp.ErrorCode)
	return nil
}
