package kafkaserver

// DeleteGroups (key 42), versions 0-2 advertised.
//
//   - v1 (KIP-219): the client applies the throttle; logstore never
//     throttles, so v1 answers as v0.
//   - v2: flexible.
//
// An Empty group is deleted with its offsets, answered once that is
// durable in groups.db (answerLater). A group with members is
// NON_EMPTY_GROUP (68), an unknown one GROUP_ID_NOT_FOUND (69). When the
// connection goes, or the server shuts down, first, every group is
// answered NOT_COORDINATOR (16).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleDeleteGroups answers DeleteGroups once the deletions are
// durable.
func handleDeleteGroups(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	p.resp = resp
	// The groups c may DELETE go to the coordinator (at[i] is the
	// answer of allowed[i]); the others are answered 30.
	var allowed []string
	var at []int
	for i, g := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		if rg.ErrorCode = s.groupCode(c, kmsg.ACLOperationDelete, g); rg.ErrorCode == errNone {
			allowed, at = append(allowed, g), append(at, i)
		}
		p.setErr(rg.ErrorCode)
		resp.Groups = append(resp.Groups, rg)
	}
	if len(allowed) == 0 {
		return nil
	}
	complete := c.answerLater(p, func() {
		for _, i := range at {
			resp.Groups[i].ErrorCode = kerr.NotCoordinator.Code
		}
		p.setErr(kerr.NotCoordinator.Code)
	})
	s.groups.DeleteGroups(allowed, func(codes []groupcoord.Code) {
		complete(func() {
			for i, code := range codes {
				resp.Groups[at[i]].ErrorCode = int16(code)
				p.setErr(int16(code))
			}
		})
	})
	return nil
}
