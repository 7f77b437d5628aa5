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
	for _, g := range r.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		resp.Groups = append(resp.Groups, rg)
	}
	complete := c.answerLater(p, func() {
		for i := range resp.Groups {
			resp.Groups[i].ErrorCode = kerr.NotCoordinator.Code
		}
		p.setErr(kerr.NotCoordinator.Code)
	})
	s.groups.DeleteGroups(r.Groups, func(codes []groupcoord.Code) {
		complete(func() {
			for i, code := range codes {
				resp.Groups[i].ErrorCode = int16(code)
				p.setErr(int16(code))
			}
		})
	})
	return nil
}
