package kafkaserver

import (
	"bytes"
	"context"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/metrics"
)

// errNotCoordinator is Kafka's NOT_COORDINATOR (16): what a waiting
// JoinGroup or SyncGroup is answered when its connection or the server
// goes (the client finds the coordinator again).
const errNotCoordinator int16 = 16

// openGroups opens the store's group coordinator (groups.db at the
// store root).
func (s *Server) openGroups() (*groupcoord.Coordinator, error) {
	m := s.cfg.Metrics
	return groupcoord.Open(s.store.Dir(), groupcoord.Config{
		InitialRebalanceDelay: s.cfg.GroupInitialRebalanceDelay,
		OffsetsRetention:      s.cfg.OffsetsRetention,
		MinSessionTimeout:     s.cfg.GroupMinSessionTimeout,
		SubscribedTopics:      consumerSubscription,
		Logger:                s.log,
		OnRebalance:           func(string) { m.GroupRebalance() },
		OnCommit:              func(n int) { m.OffsetsCommitted(n) },
	})
}

// consumerSubscription decodes the subscription of a member of a
// "consumer" group (Kafka's ConsumerProtocolSubscription), whatever the
// assignor's name: every assignor of the consumer protocol sends it.
func consumerSubscription(_ string, metadata []byte) ([]string, bool) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(metadata); err != nil {
		return nil, false
	}
	return md.Topics, true
}

// answerLater makes p complete later: complete(fill) runs fill, which
// sets p's response, and completes p, once; when c's context ends first
// (the client went, or Shutdown), gone fills it instead. The reader goes
// on meanwhile, and the writer keeps the answers in request order.
func (c *conn) answerLater(p *pending, gone func()) (complete func(fill func())) {
	p.done = make(chan struct{})
	var (
		once sync.Once
		mu   sync.Mutex
		stop func() bool
	)
	complete = func(fill func()) {
		once.Do(func() {
			fill()
			close(p.done)
			mu.Lock()
			st := stop
			mu.Unlock()
			if st != nil {
				st()
			}
		})
	}
	mu.Lock()
	stop = context.AfterFunc(c.ctx, func() { complete(gone) })
	mu.Unlock()
	select {
	case <-p.done:
		stop()
	default:
	}
	return complete
}

// joinGroupKey is JoinGroup's API key: its handler is the one that reads
// the request's client id (a member's, for DescribeGroups).
const joinGroupKey = 11

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func clientHost(c *conn) string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		return "/" + c.nc.RemoteAddr().String()
	}
	return "/" + host
}

// handleJoinGroup: JoinGroup v0-9 (v0: the rebalance timeout is the
// session timeout; v4+: MEMBER_ID_REQUIRED on a first join; v5+:
// group.instance.id; v9: a static leader's rejoin skips the assignment).
// The answer waits for the rebalance.
func handleJoinGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.JoinGroupRequest)
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	p.resp = resp
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
		resp.ErrorCode, resp.Generation, resp.MemberID = errNotCoordinator, -1, r.MemberID
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

// handleSyncGroup: SyncGroup v0-5. A follower's answer waits for the
// leader's assignment.
func handleSyncGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.SyncGroupRequest)
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	p.resp = resp
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
		resp.ErrorCode = errNotCoordinator
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

// handleHeartbeat: Heartbeat v0-4.
func handleHeartbeat(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = int16(s.groups.Heartbeat(r.Group, r.MemberID, str(r.InstanceID), r.Generation))
	p.setErr(resp.ErrorCode)
	p.resp = resp
	return nil
}

// handleLeaveGroup: LeaveGroup v0-5; v0-2 name one member and answer
// its error at the top, v3+ name several (static ones by instance id).
func handleLeaveGroup(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
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
	p.resp = resp
	return nil
}

// groupStats is the metrics' view of the coordinator.
func (s *Server) groupStats() (map[string]int, int) {
	st := s.groups.Stats()
	by := make(map[string]int, len(st.ByState))
	for i, n := range st.ByState {
		by[groupcoord.State(i).String()] = n
	}
	return by, st.Members
}

// groupLag is every committed offset's lag behind the high watermark
// (the durable end) of its partition, for the partitions open.
func (s *Server) groupLag() []metrics.GroupLag {
	ends := map[groupcoord.TopicPartition]int64{}
	for _, p := range s.store.OpenPartitions() {
		id := p.ID()
		ends[groupcoord.TopicPartition{Topic: id.Topic, Partition: id.Partition}] = p.DurableEnd()
	}
	var out []metrics.GroupLag
	for _, o := range s.groups.Committed() {
		end, ok := ends[o.TopicPartition]
		if !ok {
			continue
		}
		out = append(out, metrics.GroupLag{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Lag: max(end-max(o.Offset, 0), 0)})
	}
	return out
}
