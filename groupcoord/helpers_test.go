package groupcoord

import (
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock advanced by hand: Advance fires the timers that
// fall due, in time order, in the caller's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// fired counts the timers fired, for tests that bound them.
	fired int
}

// maxFiresPerAdvance stops a test whose timers re-arm without end (a
// spinning coordinator) with a clear failure instead of a hang.
const maxFiresPerAdvance = 200_000

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the time by d, firing due timers one by one.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for n := 0; ; n++ {
		if n == maxFiresPerAdvance {
			panic("fakeClock: more than 200,000 timers fired in one Advance: something re-arms for ever")
		}
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *fakeTimer
		for i, t := range c.timers {
			if t.stopped {
				continue
			}
			if !t.at.After(end) {
				next = t
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
			}
			break
		}
		if next == nil {
			// drop stopped ones at the front
			c.timers = dropStopped(c.timers)
			c.now = end
			c.mu.Unlock()
			return
		}
		c.now = next.at
		next.stopped = true
		c.fired++
		c.mu.Unlock()
		next.f()
	}
}

func dropStopped(ts []*fakeTimer) []*fakeTimer {
	out := ts[:0]
	for _, t := range ts {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

type env struct {
	t   *testing.T
	dir string
	clk *fakeClock
	c   *Coordinator
	cfg Config
}

const (
	testSession   = 10 * time.Second
	testRebalance = 30 * time.Second
	testDelay     = 100 * time.Millisecond
)

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newFakeClock()}
	cfg.Clock = e.clk
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = testDelay
	}
	e.cfg = cfg
	e.open()
	t.Cleanup(func() { e.c.Close() })
	return e
}

func (e *env) open() {
	e.t.Helper()
	c, err := Open(e.dir, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
}

func (e *env) reopen() {
	e.t.Helper()
	if err := e.c.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func protos(names ...string) []Protocol {
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: []byte("meta-" + n)})
	}
	return ps
}

func joinReq(group, member string, ps ...string) JoinRequest {
	if len(ps) == 0 {
		ps = []string{"range"}
	}
	return JoinRequest{Group: group, MemberID: member, ClientID: "client", ClientHost: "/127.0.0.1",
		SessionTimeout: testSession, RebalanceTimeout: testRebalance, ProtocolType: "consumer", Protocols: protos(ps...), Version: 5}
}

// join sends req and returns the channel its answer arrives on.
func (e *env) join(req JoinRequest) chan JoinResponse {
	ch := make(chan JoinResponse, 1)
	e.c.Join(req, func(r JoinResponse) { ch <- r })
	return ch
}

// sync sends req and returns the channel its answer arrives on, once
// what it queued for groups.db (the leader's assignment) is applied.
func (e *env) sync(req SyncRequest) chan SyncResponse {
	ch := make(chan SyncResponse, 1)
	e.c.Sync(req, func(r SyncResponse) { ch <- r })
	e.settle()
	return ch
}

// settle waits until everything queued for groups.db so far is
// committed and applied (the committer keeps queue order).
func (e *env) settle() {
	e.t.Helper()
	done := make(chan struct{})
	e.c.com.push(&item{apply: func(error) { close(done) }})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		e.t.Fatal("groups.db commit not applied")
	}
}

// ready returns the answer on ch, which must be there already.
func ready[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("not answered yet")
		panic("unreachable")
	}
}

func waiting[T any](t *testing.T, ch chan T) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered early: %+v", r)
	default:
	}
}

// newMember joins group with a fresh member (KIP-394 round first) and
// returns its id; the join's answer channel is returned too.
func (e *env) newMember(group string, ps ...string) (string, chan JoinResponse) {
	e.t.Helper()
	r := ready(e.t, e.join(joinReq(group, "", ps...)))
	if r.Code != MemberIDRequired || r.MemberID == "" {
		e.t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", r)
	}
	return r.MemberID, e.join(joinReq(group, r.MemberID, ps...))
}

// stable makes a group of n members and syncs it; it returns the member
// ids (leader first) and the generation.
func (e *env) stable(group string, n int) ([]string, int32) {
	e.t.Helper()
	var ids []string
	var chs []chan JoinResponse
	for range n {
		id, ch := e.newMember(group)
		ids = append(ids, id)
		chs = append(chs, ch)
	}
	// The first delay, extended once for the members after the first.
	e.clk.Advance(2 * testDelay)
	var gen int32
	var leader string
	for i, ch := range chs {
		r := ready(e.t, ch)
		if r.Code != None {
			e.t.Fatalf("join of %s: %+v", ids[i], r)
		}
		gen, leader = r.Generation, r.Leader
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("assignment of " + id)
	}
	var syncs []chan SyncResponse
	for _, id := range ids {
		req := SyncRequest{Group: group, MemberID: id, Generation: gen}
		if id == leader {
			req.Assignments = assign
		}
		syncs = append(syncs, e.sync(req))
	}
	for i, ch := range syncs {
		r := ready(e.t, ch)
		if r.Code != None || string(r.Assignment) != "assignment of "+ids[i] {
			e.t.Fatalf("sync of %s: %+v", ids[i], r)
		}
	}
	// leader first
	for i, id := range ids {
		if id == leader {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	return ids, gen
}

func (e *env) commit(req CommitRequest) []Code {
	e.t.Helper()
	ch := make(chan []Code, 1)
	e.c.Commit(req, func(c []Code) { ch <- c })
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		e.t.Fatal("commit not answered")
		return nil
	}
}

func (e *env) state(group string) State {
	e.t.Helper()
	d := e.c.Describe([]string{group})
	return d[0].State
}
