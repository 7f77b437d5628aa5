package kafkaserver

// LeaveGroup (key 13), versions 0-5 advertised.
//
//   - v0-2: one member, by member id; its error is the top-level one.
//   - v1: ThrottleMillis in the response.
//   - v3 (KIP-345): several members, static ones by instance id, each
//     answered with its own error.
//   - v4: flexible. v5 (KIP-800): a Reason per member, which is ignored.
//
// Answered at once from the group coordinator.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleLeaveGroup answers LeaveGroup.
func handleLeaveGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	p.resp = resp
	if code := s.groupCode(c, kmsg.ACLOperationRead, r.Group); code != errNone {
		resp.ErrorCode = code
		p.setErr(code)
		return nil
	}
	var members []groupcoord.LeaveMember
	if r.Version < 3 {
		members = []groupcoord.LeaveMember{{MemberID: r.MemberID}}
	} else {
		for _, m := range r.Members {
			members = append(members, groupcoord.LeaveMember{MemberID: m.MemberID, InstanceID: str(m.InstanceID)})
		}
	}
	top, codes := s.groups.Leave(r.Group, members)
	resp.ErrorCode = int16(top)
	if r.Version < 3 {
		if top == groupcoord.None {
			resp.ErrorCode = int16(codes[0])
		}
	} else if top == groupcoord.None {
		for i, m := range r.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, int16(codes[i])
			resp.Members = append(resp.Members, rm)
			p.setErr(rm.ErrorCode)
		}
	}
	p.setErr(resp.ErrorCode)
	return nil
}
