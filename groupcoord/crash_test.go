package groupcoord

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestGroupsFileCrashAtEveryCut: a crash leaves groups.db cut anywhere
// after its last sync point. A workload of groups (members joining and
// syncing, a static member, commits of members and of a consumer
// outside the group protocol, a member leaving, a group deleted)
// records the file at each of its sync points (each write answered);
// then the file is cut at every byte between two of them. Every cut
// reads (Read, as `logstore groups --dir` does) as the sync point at or
// before it, offsets and members together, never a mix of two, and
// opens: the coordinator loads the same groups, in the recorded state,
// generation and members.
func TestGroupsFileCrashAtEveryCut(t *testing.T) {
	e := newEnv(t, Config{})
	path := filepath.Join(e.dir, FileName)
	var points [][]byte
	point := func() {
		t.Helper()
		e.settle()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		points = append(points, b)
	}
	tp := func(p int32) TopicPartition { return TopicPartition{Topic: "t", Partition: p} }
	point() // the file as Open made it

	// Every step below writes one record (or one batch): a point after
	// each, so that no cut can fall between two writes of a step.
	id1, j1 := e.newMember("a")
	id2, j2 := e.newMember("a")
	e.clk.Advance(2 * testDelay) // the join phase ends: its record
	r1, r2 := ready(t, j1), ready(t, j2)
	point()
	leader, follower := id1, id2
	if r1.Leader != id1 {
		leader, follower = id2, id1
	}
	gen := r1.Generation
	s1 := e.sync(SyncRequest{Group: "a", MemberID: leader, Generation: gen, Assignments: map[string][]byte{id1: []byte("one"), id2: []byte("two")}})
	s2 := e.sync(SyncRequest{Group: "a", MemberID: follower, Generation: r2.Generation})
	if ready(t, s1).Code != None || ready(t, s2).Code != None {
		t.Fatal("sync")
	}
	point()
	for i := range 3 {
		codes := e.commit(CommitRequest{Group: "a", MemberID: []string{id1, id2}[i%2], Generation: gen,
			Offsets: []OffsetCommit{{TopicPartition: tp(0), Offset: int64(10 * i)}, {TopicPartition: tp(1), Offset: int64(10*i + 1), Metadata: "m"}}})
		if codes[0] != None {
			t.Fatal(codes)
		}
		point()
	}
	req := joinReq("s", "")
	req.InstanceID = "i1"
	ch := e.join(req)
	e.clk.Advance(testDelay)
	r := ready(t, ch)
	point()
	ready(t, e.sync(SyncRequest{Group: "s", MemberID: r.MemberID, InstanceID: "i1", Generation: r.Generation, Assignments: map[string][]byte{r.MemberID: []byte("static")}}))
	point()
	if codes := e.commit(CommitRequest{Group: "free", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: tp(2), Offset: 7}}}); codes[0] != None {
		t.Fatal(codes)
	}
	point()
	if top, _ := e.c.Leave("a", []LeaveMember{{MemberID: follower}}); top != None {
		t.Fatal(top)
	}
	// The leave starts a rebalance, recorded when its join phase ends:
	// the one left rejoins alone, which ends it (every member joined):
	// a new generation of one member.
	jr := ready(t, e.join(joinReq("a", leader)))
	point()
	ready(t, e.sync(SyncRequest{Group: "a", MemberID: leader, Generation: jr.Generation, Assignments: map[string][]byte{leader: []byte("all")}}))
	point()
	ok := make(chan []Code, 1)
	e.c.DeleteGroups([]string{"free"}, func(c []Code) { ok <- c })
	if c := <-ok; c[0] != None {
		t.Fatal(c)
	}
	point()

	read := func(b []byte) ([]GroupInfo, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return Read(dir, 0)
	}
	views := make([][]GroupInfo, len(points))
	for i, b := range points {
		v, err := read(b)
		if err != nil {
			t.Fatalf("sync point %d: %v", i, err)
		}
		if i > 0 && reflect.DeepEqual(v, views[i-1]) {
			t.Fatalf("sync point %d reads as the one before it: the workload wrote nothing there", i)
		}
		views[i] = v
	}
	cuts := 0
	for i := 1; i < len(points); i++ {
		prev, next := points[i-1], points[i]
		if string(next[:len(prev)]) != string(prev) {
			t.Fatalf("sync point %d does not extend %d: the file was rewritten", i, i-1)
		}
		for cut := len(prev); cut < len(next); cut++ {
			cuts++
			got, err := read(next[:cut])
			if err != nil {
				t.Fatalf("cut at byte %d (between sync points %d and %d): %v", cut, i-1, i, err)
			}
			if !reflect.DeepEqual(got, views[i-1]) {
				t.Fatalf("cut at byte %d reads\n%+v\nwant sync point %d's\n%+v", cut, got, i-1, views[i-1])
			}
			if cut%7 == 0 || cut == len(next)-1 {
				checkOpens(t, next[:cut], views[i-1])
			}
		}
	}
	checkOpens(t, points[len(points)-1], views[len(views)-1])
	t.Logf("%d sync points, %d cuts, a %d-byte file", len(points), cuts, len(points[len(points)-1]))
}

// checkOpens opens a coordinator over the groups.db b and checks that
// it describes the groups of want as recorded.
func checkOpens(t *testing.T, b []byte, want []GroupInfo) {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newFakeClock()}
	if err := os.WriteFile(filepath.Join(e.dir, FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg = Config{Clock: e.clk, InitialRebalanceDelay: testDelay, Logger: slog.New(slog.DiscardHandler)}
	e.open()
	defer e.c.Close()
	for _, g := range want {
		d := e.c.Describe([]string{g.Group})[0]
		if g.State == CompletingRebalance {
			// Loaded rebalancing again (see loadGroup).
			g.State = PreparingRebalance
		}
		if d.State != g.State || d.Generation != g.Generation || len(d.Members) != len(g.Members) {
			t.Fatalf("opened %d bytes: group %s described %+v, recorded %+v", len(b), g.Group, d, g)
		}
		for i, m := range g.Members {
			if d.Members[i].MemberID != m.MemberID || d.Members[i].InstanceID != m.InstanceID {
				t.Fatalf("opened %d bytes: group %s member %d: %+v, recorded %+v", len(b), g.Group, i, d.Members[i], m)
			}
		}
	}
	if n := len(e.c.List(nil)); n != len(want) {
		t.Fatalf("opened %d bytes: %d groups, recorded %d", len(b), n, len(want))
	}
}
