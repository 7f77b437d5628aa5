package kafkaserver

// JoinGroup (key 11), versions 0-9 advertised.
//
//   - v0: no rebalance timeout; the session timeout is used for it.
//   - v1: RebalanceTimeoutMillis. v2: ThrottleMillis in the response.
//   - v4 (KIP-394): a first join without a member id is answered
//     MEMBER_ID_REQUIRED (79) with the member id to join with.
//   - v5 (KIP-345): InstanceID, static membership.
//   - v6: flexible. v7: ProtocolType and Protocol in the response.
//   - v8 (KIP-800): Reason, which is ignored.
//   - v9 (KIP-814): SkipAssignment, set when a static leader rejoins.
//
// The classic protocol of package groupcoord. The answer waits for the
// rebalance without holding the reader (answerLater). When the
// connection goes, or the server shuts down, a waiting join is answered
// NOT_COORDINATOR (16) with generation -1, on which the client finds
// the coordinator again.

import (
	"bytes"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// joinGroupKey is JoinGroup's API key: its handler is the one that reads
// the request's client id (a member's, for DescribeGroups).
const joinGroupKey = 11

// clientHost is a member's client host as Kafka gives it: "/" and the
// address the connection came from.
func clientHost(c *conn) string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return "/" + c.nc.RemoteAddr().String()
	}
	return "/" + host
}

// handleJoinGroup answers JoinGroup once the rebalance has its members.
func handleJoinGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.JoinGroupRequest)
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	p.resp = resp
	if code := s.groupCode(c, kmsg.ACLOperationRead, r.Group); code != errNone {
		resp.ErrorCode = code
		resp.Generation = -1
		p.setErr(code)
		return nil
	}
	jr := groupcoord.JoinRequest{
		Group: r.Group, MemberID: r.MemberID, InstanceID: str(r.InstanceID),
		ClientID: p.clientID, ClientHost: clientHost(c),
		SessionTimeout:   time.Duration(r.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond,
		ProtocolType:     r.ProtocolType, Version: r.Version,
	}
	if r.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, pr := range r.Protocols {
		// Copies: kmsg's bytes alias the request frame, which goes back
		// to its pool once answered, and the coordinator keeps them.
		jr.Protocols = append(jr.Protocols, groupcoord.Protocol{Name: pr.Name, Metadata: bytes.Clone(pr.Metadata)})
	}
	complete := c.answerLater(p, func() {
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.NotCoordinator.Code, -1, r.MemberID
		p.setErr(resp.ErrorCode)
	})
	s.groups.Join(jr, func(jres groupcoord.JoinResponse) {
		complete(func() {
			resp.ErrorCode = int16(jres.Code)
			resp.Generation = jres.Generation
			resp.MemberID = jres.MemberID
			resp.LeaderID = jres.Leader
			resp.SkipAssignment = jres.SkipAssignment
			if jres.Code == groupcoord.None {
				resp.ProtocolType = &jres.ProtocolType
				resp.Protocol = &jres.Protocol
			}
			for _, m := range jres.Members {
				rm := kmsg.NewJoinGroupResponseMember()
				rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, strPtr(m.InstanceID), m.Metadata
				resp.Members = append(resp.Members, rm)
			}
			p.setErr(resp.ErrorCode)
		})
	})
	return nil
}
