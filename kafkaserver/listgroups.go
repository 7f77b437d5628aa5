package kafkaserver

// ListGroups (key 16), versions 0-5 advertised.
//
//   - v1: ThrottleMillis in the response. v3: flexible.
//   - v4 (KIP-518): StatesFilter, and each group's state in the
//     response. A name that is no state matches no group.
//   - v5 (KIP-848): TypesFilter, and each group's GroupType. Every group
//     here is "classic" (no KIP-848 consumer groups, no share or streams
//     groups), so a filter without "classic" (matched ignoring case, as
//     Kafka's GroupType.parse does) lists none.
//
// Every group the coordinator holds, with its protocol type: all of
// them are this node's.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// groupTypeClassic is ListGroups' GroupType (v5+) of a group of the
// classic protocol, the only kind groupcoord has.
const groupTypeClassic = "classic"

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
	if r.Version >= 5 && len(r.TypesFilter) > 0 && !slices.ContainsFunc(r.TypesFilter, func(t string) bool {
		return strings.EqualFold(t, groupTypeClassic)
	}) {
		return nil
	}
	// Every group for who may DESCRIBE the cluster, else those it may
	// DESCRIBE, as Kafka lists.
	everyGroup := s.clusterCode(c, kmsg.ACLOperationDescribe) == errNone
	for _, g := range s.groups.List(states) {
		if !everyGroup && s.groupCode(c, kmsg.ACLOperationDescribe, g.Group) != errNone {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState = g.Group, g.ProtocolType, g.State.String()
		rg.GroupType = groupTypeClassic
		resp.Groups = append(resp.Groups, rg)
	}
	return nil
}
