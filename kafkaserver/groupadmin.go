package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// handleListGroups: ListGroups v0-4 (v4: a filter of states; a name
// that is no state matches no group).
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

// groupAuthorizedOperations is the bit set of the operations on a group
// (Kafka's AclOperation codes READ 3, DELETE 6, DESCRIBE 8): with no
// authorizer every client may do all of them, as a Kafka broker without
// one answers.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// handleDescribeGroups: DescribeGroups v0-5 (v3+: the authorized
// operations when asked). A group that does not
// exist is described Dead with no error, as Kafka does; members'
// metadata and assignments are given while the group is Stable.
func handleDescribeGroups(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	p.resp = resp
	for _, d := range s.groups.Describe(r.Groups) {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = d.Group, int16(d.Code)
		rg.State, rg.ProtocolType, rg.Protocol = d.State.String(), d.ProtocolType, d.Protocol
		if r.Version >= 3 && r.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = groupAuthorizedOperations
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, strPtr(m.InstanceID), m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		p.setErr(rg.ErrorCode)
		resp.Groups = append(resp.Groups, rg)
	}
	return nil
}

// handleDeleteGroups: DeleteGroups v0-2: an Empty group is deleted with
// its offsets (answered once durable), a group with members is
// NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND.
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
			resp.Groups[i].ErrorCode = errNotCoordinator
		}
		p.setErr(errNotCoordinator)
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
