package kafkaserver

// ListGroups (key 16), versions 0-4 advertised.
//
//   - v1: ThrottleMillis in the response. v3: flexible.
//   - v4 (KIP-518): StatesFilter, and each group's state in the
//     response. A name that is no state matches no group.
//   - v5 (KIP-848's TypesFilter) is not advertised.
//
// Every group the coordinator holds, with its protocol type: all of
// them are this node's.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleListGroups answers ListGroups.
func handleListGroups(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	p.resp = resp
	var states []groupcoord.State
	if r.Version >= 4 && len(r.StatesFilter) > 0 {
		for _, name := range r.StatesFilter {
			if st, ok := groupcoord.ParseState(name); ok {
				states = append(states, st)
			}
		}
		if len(states) == 0 {
			return nil
		}
	}
	for _, g := range s.groups.List(states) {
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = g.Group, g.ProtocolType, g.State.String()
		resp.Groups = append(resp.Groups, rg)
	}
	return nil
}
