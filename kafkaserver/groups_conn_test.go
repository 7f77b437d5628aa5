package kafkaserver

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func joinV3(group string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 3
	r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = group, 10000, 60000, "consumer"
	pr := kmsg.NewJoinGroupRequestProtocol()
	pr.Name = "range"
	r.Protocols = append(r.Protocols, pr)
	return r
}

// TestWaitingJoinDoesNotBlockTheReader: two JoinGroups sent on one
// connection, one after the other, both join the rebalance: the first
// waits for it without stopping the connection's reader from taking the
// second. The answers come in request order.
func TestWaitingJoinDoesNotBlockTheReader(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{GroupInitialRebalanceDelay: 300 * time.Millisecond})
	c := ts.dial()
	first, second := joinV3("g"), joinV3("g")
	c1 := c.send(first)
	c2 := c.send(second)
	r1 := c.read(first, c1).(*kmsg.JoinGroupResponse)
	r2 := c.read(second, c2).(*kmsg.JoinGroupResponse)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.Generation != 1 || r2.Generation != 1 {
		t.Fatalf("%+v\n%+v", r1, r2)
	}
	leader := r1
	if r2.MemberID == r2.LeaderID {
		leader = r2
	}
	if len(leader.Members) != 2 {
		t.Fatalf("the leader got %d members, want both joins", len(leader.Members))
	}
}

// TestShutdownAnswersWaitingJoin: a JoinGroup waiting for a rebalance
// (an initial delay of an hour) does not hold Shutdown back: it is
// answered NOT_COORDINATOR, and Shutdown returns.
func TestShutdownAnswersWaitingJoin(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{GroupInitialRebalanceDelay: time.Hour})
	c := ts.dial()
	join := joinV3("g")
	corr := c.send(join)
	// Wait until the join is in (a DescribeGroups on another connection
	// sees the member).
	for {
		d := ts.dial()
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{"g"}
		if g := d.do(r).(*kmsg.DescribeGroupsResponse).Groups[0]; g.State == "PreparingRebalance" && len(g.Members) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(ctx) }()
	if r := c.read(join, corr).(*kmsg.JoinGroupResponse); r.ErrorCode != errNotCoordinator {
		t.Fatalf("%+v", r)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
