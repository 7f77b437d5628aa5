package kafkaserver

// DescribeGroups (key 15), versions 0-6 advertised.
//
//   - v1: ThrottleMillis in the response.
//   - v3 (KIP-430): IncludeAuthorizedOperations, answered with
//     groupAuthorizedOperations.
//   - v4 (KIP-345): each member's InstanceID. v5: flexible.
//   - v6 (KIP-1043): ErrorMessage, and a group that does not exist is
//     GROUP_ID_NOT_FOUND (69), still described Dead, as Kafka 4 answers.
//
// Before v6 a group that does not exist is described Dead with no error,
// as Kafka does. Members' metadata and assignments are given while the group is
// Stable.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// groupAuthorizedOperations is the bit set of the operations on a group
// (Kafka's AclOperation codes READ 3, DELETE 6, DESCRIBE 8): with no
// authorizer every client may do all of them, as a Kafka broker without
// one answers.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// handleDescribeGroups answers DescribeGroups.
func handleDescribeGroups(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	p.resp = resp
	for _, d := range s.groups.Describe(r.Groups) {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = d.Group, int16(d.Code)
		if code := s.groupCode(c, kmsg.ACLOperationDescribe, d.Group); code != errNone {
			rg.ErrorCode = code
			p.setErr(code)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.ProtocolType, rg.Protocol = d.State.String(), d.ProtocolType, d.Protocol
		if r.Version >= 3 && r.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = s.authorizedOps(c, kmsg.ACLResourceTypeGroup, d.Group, groupAuthorizedOperations)
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, strPtr(m.InstanceID), m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			rg.Members = append(rg.Members, rm)
		}
		if r.Version >= 6 && rg.ErrorCode == errNone && d.State == groupcoord.Dead {
			// The coordinator holds no Dead group: this one is not
			// there.
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = strPtr("Group " + d.Group + " not found.")
		}
		p.setErr(rg.ErrorCode)
		resp.Groups = append(resp.Groups, rg)
	}
	return nil
}
