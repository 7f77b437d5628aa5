package groupcoord

import (
	"slices"
	"testing"
	"time"
)

func TestJoinSyncThreeMembers(t *testing.T) {
	e := newEnv(t, Config{})
	id1, ch1 := e.newMember("g")
	if e.state("g") != PreparingRebalance {
		t.Fatalf("state %v", e.state("g"))
	}
	id2, ch2 := e.newMember("g")
	id3, ch3 := e.newMember("g")
	// The initial delay holds the answers back.
	e.clk.Advance(testDelay / 2)
	waiting(t, ch1)
	e.clk.Advance(testDelay / 2)
	// A member came during the first delay: it is extended once.
	waiting(t, ch1)
	e.clk.Advance(testDelay)
	r1, r2, r3 := ready(t, ch1), ready(t, ch2), ready(t, ch3)
	for _, r := range []JoinResponse{r1, r2, r3} {
		if r.Code != None || r.Generation != 1 || r.Protocol != "range" || r.ProtocolType != "consumer" || r.Leader != id1 {
			t.Fatalf("join answer %+v", r)
		}
	}
	if len(r1.Members) != 3 || len(r2.Members) != 0 {
		t.Fatalf("leader got %d members, follower %d", len(r1.Members), len(r2.Members))
	}
	if string(r1.Members[1].Metadata) != "meta-range" {
		t.Fatalf("metadata %q", r1.Members[1].Metadata)
	}
	if e.state("g") != CompletingRebalance {
		t.Fatalf("state %v", e.state("g"))
	}
	s2 := e.sync(SyncRequest{Group: "g", MemberID: id2, Generation: 1})
	waiting(t, s2)
	if got := e.c.Heartbeat("g", id2, "", 1); got != None {
		t.Fatalf("heartbeat while completing: %v", got)
	}
	if got := e.c.Heartbeat("g", id2, "", 0); got != IllegalGeneration {
		t.Fatalf("heartbeat of generation 0: %v", got)
	}
	s1 := e.sync(SyncRequest{Group: "g", MemberID: id1, Generation: 1, Assignments: map[string][]byte{id1: []byte("a1"), id2: []byte("a2"), id3: []byte("a3")}})
	if r := ready(t, s1); string(r.Assignment) != "a1" || r.Protocol != "range" {
		t.Fatalf("leader sync %+v", r)
	}
	if r := ready(t, s2); string(r.Assignment) != "a2" {
		t.Fatalf("follower sync %+v", r)
	}
	if r := ready(t, e.sync(SyncRequest{Group: "g", MemberID: id3, Generation: 1})); string(r.Assignment) != "a3" {
		t.Fatalf("late follower sync %+v", r)
	}
	if e.state("g") != Stable {
		t.Fatalf("state %v", e.state("g"))
	}
	// Leave of one member: a rebalance, the others get
	// REBALANCE_IN_PROGRESS on their heartbeat and rejoin.
	top, codes := e.c.Leave("g", []LeaveMember{{MemberID: id3}})
	if top != None || codes[0] != None {
		t.Fatalf("leave %v %v", top, codes)
	}
	if e.state("g") != PreparingRebalance {
		t.Fatalf("state %v", e.state("g"))
	}
	if got := e.c.Heartbeat("g", id1, "", 1); got != RebalanceInProgress {
		t.Fatalf("heartbeat %v", got)
	}
	if r := ready(t, e.sync(SyncRequest{Group: "g", MemberID: id1, Generation: 1})); r.Code != RebalanceInProgress {
		t.Fatalf("sync while preparing %+v", r)
	}
	j1 := e.join(joinReq("g", id1))
	waiting(t, j1)
	j2 := e.join(joinReq("g", id2))
	// Every member rejoined: no wait for the rebalance timeout.
	if r := ready(t, j1); r.Generation != 2 || len(r.Members) != 2 {
		t.Fatalf("rejoin %+v", r)
	}
	ready(t, j2)
	top, codes = e.c.Leave("g", []LeaveMember{{MemberID: id3}, {MemberID: "nobody"}})
	if top != None || codes[0] != UnknownMemberID || codes[1] != UnknownMemberID {
		t.Fatalf("leave of unknown members %v %v", top, codes)
	}
}

func TestMemberIDRequiredOnlyFromV4(t *testing.T) {
	e := newEnv(t, Config{})
	req := joinReq("g", "")
	req.Version = 3
	ch := e.join(req)
	waiting(t, ch)
	e.clk.Advance(testDelay)
	if r := ready(t, ch); r.Code != None || r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("v3 join %+v", r)
	}
}

func TestPendingMemberExpires(t *testing.T) {
	e := newEnv(t, Config{})
	ids, _ := e.stable("g", 1)
	pend := ready(t, e.join(joinReq("g", "")))
	if pend.Code != MemberIDRequired {
		t.Fatal(pend)
	}
	// The leader rejoins: the rebalance waits for the pending member
	// until its session timeout.
	j := e.join(joinReq("g", ids[0]))
	waiting(t, j)
	e.clk.Advance(testSession)
	if r := ready(t, j); r.Code != None || len(r.Members) != 1 {
		t.Fatalf("%+v", r)
	}
	// The pending id is no longer valid.
	if r := ready(t, e.join(joinReq("g", pend.MemberID))); r.Code != UnknownMemberID {
		t.Fatalf("expired pending id: %+v", r)
	}
}

func TestSessionTimeoutRebalances(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.stable("g", 2)
	// The follower goes silent; the leader heartbeats.
	e.clk.Advance(testSession / 2)
	if got := e.c.Heartbeat("g", ids[0], "", gen); got != None {
		t.Fatalf("heartbeat %v", got)
	}
	e.clk.Advance(testSession / 2)
	if got := e.c.Heartbeat("g", ids[0], "", gen); got != RebalanceInProgress {
		t.Fatalf("after the follower's session expired: %v", got)
	}
	if got := e.c.Heartbeat("g", ids[1], "", gen); got != UnknownMemberID {
		t.Fatalf("expired member's heartbeat: %v", got)
	}
	r := ready(t, e.join(joinReq("g", ids[0])))
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestRebalanceTimeoutExpelsMembers(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.stable("g", 2)
	// A new member triggers a rebalance; only it and the leader rejoin.
	newID, jn := e.newMember("g")
	j0 := e.join(joinReq("g", ids[0]))
	for range 6 {
		e.clk.Advance(testRebalance / 6)
		// The follower heartbeats but never rejoins.
		e.c.Heartbeat("g", ids[1], "", gen)
	}
	r := ready(t, j0)
	if r.Code != None || r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("%+v", r)
	}
	ready(t, jn)
	got := []string{r.Members[0].MemberID, r.Members[1].MemberID}
	if !slices.Contains(got, newID) || slices.Contains(got, ids[1]) {
		t.Fatalf("members %v", got)
	}
}

func TestProtocolSelection(t *testing.T) {
	e := newEnv(t, Config{})
	_, c1 := e.newMember("g", "roundrobin", "range")
	_, c2 := e.newMember("g", "range", "roundrobin")
	_, c3 := e.newMember("g", "range", "sticky", "roundrobin")
	if r := ready(t, e.join(joinReq("g", "", "sticky"))); r.Code != InconsistentGroupProtocol {
		t.Fatalf("no common protocol: %+v", r)
	}
	req := joinReq("g", "", "range")
	req.ProtocolType = "connect"
	if r := ready(t, e.join(req)); r.Code != InconsistentGroupProtocol {
		t.Fatalf("other protocol type: %+v", r)
	}
	e.clk.Advance(3 * testDelay)
	for _, ch := range []chan JoinResponse{c1, c2, c3} {
		if r := ready(t, ch); r.Protocol != "range" {
			t.Fatalf("protocol %q", r.Protocol)
		}
	}
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	e := newEnv(t, Config{})
	static := func(member, inst string) JoinRequest {
		r := joinReq("g", member)
		r.InstanceID = inst
		return r
	}
	c1, c2 := e.join(static("", "i1")), e.join(static("", "i2"))
	e.clk.Advance(2 * testDelay)
	r1, r2 := ready(t, c1), ready(t, c2)
	if r1.Code != None || r2.Code != None {
		t.Fatalf("%+v %+v", r1, r2)
	}
	assign := map[string][]byte{r1.MemberID: []byte("x1"), r2.MemberID: []byte("x2")}
	s1 := e.sync(SyncRequest{Group: "g", MemberID: r1.MemberID, InstanceID: "i1", Generation: 1, Assignments: assign})
	s2 := e.sync(SyncRequest{Group: "g", MemberID: r2.MemberID, InstanceID: "i2", Generation: 1, Assignments: assign})
	ready(t, s1)
	ready(t, s2)
	if e.state("g") != Stable {
		t.Fatalf("state %v", e.state("g"))
	}
	// i2 restarts: it joins without member id and gets a new one, the
	// same generation, and its old assignment, with no rebalance.
	r := ready(t, e.join(static("", "i2")))
	if r.Code != None || r.Generation != 1 || r.MemberID == r2.MemberID {
		t.Fatalf("static rejoin %+v", r)
	}
	if e.state("g") != Stable {
		t.Fatalf("state after static rejoin %v", e.state("g"))
	}
	if s := ready(t, e.sync(SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: "i2", Generation: 1})); s.Code != None || string(s.Assignment) != "x2" {
		t.Fatalf("sync after static rejoin %+v", s)
	}
	// The old member id is fenced.
	if got := e.c.Heartbeat("g", r2.MemberID, "i2", 1); got != FencedInstanceID {
		t.Fatalf("old id heartbeat %v", got)
	}
	// A static leave by instance id.
	top, codes := e.c.Leave("g", []LeaveMember{{InstanceID: "i2"}, {InstanceID: "i9"}, {MemberID: "wrong", InstanceID: "i1"}})
	if top != None || codes[0] != None || codes[1] != UnknownMemberID || codes[2] != FencedInstanceID {
		t.Fatalf("leave %v %v", top, codes)
	}
	if e.state("g") != PreparingRebalance {
		t.Fatalf("state %v", e.state("g"))
	}
}

func TestStaticMemberNotRejoinedStays(t *testing.T) {
	e := newEnv(t, Config{})
	req := joinReq("g", "")
	req.InstanceID = "s"
	cs := e.join(req)
	id, cd := e.newMember("g")
	e.clk.Advance(2 * testDelay)
	rs, rd := ready(t, cs), ready(t, cd)
	leader := rs.Leader
	assign := map[string][]byte{rs.MemberID: []byte("s"), id: []byte("d")}
	for _, m := range []struct{ id, inst string }{{rs.MemberID, "s"}, {id, ""}} {
		sr := SyncRequest{Group: "g", MemberID: m.id, InstanceID: m.inst, Generation: rd.Generation}
		if m.id == leader {
			sr.Assignments = assign
		}
		e.sync(sr)
	}
	// The dynamic member rejoins, the static one does not: at the
	// rebalance timeout the static one stays a member.
	j := e.join(joinReq("g", id, "range", "roundrobin"))
	for range 5 {
		e.clk.Advance(testRebalance / 6)
		if got := e.c.Heartbeat("g", rs.MemberID, "s", rd.Generation); got != RebalanceInProgress {
			t.Fatalf("static member's heartbeat: %v", got)
		}
	}
	e.clk.Advance(testRebalance / 6)
	r := ready(t, j)
	if r.Code != None || len(r.Members) != 2 || r.Leader != id {
		t.Fatalf("%+v", r)
	}
}

func TestCommitRules(t *testing.T) {
	e := newEnv(t, Config{})
	off := func(p int32, o int64) []OffsetCommit {
		return []OffsetCommit{{TopicPartition: TopicPartition{"t", p}, Offset: o, LeaderEpoch: 3, Metadata: "m"}}
	}
	// A simple consumer: the group is created Empty.
	if c := e.commit(CommitRequest{Group: "simple", Generation: -1, Offsets: off(0, 5)}); c[0] != None {
		t.Fatal(c)
	}
	if c := e.commit(CommitRequest{Group: "nogroup", Generation: 2, Offsets: off(0, 5)}); c[0] != IllegalGeneration {
		t.Fatal(c)
	}
	got, _ := e.c.Fetch("simple", []TopicPartition{{"t", 0}, {"t", 1}}, false)
	if got[0].Offset != 5 || got[0].LeaderEpoch != 3 || got[0].Metadata != "m" || got[1].Offset != -1 {
		t.Fatalf("fetch %+v", got)
	}
	ids, gen := e.stable("g", 2)
	// A simple commit to a group with members is refused.
	if c := e.commit(CommitRequest{Group: "g", Generation: -1, Offsets: off(0, 1)}); c[0] != UnknownMemberID {
		t.Fatal(c)
	}
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[1], Generation: gen - 1, Offsets: off(0, 1)}); c[0] != IllegalGeneration {
		t.Fatal(c)
	}
	if c := e.commit(CommitRequest{Group: "g", MemberID: "x", Generation: gen, Offsets: off(0, 1)}); c[0] != UnknownMemberID {
		t.Fatal(c)
	}
	long := make([]byte, maxMetadataBytes+1)
	c := e.commit(CommitRequest{Group: "g", MemberID: ids[1], Generation: gen, Offsets: append(off(0, 7), OffsetCommit{TopicPartition: TopicPartition{"t", 1}, Offset: 1, Metadata: string(long)})})
	if c[0] != None || c[1] != OffsetMetadataTooLarge {
		t.Fatal(c)
	}
	// During PreparingRebalance a member still commits.
	e.newMember("g")
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: off(1, 9)}); c[0] != None {
		t.Fatal(c)
	}
	j0, j1 := e.join(joinReq("g", ids[0])), e.join(joinReq("g", ids[1]))
	r := ready(t, j0)
	ready(t, j1)
	// CompletingRebalance: REBALANCE_IN_PROGRESS.
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: r.Generation, Offsets: off(1, 10)}); c[0] != RebalanceInProgress {
		t.Fatal(c)
	}
	all, _ := e.c.Fetch("g", nil, false)
	if len(all) != 2 || all[0].Offset != 7 || all[1].Offset != 9 {
		t.Fatalf("all offsets %+v", all)
	}
	if l := e.c.List([]State{CompletingRebalance}); len(l) != 1 || l[0].Group != "g" {
		t.Fatalf("list %+v", l)
	}
	if l := e.c.List(nil); len(l) != 2 {
		t.Fatalf("list %+v", l)
	}
}

func TestReopenKeepsOffsetsAndGeneration(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.stable("g", 1)
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 2}, Offset: 42, LeaderEpoch: -1, Metadata: "meta"}}}); c[0] != None {
		t.Fatal(c)
	}
	e.commit(CommitRequest{Group: "simple", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 1}}})
	// The member leaves: the group is Empty in the next generation
	// (a Stable group comes back Stable: TestRestartStableGroup).
	if top, codes := e.c.Leave("g", []LeaveMember{{MemberID: ids[0]}}); top != None || codes[0] != None {
		t.Fatal(top, codes)
	}
	gen++
	e.reopen()
	got, _ := e.c.Fetch("g", nil, false)
	if len(got) != 1 || got[0].Offset != 42 || got[0].Metadata != "meta" {
		t.Fatalf("after reopen %+v", got)
	}
	d := e.c.Describe([]string{"g"})[0]
	if d.State != Empty || d.Generation != gen || d.ProtocolType != "consumer" || len(d.Members) != 0 {
		t.Fatalf("after reopen %+v", d)
	}
	// The old member is gone; a new one joins the next generation.
	if got := e.c.Heartbeat("g", ids[0], "", gen); got != UnknownMemberID {
		t.Fatal(got)
	}
	_, ch := e.newMember("g")
	e.clk.Advance(testDelay)
	if r := ready(t, ch); r.Generation != gen+1 {
		t.Fatalf("%+v", r)
	}
	if l := e.c.List(nil); len(l) != 2 {
		t.Fatalf("%+v", l)
	}
}

func TestRetention(t *testing.T) {
	e := newEnv(t, Config{OffsetsRetention: time.Minute, RetentionCheckInterval: 30 * time.Second})
	ids, gen := e.stable("g", 1)
	e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 1}}})
	e.commit(CommitRequest{Group: "simple", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 1}}})
	// A Stable group keeps its offsets (its subscription is unknown).
	for range 30 {
		e.clk.Advance(testSession / 2)
		e.c.Heartbeat("g", ids[0], "", gen)
	}
	e.c.ExpireOffsets()
	if got, _ := e.c.Fetch("g", nil, false); len(got) != 1 {
		t.Fatalf("stable group lost its offsets: %+v", got)
	}
	if got, _ := e.c.Fetch("simple", nil, false); len(got) != 0 {
		t.Fatalf("simple consumer's old offset kept: %+v", got)
	}
	if l := e.c.List(nil); len(l) != 1 {
		t.Fatalf("empty simple group kept: %+v", l)
	}
	e.c.Leave("g", []LeaveMember{{MemberID: ids[0]}})
	if e.state("g") != Empty {
		t.Fatal(e.state("g"))
	}
	e.clk.Advance(time.Minute - time.Second)
	e.c.ExpireOffsets()
	if got, _ := e.c.Fetch("g", nil, false); len(got) != 1 {
		t.Fatalf("expired before the retention since Empty: %+v", got)
	}
	e.reopen()
	e.clk.Advance(30 * time.Second) // the scan timer fires and expires
	if got, _ := e.c.Fetch("g", nil, false); len(got) != 0 {
		t.Fatalf("kept after retention: %+v", got)
	}
	e.reopen()
	if l := e.c.List(nil); len(l) != 0 {
		t.Fatalf("groups after expiry and reopen: %+v", l)
	}
}

func TestDeleteGroupsAndOffsets(t *testing.T) {
	e := newEnv(t, Config{SubscribedTopics: func(protocol string, md []byte) ([]string, bool) { return []string{"sub"}, true }})
	ids, gen := e.stable("g", 1)
	offs := []OffsetCommit{{TopicPartition: TopicPartition{"sub", 0}, Offset: 1}, {TopicPartition: TopicPartition{"other", 0}, Offset: 2}}
	e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: offs})
	del := func(group string) []Code {
		ch := make(chan []Code, 1)
		e.c.DeleteGroups([]string{group}, func(c []Code) { ch <- c })
		return <-ch
	}
	delOffsets := func(group string, tps ...TopicPartition) (Code, []Code) {
		type res struct {
			top   Code
			codes []Code
		}
		ch := make(chan res, 1)
		e.c.DeleteOffsets(group, tps, func(top Code, codes []Code) { ch <- res{top, codes} })
		r := <-ch
		return r.top, r.codes
	}
	if c := del("g"); c[0] != NonEmptyGroup {
		t.Fatal(c)
	}
	if c := del("absent"); c[0] != GroupIDNotFound {
		t.Fatal(c)
	}
	top, codes := delOffsets("g", TopicPartition{"sub", 0}, TopicPartition{"other", 0})
	if top != None || codes[0] != GroupSubscribedToTopic || codes[1] != None {
		t.Fatal(top, codes)
	}
	if got, _ := e.c.Fetch("g", nil, false); len(got) != 1 || got[0].Topic != "sub" {
		t.Fatalf("%+v", got)
	}
	if top, _ := delOffsets("absent", TopicPartition{"sub", 0}); top != GroupIDNotFound {
		t.Fatal(top)
	}
	e.c.Leave("g", []LeaveMember{{MemberID: ids[0]}})
	if c := del("g"); c[0] != None {
		t.Fatal(c)
	}
	e.reopen()
	if l := e.c.List(nil); len(l) != 0 {
		t.Fatalf("%+v", l)
	}
	if got, _ := e.c.Fetch("g", []TopicPartition{{"sub", 0}}, false); got[0].Offset != -1 {
		t.Fatalf("%+v", got)
	}
}

func TestInvalidRequests(t *testing.T) {
	e := newEnv(t, Config{})
	if r := ready(t, e.join(joinReq("", ""))); r.Code != InvalidGroupID {
		t.Fatal(r)
	}
	req := joinReq("g", "")
	req.SessionTimeout = time.Second
	if r := ready(t, e.join(req)); r.Code != InvalidSessionTimeout {
		t.Fatal(r)
	}
	if r := ready(t, e.join(joinReq("g", "someone"))); r.Code != UnknownMemberID {
		t.Fatal(r)
	}
	if r := ready(t, e.sync(SyncRequest{Group: "g", MemberID: "x"})); r.Code != UnknownMemberID {
		t.Fatal(r)
	}
	if got := e.c.Heartbeat("nope", "x", "", 0); got != UnknownMemberID {
		t.Fatal(got)
	}
}

func TestCloseAnswersWaitingJoins(t *testing.T) {
	e := newEnv(t, Config{})
	_, ch := e.newMember("g")
	e.c.Close()
	if r := ready(t, ch); r.Code != NotCoordinator {
		t.Fatal(r)
	}
	e.open()
}

// TestWaitingSyncThenSilentExpires: a static follower waiting in
// SyncGroup is kept alive past its session timeout; when a rebalance
// answers its SyncGroup with REBALANCE_IN_PROGRESS and it never comes
// back, its session timeout removes it (the rebalance timeout keeps
// static members): its session timer must run again once its wait is
// over.
func TestWaitingSyncThenSilentExpires(t *testing.T) {
	e := newEnv(t, Config{})
	req := joinReq("g", "")
	req.InstanceID = "s"
	cs := e.join(req)
	req2 := joinReq("g", "")
	req2.InstanceID = "s2"
	cd := e.join(req2)
	e.clk.Advance(2 * testDelay)
	rs, rd := ready(t, cs), ready(t, cd)
	// s joined first: it leads; s2, static too, follows (a static
	// member is not removed by the rebalance timeout, only by its
	// session).
	if rs.Leader != rs.MemberID {
		t.Fatalf("leader %s", rs.Leader)
	}
	follower, fInst := rd.MemberID, "s2"
	leader := rs.Leader
	s := e.sync(SyncRequest{Group: "g", MemberID: follower, InstanceID: fInst, Generation: rd.Generation})
	// Longer than a session: the waiting follower stays.
	for range 3 {
		e.clk.Advance(testSession / 2)
		if got := e.c.Heartbeat("g", leader, map[bool]string{true: "s"}[leader == rs.MemberID], rd.Generation); got != None {
			t.Fatalf("leader heartbeat: %v", got)
		}
	}
	waiting(t, s)
	if d := e.c.Describe([]string{"g"})[0]; len(d.Members) != 2 {
		t.Fatalf("members %+v", d.Members)
	}
	// The leader rejoins: the follower's SyncGroup gets
	// REBALANCE_IN_PROGRESS, and it goes silent.
	lreq := joinReq("g", leader, "range", "sticky") // other protocols: a rebalance
	if leader == rs.MemberID {
		lreq.InstanceID = "s"
	}
	j := e.join(lreq)
	if r := ready(t, s); r.Code != RebalanceInProgress {
		t.Fatalf("%+v", r)
	}
	// The follower is silent; the leader heartbeats once answered.
	var r *JoinResponse
	for range 12 {
		e.clk.Advance(testSession / 2)
		if r == nil {
			select {
			case got := <-j:
				r = &got
			default:
			}
		}
		if r != nil {
			if got := e.c.Heartbeat("g", leader, lreq.InstanceID, r.Generation); got != None {
				t.Fatalf("leader heartbeat: %v", got)
			}
		}
	}
	if r == nil || r.Code != None {
		t.Fatalf("the leader's rejoin: %+v", r)
	}
	if d := e.c.Describe([]string{"g"})[0]; len(d.Members) != 1 || d.Members[0].MemberID != leader {
		t.Fatalf("members after the follower went silent: %+v", d.Members)
	}
}
