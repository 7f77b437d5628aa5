package groupcoord

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestGroupRecordRoundTrip: a version 2 record decodes to what was
// encoded; a version 1 record (the previous build's) still decodes, as
// an Empty group.
func TestGroupRecordRoundTrip(t *testing.T) {
	r := groupRecord{state: Stable, generation: 7, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "m1",
		members: []memberRecord{
			{id: "m1", clientID: "c1", clientHost: "/127.0.0.1", rebalanceMs: 30000, sessionMs: 10000, metadata: []byte("sub1"), assignment: []byte("as1")},
			{id: "m2", instanceID: "i2", clientID: "c2", clientHost: "/10.0.0.2", rebalanceMs: 60000, sessionMs: 45000, metadata: []byte("sub2")},
		}}
	got, err := decodeGroupRecord(r.encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("got %+v\nwant %+v", got, r)
	}
	v1 := groupRecord{generation: 3, protocolType: "consumer", emptyMs: 1234, v1: true}
	got, err = decodeGroupRecord(v1.encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v1) || got.state != Empty {
		t.Fatalf("v1: got %+v", got)
	}
	// Refused: a leader that is not a member, a member twice, a member
	// count larger than the bytes, a state never written.
	bad := map[string]groupRecord{
		"leader":    {state: Stable, protocol: "p", leader: "x", members: []memberRecord{{id: "m"}}},
		"twice":     {state: Stable, protocol: "p", leader: "m", members: []memberRecord{{id: "m"}, {id: "m"}}},
		"empty":     {state: Empty, leader: "m", members: []memberRecord{{id: "m"}}},
		"preparing": {state: PreparingRebalance, leader: "m", members: []memberRecord{{id: "m"}}},
		"nomembers": {state: Stable},
	}
	for name, r := range bad {
		if _, err := decodeGroupRecord(r.encode()); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	b := groupRecord{state: Stable, protocol: "p", leader: "m", members: []memberRecord{{id: "m"}}}.encode()
	at := groupRecordFixedV2 + 1 - 4 // the member count
	b[at], b[at+1], b[at+2], b[at+3] = 0xff, 0xff, 0xff, 0xff
	if _, err := decodeGroupRecord(b); err == nil {
		t.Fatal("a member count of 2^32-1 decoded")
	}
}

// TestOpenReadsGroupRecordV1: a file holding the previous build's
// group record opens, the group Empty with its generation.
func TestOpenReadsGroupRecordV1(t *testing.T) {
	e := newEnv(t, Config{})
	e.c.com.push(&item{ops: []op{{kind: opPutGroup, key: []byte("old"), val: groupRecord{generation: 4, protocolType: "consumer", emptyMs: 1000}.encodeV1()}}})
	e.settle()
	e.reopen()
	d := e.c.Describe([]string{"old"})[0]
	if d.State != Empty || d.Generation != 4 || d.ProtocolType != "consumer" {
		t.Fatalf("%+v", d)
	}
}

// restartStable makes a Stable group of two members, restarts the
// coordinator (by Close, or by opening a copy of the file as the open
// coordinator left it, as after a crash) and checks that the group came
// back Stable: same generation, leader, protocol, members, and the
// members go on with their old ids and generation.
func restartStable(t *testing.T, crash bool) {
	e := newEnv(t, Config{})
	ids, gen := e.stable("g", 2)
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[1], Generation: gen, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 9}}}); c[0] != None {
		t.Fatal(c)
	}
	before := e.c.Describe([]string{"g"})[0]
	if crash {
		e.settle()
		data, err := os.ReadFile(filepath.Join(e.dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		e.c.Close()
		e.dir = t.TempDir()
		if err := os.WriteFile(filepath.Join(e.dir, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		e.open()
	} else {
		e.reopen()
	}
	after := e.c.Describe([]string{"g"})[0]
	if after.State != Stable || !reflect.DeepEqual(after, before) {
		t.Fatalf("after restart %+v\nbefore %+v", after, before)
	}
	if got, _ := e.c.Fetch("g", nil, false); len(got) != 1 || got[0].Offset != 9 {
		t.Fatalf("offsets %+v", got)
	}
	// ids[0] (the leader) goes on heartbeating; ids[1] is dead.
	for range 3 {
		e.clk.Advance(testSession * 3 / 10)
		if got := e.c.Heartbeat("g", ids[0], "", gen); got != None {
			t.Fatalf("heartbeat of the live member: %v", got)
		}
	}
	if s := ready(t, e.sync(SyncRequest{Group: "g", MemberID: ids[0], Generation: gen})); s.Code != None || string(s.Assignment) != "assignment of "+ids[0] || s.Protocol != "range" {
		t.Fatalf("sync after restart %+v", s)
	}
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 10}}}); c[0] != None {
		t.Fatal(c)
	}
	if st := e.state("g"); st != Stable {
		t.Fatalf("state %v before the dead member's session ends", st)
	}
	e.clk.Advance(testSession / 10)
	// The dead member's session (started at open) has expired: the
	// normal rebalance follows, and the live member rejoins alone.
	if st := e.state("g"); st != PreparingRebalance {
		t.Fatalf("state %v after the dead member's session", st)
	}
	if got := e.c.Heartbeat("g", ids[1], "", gen); got != UnknownMemberID {
		t.Fatalf("heartbeat of the expired member: %v", got)
	}
	if got := e.c.Heartbeat("g", ids[0], "", gen); got != RebalanceInProgress {
		t.Fatalf("heartbeat during the rebalance: %v", got)
	}
	r := ready(t, e.join(joinReq("g", ids[0])))
	if r.Code != None || r.Generation != gen+1 || r.Leader != ids[0] || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
}

func TestRestartStableGroup(t *testing.T) { restartStable(t, false) }

func TestCrashStableGroup(t *testing.T) { restartStable(t, true) }

// TestRestartAllMembersDead: no member heartbeats after the restart:
// each session expires and the group ends Empty, in the next
// generation, its offsets kept.
func TestRestartAllMembersDead(t *testing.T) {
	e := newEnv(t, Config{})
	_, gen := e.stable("g", 2)
	e.reopen()
	if st := e.state("g"); st != Stable {
		t.Fatal(st)
	}
	e.clk.Advance(testSession)
	e.clk.Advance(testRebalance)
	d := e.c.Describe([]string{"g"})[0]
	if d.State != Empty || d.Generation != gen+1 || len(d.Members) != 0 {
		t.Fatalf("%+v", d)
	}
	e.reopen()
	if d := e.c.Describe([]string{"g"})[0]; d.State != Empty || d.Generation != gen+1 {
		t.Fatalf("after a second restart %+v", d)
	}
}

// TestRestartStaticMember: a static member (KIP-345) keeps its member
// id and assignment across a restart; rejoining without its member id
// (its own restart) it takes over its instance and its assignment,
// without a rebalance, and that too survives a restart.
func TestRestartStaticMember(t *testing.T) {
	e := newEnv(t, Config{})
	req := joinReq("g", "")
	req.InstanceID = "i1"
	r := ready(t, func() chan JoinResponse { ch := e.join(req); e.clk.Advance(testDelay); return ch }())
	if r.Code != None {
		t.Fatalf("%+v", r)
	}
	if s := ready(t, e.sync(SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: "i1", Generation: r.Generation, Assignments: map[string][]byte{r.MemberID: []byte("a1")}})); s.Code != None {
		t.Fatalf("%+v", s)
	}
	e.reopen()
	if got := e.c.Heartbeat("g", r.MemberID, "i1", r.Generation); got != None {
		t.Fatalf("heartbeat after restart: %v", got)
	}
	j := ready(t, e.join(req))
	if j.Code != None || j.Generation != r.Generation || j.MemberID == r.MemberID {
		t.Fatalf("static rejoin %+v", j)
	}
	e.settle()
	e.reopen()
	if got := e.c.Heartbeat("g", r.MemberID, "i1", r.Generation); got != FencedInstanceID {
		t.Fatalf("old id after restart: %v", got)
	}
	if s := ready(t, e.sync(SyncRequest{Group: "g", MemberID: j.MemberID, InstanceID: "i1", Generation: r.Generation})); s.Code != None || string(s.Assignment) != "a1" {
		t.Fatalf("sync of the new id after restart %+v", s)
	}
	if st := e.state("g"); st != Stable {
		t.Fatal(st)
	}
}

// TestRestartDuringCompletingRebalance: a restart after the join phase
// and before the leader's assignment is stored: the members come back
// in a rebalance of the stored generation and rejoin with their ids;
// the generation goes on from there.
func TestRestartDuringCompletingRebalance(t *testing.T) {
	e := newEnv(t, Config{})
	id1, c1 := e.newMember("g")
	id2, c2 := e.newMember("g")
	e.clk.Advance(2 * testDelay)
	r1, _ := ready(t, c1), ready(t, c2)
	e.settle()
	e.reopen()
	d := e.c.Describe([]string{"g"})[0]
	if d.State != PreparingRebalance || d.Generation != r1.Generation || len(d.Members) != 2 {
		t.Fatalf("%+v", d)
	}
	if s := ready(t, e.sync(SyncRequest{Group: "g", MemberID: id2, Generation: r1.Generation})); s.Code != RebalanceInProgress {
		t.Fatalf("sync %+v", s)
	}
	j1, j2 := e.join(joinReq("g", id1)), e.join(joinReq("g", id2))
	a, b := ready(t, j1), ready(t, j2)
	if a.Code != None || b.Code != None || a.Generation != r1.Generation+1 || a.MemberID != id1 || b.MemberID != id2 {
		t.Fatalf("rejoins %+v %+v", a, b)
	}
}

// TestSyncAnsweredWhenStored: the leader's SyncGroup is answered once
// its assignment is durable, and a failed write rebalances again
// instead of answering it.
func TestSyncAnsweredWhenStored(t *testing.T) {
	e := newEnv(t, Config{})
	id, ch := e.newMember("g")
	e.clk.Advance(testDelay)
	r := ready(t, ch)
	block := make(chan struct{})
	e.c.com.push(&item{apply: func(error) { <-block }})
	s := make(chan SyncResponse, 1)
	e.c.Sync(SyncRequest{Group: "g", MemberID: id, Generation: r.Generation, Assignments: map[string][]byte{id: []byte("a")}}, func(r SyncResponse) { s <- r })
	waiting(t, s)
	if st := e.state("g"); st != CompletingRebalance {
		t.Fatal(st)
	}
	// The leader's SyncGroup again while the first waits: the first is
	// superseded, the second answered with the assignment.
	again := make(chan SyncResponse, 1)
	e.c.Sync(SyncRequest{Group: "g", MemberID: id, Generation: r.Generation, Assignments: map[string][]byte{id: []byte("a")}}, func(r SyncResponse) { again <- r })
	if got := ready(t, s); got.Code != RebalanceInProgress {
		t.Fatalf("superseded sync %+v", got)
	}
	close(block)
	e.settle()
	if got := ready(t, again); got.Code != None || string(got.Assignment) != "a" {
		t.Fatalf("%+v", got)
	}
	if st := e.state("g"); st != Stable {
		t.Fatal(st)
	}
}

// TestSyncStoreFails: a SyncGroup whose assignment cannot be written
// is not answered with it: the group rebalances again.
func TestSyncStoreFails(t *testing.T) {
	e := newEnv(t, Config{})
	id, ch := e.newMember("g")
	e.clk.Advance(testDelay)
	r := ready(t, ch)
	errFull := errors.New("disk full")
	e.settle() // the committer idle: its last read of stepHook is done
	stepHook = func(string) error { return errFull }
	s := e.sync(SyncRequest{Group: "g", MemberID: id, Generation: r.Generation, Assignments: map[string][]byte{id: []byte("a")}})
	stepHook = nil
	if got := ready(t, s); got.Code != RebalanceInProgress {
		t.Fatalf("%+v", got)
	}
	if st := e.state("g"); st != PreparingRebalance {
		t.Fatal(st)
	}
}

// FuzzLoadGroupRecord: any group record that decodes loads into a
// coordinator (as Open loads it) that then works: described, every
// member heartbeats and syncs, then every session expires and the
// rebalance that follows ends, without a panic.
func FuzzLoadGroupRecord(f *testing.F) {
	f.Add(groupRecord{state: Stable, generation: 3, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "a",
		members: []memberRecord{{id: "a", instanceID: "i", rebalanceMs: 1, sessionMs: 2, assignment: []byte("x")}, {id: "b", sessionMs: 7000}}}.encode())
	f.Add(groupRecord{state: CompletingRebalance, generation: 3, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "a",
		members: []memberRecord{{id: "a", sessionMs: 2}}}.encode())
	f.Add(groupRecord{generation: 3, protocolType: "consumer", emptyMs: 5}.encodeV1())
	// Only static members, rebalancing with a 2 ms rebalance timeout:
	// it once re-armed its join every 2 ms until a session ran out.
	f.Add(groupRecord{state: CompletingRebalance, generation: 1, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "a",
		members: []memberRecord{{id: "a", instanceID: "i1", rebalanceMs: 2, sessionMs: 1 << 40}}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeGroupRecord(b)
		if err != nil {
			return
		}
		e := newEnv(t, Config{})
		now := e.clk.Now()
		e.c.lock()
		e.c.loadGroup("g", r, now)
		e.c.startLoaded(e.c.groups["g"])
		e.c.unlock()
		d := e.c.Describe([]string{"g"})[0]
		if d.Generation != r.generation || len(d.Members) != len(r.members) {
			t.Fatalf("loaded %+v from %+v", d, r)
		}
		for _, m := range r.members {
			e.c.Heartbeat("g", m.id, m.instanceID, r.generation)
			e.sync(SyncRequest{Group: "g", MemberID: m.id, InstanceID: m.instanceID, Generation: r.generation})
		}
		e.clk.Advance(maxRebalanceTimeout)
		e.clk.Advance(maxRebalanceTimeout)
		e.settle()
		// Every session has expired, the rebalance ended, and the
		// retention scan may have removed the Empty group.
		if st := e.state("g"); st != Empty && st != Dead {
			t.Fatalf("state %v a year on", st)
		}
	})
}

// TestRebalanceWithOnlyStaticMembersLeftDoesNotSpin: a loaded group
// rebalancing again whose only members are static ones that never
// rejoin, with a rebalance timeout of 2 ms (any record may carry one),
// waits for them at least the minimum session timeout at a time, and
// their sessions (clamped to the configured bounds) end the rebalance:
// a bounded number of timers, not one every 2 ms until a 30-minute
// session runs out.
func TestRebalanceWithOnlyStaticMembersLeftDoesNotSpin(t *testing.T) {
	e := newEnv(t, Config{})
	r := groupRecord{state: CompletingRebalance, generation: 3, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "a",
		members: []memberRecord{
			{id: "a", instanceID: "i1", rebalanceMs: 2, sessionMs: 2},
			{id: "b", instanceID: "i2", rebalanceMs: 2, sessionMs: int64(time.Hour / time.Millisecond)},
		}}
	e.c.lock()
	e.c.loadGroup("g", r, e.clk.Now())
	e.c.startLoaded(e.c.groups["g"])
	for _, m := range e.c.groups["g"].members {
		if m.session < DefaultMinSessionTimeout || m.session > DefaultMaxSessionTimeout {
			t.Fatalf("loaded session %v not clamped to [%v, %v]", m.session, DefaultMinSessionTimeout, DefaultMaxSessionTimeout)
		}
	}
	e.c.unlock()
	e.clk.Advance(2 * DefaultMaxSessionTimeout)
	e.settle()
	if st := e.state("g"); st != Empty && st != Dead {
		t.Fatalf("state %v after every session ran out", st)
	}
	// At most one wait per minimum session timeout over the longest
	// session, plus the sessions' and the retention scan's timers.
	if limit := int(DefaultMaxSessionTimeout/DefaultMinSessionTimeout) + 50; e.clk.fired > limit {
		t.Fatalf("%d timers fired, want at most %d", e.clk.fired, limit)
	}
}
