package kafkaserver

// SyncGroup (key 14), versions 0-5 advertised.
//
//   - v1: ThrottleMillis in the response.
//   - v3 (KIP-345): InstanceID, static membership.
//   - v4: flexible.
//   - v5: ProtocolType and Protocol, in the request (checked against the
//     group's) and in the response.
//
// The leader sends the assignment of every member; a follower's answer
// waits for it without holding the reader (answerLater). When the
// connection goes, or the server shuts down, a waiting sync is answered
// NOT_COORDINATOR (16).

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleSyncGroup answers SyncGroup once the member's assignment is
// known.
func handleSyncGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.SyncGroupRequest)
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	p.resp = resp
	if code := s.groupCode(c, kmsg.ACLOperationRead, r.Group); code != errNone {
		resp.ErrorCode = code
		p.setErr(code)
		return nil
	}
	sr := groupcoord.SyncRequest{
		Group: r.Group, MemberID: r.MemberID, InstanceID: str(r.InstanceID), Generation: r.Generation,
		ProtocolType: str(r.ProtocolType), Protocol: str(r.Protocol),
	}
	if len(r.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(r.GroupAssignment))
		for _, a := range r.GroupAssignment {
			sr.Assignments[a.MemberID] = bytes.Clone(a.MemberAssignment) // the frame is reused
		}
	}
	complete := c.answerLater(p, func() {
		resp.ErrorCode = kerr.NotCoordinator.Code
		p.setErr(resp.ErrorCode)
	})
	s.groups.Sync(sr, func(res groupcoord.SyncResponse) {
		complete(func() {
			resp.ErrorCode = int16(res.Code)
			if res.Code == groupcoord.None {
				resp.ProtocolType, resp.Protocol = &res.ProtocolType, &res.Protocol
				resp.MemberAssignment = res.Assignment
			}
			p.setErr(resp.ErrorCode)
		})
	})
	return nil
}
