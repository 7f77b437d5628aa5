package groupcoord

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/logstore/logstore/internal/metalog"
)

// Defaults of Config, Kafka's.
const (
	DefaultInitialRebalanceDelay  = 3 * time.Second      // group.initial.rebalance.delay.ms
	DefaultOffsetsRetention       = 7 * 24 * time.Hour   // offsets.retention.minutes
	DefaultRetentionCheckInterval = 10 * time.Minute     // offsets.retention.check.interval.ms
	DefaultMinSessionTimeout      = 6 * time.Second      // group.min.session.timeout.ms
	DefaultMaxSessionTimeout      = 30 * time.Minute     // group.max.session.timeout.ms
	maxMetadataBytes              = 4096                 // offset.metadata.max.bytes
	consumerProtocolType          = "consumer"           // ConsumerProtocol.PROTOCOL_TYPE
	unknownGeneration             = -1                   // OffsetCommit's generation of a simple consumer
	maxRebalanceTimeout           = 365 * 24 * time.Hour // bound of a timer from a client's number
)

// Config configures a Coordinator. The zero value has Kafka's defaults.
type Config struct {
	// Clock is the time; nil is the real one.
	Clock Clock
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an Empty group waits for more members
	// (extended by each new member up to the rebalance timeout). 0 is
	// DefaultInitialRebalanceDelay; negative is no delay.
	InitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes; 0 is
	// DefaultOffsetsRetention.
	OffsetsRetention time.Duration
	// RetentionCheckInterval is how often expired offsets are removed;
	// 0 is DefaultRetentionCheckInterval.
	RetentionCheckInterval time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (INVALID_SESSION_TIMEOUT outside); 0 is the default.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// SubscribedTopics decodes a member's metadata of the chosen
	// protocol into the topics it subscribes to (used for groups of
	// protocol type "consumer": OffsetDelete refuses those topics, and
	// a Stable group's offsets of other topics expire). ok false: it
	// does not decode. nil: topics are unknown.
	SubscribedTopics func(protocol string, metadata []byte) (topics []string, ok bool)
	// OnRebalance is called when a group starts a rebalance (the
	// metrics); it must not call the coordinator.
	OnRebalance func(group string)
	// OnCommit is called with the number of offsets each OffsetCommit
	// made durable.
	OnCommit func(offsets int)
	// Logger; nil is slog.Default().
	Logger *slog.Logger
}

// Coordinator is the group coordinator of one store: the groups in
// memory, their committed offsets in memory and in DIR/groups.db. Safe
// for concurrent use. Methods that answer later (Join, Sync, Commit,
// DeleteGroups, DeleteOffsets) call their callback exactly once, from
// another goroutine or before they return, never holding a lock of the
// coordinator.
type Coordinator struct {
	cfg  Config
	clk  Clock
	log  *slog.Logger
	path string
	lf   *metalog.Log
	com  *committer

	mu     sync.Mutex
	groups map[string]*group
	// out holds the callbacks to run once mu is released.
	out    []func()
	token  uint64
	closed bool
	scan   Timer
}

type member struct {
	id, instanceID       string
	clientID, clientHost string
	session, rebalance   time.Duration
	protocolType         string
	protocols            []Protocol
	assignment           []byte
	joinCb               func(JoinResponse)
	syncCb               func(SyncResponse)
	// hb is the token of the member's session timer.
	hb uint64
}

type group struct {
	id           string
	state        State
	stateTime    time.Time
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      []*member // in join order
	static       map[string]string
	pending      map[string]uint64 // member id -> expiry timer token
	// join is the token of the running join timer (PreparingRebalance).
	join        uint64
	initialJoin bool
	// storingGen is the generation whose assignment (the leader's
	// SyncGroup) is being written, 0 when none is.
	storingGen     int32
	newMemberAdded bool
	remaining      time.Duration
	subscribed     map[string]bool // nil: unknown
	offsets        map[TopicPartition]offsetRecord
	// txnOffsets are the offsets of transactions not ended yet, by
	// producer id (TxnOffsetCommit).
	txnOffsets map[int64]map[TopicPartition]offsetRecord
}

// Open opens (creating it if absent) DIR/groups.db and loads every group
// and committed offset. A group stored Stable comes back Stable, with
// its members, generation, leader, protocol and assignments, each
// member's session timer started afresh; see loadGroup for the others.
// A damaged file is an error matching ErrDamaged.
func Open(dir string, cfg Config) (*Coordinator, error) {
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	switch {
	case cfg.InitialRebalanceDelay == 0:
		cfg.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	case cfg.InitialRebalanceDelay < 0:
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = DefaultOffsetsRetention
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	path := filepath.Join(dir, FileName)
	lf, l, err := openFile(path, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("groupcoord: open %s: %w", path, err)
	}
	c := &Coordinator{cfg: cfg, clk: cfg.Clock, log: cfg.Logger, path: path, lf: lf, groups: map[string]*group{}}
	now := c.clk.Now()
	for id, r := range l.groups {
		c.loadGroup(id, r, now)
	}
	for id, offs := range l.offsets {
		g := c.groups[id]
		if g == nil {
			g = c.newGroup(id)
		}
		g.offsets = offs
	}
	for id, byPID := range l.pending {
		g := c.groups[id]
		if g == nil {
			g = c.newGroup(id)
		}
		g.txnOffsets = byPID
	}
	c.com = newCommitter(lf, c.log)
	c.lock()
	for _, g := range c.groups {
		c.startLoaded(g)
	}
	c.unlock()
	c.scheduleScan()
	return c, nil
}

// loadGroup makes the group of record r, as Kafka's loadGroup does: an
// Empty record is an Empty group; a Stable one is a Stable group with
// its members, generation, protocol, leader and assignments. A record
// of CompletingRebalance (the join phase ended, the leader's assignment
// not stored) is a group with those members rebalancing again: Kafka
// keeps no such record and would load the Stable one before it, whose
// SyncGroups and Heartbeats of the unstored generation fail, so that
// its members rejoin; here they are told REBALANCE_IN_PROGRESS and
// rejoin with their member ids.
func (c *Coordinator) loadGroup(id string, r groupRecord, now time.Time) {
	g := c.newGroup(id)
	g.generation, g.protocolType = r.generation, r.protocolType
	g.stateTime = now
	if r.state == Empty || len(r.members) == 0 {
		if r.emptyMs >= 0 {
			g.stateTime = time.UnixMilli(r.emptyMs)
		}
		return
	}
	g.protocol, g.leader = r.protocol, r.leader
	for _, mr := range r.members {
		m := &member{
			id: mr.id, instanceID: mr.instanceID, clientID: mr.clientID, clientHost: mr.clientHost,
			session:      min(max(time.Duration(mr.sessionMs)*time.Millisecond, c.cfg.MinSessionTimeout), c.cfg.MaxSessionTimeout),
			rebalance:    min(time.Duration(mr.rebalanceMs)*time.Millisecond, maxRebalanceTimeout),
			protocolType: r.protocolType,
			protocols:    []Protocol{{Name: r.protocol, Metadata: mr.metadata}},
		}
		if r.state == Stable {
			m.assignment = mr.assignment
		}
		g.members = append(g.members, m)
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	g.subscribed = c.subscribedTopics(g)
	if r.state == Stable {
		g.state = Stable
	} else {
		g.state = PreparingRebalance
	}
}

// startLoaded starts the timers of a group Open loaded: each member's
// session afresh (a live member goes on heartbeating, a dead one
// expires as usual), and the join timer of a group rebalancing again.
func (c *Coordinator) startLoaded(g *group) {
	for _, m := range g.members {
		c.heartbeat(g, m)
	}
	if g.state == PreparingRebalance {
		if c.cfg.OnRebalance != nil {
			c.cfg.OnRebalance(g.id)
		}
		c.scheduleJoin(g, g.rebalanceTimeout())
	}
}

func (c *Coordinator) newGroup(id string) *group {
	g := &group{id: id, state: Empty, stateTime: c.clk.Now(), static: map[string]string{}, pending: map[string]uint64{}, offsets: map[TopicPartition]offsetRecord{}, txnOffsets: map[int64]map[TopicPartition]offsetRecord{}}
	c.groups[id] = g
	return g
}

// Close answers the JoinGroups and SyncGroups still waiting with
// NOT_COORDINATOR, stops the timers, commits what is queued and closes
// groups.db.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.scan != nil {
		c.scan.Stop()
	}
	for _, g := range c.groups {
		for _, m := range g.members {
			c.answerJoin(m, JoinResponse{Code: NotCoordinator, MemberID: m.id})
			c.answerSync(m, SyncResponse{Code: NotCoordinator})
		}
	}
	out := c.takeOut()
	c.mu.Unlock()
	run(out)
	c.com.close()
	return c.lf.Close()
}

// lock and unlock: unlock runs the callbacks queued while locked.
func (c *Coordinator) lock() { c.mu.Lock() }

func (c *Coordinator) unlock() {
	out := c.takeOut()
	c.mu.Unlock()
	run(out)
}

func (c *Coordinator) takeOut() []func() {
	out := c.out
	c.out = nil
	return out
}

func run(fns []func()) {
	for _, f := range fns {
		f()
	}
}

func (c *Coordinator) later(f func()) { c.out = append(c.out, f) }

// after runs f under the lock after d, unless the coordinator is closed
// or the returned token is superseded (check it in f).
func (c *Coordinator) after(d time.Duration, f func()) uint64 {
	c.token++
	tok := c.token
	c.clk.AfterFunc(d, func() {
		c.lock()
		defer c.unlock()
		if c.closed {
			return
		}
		f()
	})
	return tok
}

func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s-%s", prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

func (g *group) member(id string) *member {
	for _, m := range g.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (g *group) isLeader(id string) bool { return g.leader != "" && g.leader == id }

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinCb == nil {
			return false
		}
	}
	return true
}

// candidates are the protocols every member supports, in the order of
// the first member's preference.
func (g *group) candidates() []string {
	if len(g.members) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[0].protocols {
		all := true
		for _, m := range g.members[1:] {
			if !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all && !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	return out
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

// supports is Kafka's supportsProtocols: an Empty group takes any
// protocol type and non-empty list; otherwise the type must match and
// one of the protocols must be supported by every member.
func (g *group) supports(ptype string, ps []Protocol) bool {
	if g.state == Empty || len(g.members) == 0 {
		return ptype != "" && len(ps) > 0
	}
	if ptype != g.protocolType {
		return false
	}
	cands := g.candidates()
	for _, p := range ps {
		if slices.Contains(cands, p.Name) {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's: each member votes for the first protocol
// of its preference list that every member supports; the most votes
// win (ties: the first candidate in the first member's order).
func (g *group) selectProtocol() string {
	cands := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(cands, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, n := "", -1
	for _, cand := range cands {
		if votes[cand] > n {
			best, n = cand, votes[cand]
		}
	}
	return best
}

func (c *Coordinator) transition(g *group, s State) {
	g.state = s
	g.stateTime = c.clk.Now()
}

// persistGroup queues g's record, as it is, not waited for. It is
// written when the join phase ends (Empty, or CompletingRebalance with
// the members and no assignment: the generation only goes up across
// restarts) and when a static member takes over its instance in a
// Stable group (the new member id). Losing the last one to a crash
// loses no offset: the previous record comes back (see Open). The
// Stable record of the leader's SyncGroup is waited for (see Sync).
func (c *Coordinator) persistGroup(g *group) {
	c.com.push(&item{ops: []op{c.groupOp(c.snapshot(g, g.state, nil))}})
}

func (c *Coordinator) groupOp(r groupRecord) op {
	return op{kind: opPutGroup, key: []byte(r.groupID), val: r.encode()}
}

// snapshot is g's record in state: the members with their metadata of
// the chosen protocol and, for Stable, their assignment (from assign
// when it is not nil, else the members').
func (c *Coordinator) snapshot(g *group, state State, assign map[string][]byte) groupRecord {
	r := groupRecord{groupID: g.id, state: state, generation: g.generation, protocolType: g.protocolType, emptyMs: -1}
	if state == Empty {
		r.emptyMs = g.stateTime.UnixMilli()
		return r
	}
	r.protocol, r.leader = g.protocol, g.leader
	for _, m := range g.members {
		mr := memberRecord{
			id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceMs: m.rebalance.Milliseconds(), sessionMs: m.session.Milliseconds(),
			metadata: m.metadata(g.protocol),
		}
		if state == Stable {
			mr.assignment = m.assignment
			if assign != nil {
				mr.assignment = assign[m.id]
			}
		}
		r.members = append(r.members, mr)
	}
	return r
}

func (c *Coordinator) answerJoin(m *member, r JoinResponse) {
	if cb := m.joinCb; cb != nil {
		m.joinCb = nil
		c.later(func() { cb(r) })
	}
}

func (c *Coordinator) answerSync(m *member, r SyncResponse) {
	if cb := m.syncCb; cb != nil {
		m.syncCb = nil
		c.later(func() { cb(r) })
	}
}

// heartbeat (re)starts m's session timer: m is removed when it fires,
// unless m waits in a JoinGroup or SyncGroup then (the timer starts
// again).
func (c *Coordinator) heartbeat(g *group, m *member) {
	var tok uint64
	tok = c.after(m.session, func() {
		if m.hb != tok || g.member(m.id) != m || c.groups[g.id] != g {
			return
		}
		if m.joinCb != nil || m.syncCb != nil {
			// Kept alive while it waits for an answer; its session
			// counts again from now (an answer restarts it anyway).
			c.heartbeat(g, m)
			return
		}
		c.log.Info("group member's session expired", "group", g.id, "member", m.id, "session_timeout", m.session)
		c.removeMember(g, m, "session timeout")
	})
	m.hb = tok
}

// Join handles a JoinGroup; done is called with the answer, at once or
// when the rebalance completes.
func (c *Coordinator) Join(req JoinRequest, done func(JoinResponse)) {
	c.lock()
	defer c.unlock()
	fail := func(code Code) {
		r := JoinResponse{Code: code, MemberID: req.MemberID, Generation: -1}
		c.later(func() { done(r) })
	}
	if c.closed {
		fail(NotCoordinator)
		return
	}
	if req.Group == "" || len(req.Group) > maxGroupIDBytes {
		fail(InvalidGroupID)
		return
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		fail(InvalidSessionTimeout)
		return
	}
	req.RebalanceTimeout = min(max(req.RebalanceTimeout, 0), maxRebalanceTimeout)
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			fail(UnknownMemberID)
			return
		}
		g = c.newGroup(req.Group)
	}
	if g.state == Dead {
		fail(CoordinatorNotAvailable)
		return
	}
	if len(req.ProtocolType) > maxGroupIDBytes || !g.supports(req.ProtocolType, req.Protocols) {
		fail(InconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		c.joinNew(g, req, done)
	} else {
		c.joinCurrent(g, req, done, fail)
	}
}

func (c *Coordinator) joinNew(g *group, req JoinRequest, done func(JoinResponse)) {
	if req.InstanceID != "" {
		id := newMemberID(req.InstanceID)
		if old, ok := g.static[req.InstanceID]; ok {
			c.replaceStatic(g, g.member(old), id, req, done)
		} else {
			c.addMember(g, id, req, done)
		}
		return
	}
	id := newMemberID(req.ClientID)
	if req.Version >= 4 {
		// KIP-394: the member must come back with this id; it counts as
		// not joined until then, for at most its session timeout.
		var tok uint64
		tok = c.after(req.SessionTimeout, func() {
			if g.pending[id] != tok {
				return
			}
			delete(g.pending, id)
			c.tryCompleteJoin(g)
		})
		g.pending[id] = tok
		r := JoinResponse{Code: MemberIDRequired, MemberID: id, Generation: -1}
		c.later(func() { done(r) })
		return
	}
	c.addMember(g, id, req, done)
}

func (c *Coordinator) joinCurrent(g *group, req JoinRequest, done func(JoinResponse), fail func(Code)) {
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		c.addMember(g, req.MemberID, req, done)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != None {
		fail(code)
		return
	}
	m := g.member(req.MemberID)
	switch g.state {
	case PreparingRebalance:
		c.updateMember(g, m, req, done)
	case CompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// The answer was likely lost: send it again.
			c.later(func() { done(c.joinAnswer(g, m)) })
			return
		}
		c.updateMember(g, m, req, done)
	case Stable:
		if g.isLeader(m.id) || !sameProtocols(m.protocols, req.Protocols) {
			c.updateMember(g, m, req, done)
			return
		}
		r := c.joinAnswer(g, m)
		c.heartbeat(g, m)
		c.later(func() { done(r) })
	default:
		fail(UnknownMemberID)
	}
}

// validateMember is Kafka's validateCurrentMember: an instance id must
// map to memberID, and memberID must be a member.
func (g *group) validateMember(memberID, instanceID string) Code {
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		if !ok {
			return UnknownMemberID
		}
		if cur != memberID {
			return FencedInstanceID
		}
	}
	if g.member(memberID) == nil {
		return UnknownMemberID
	}
	return None
}

// joinAnswer is the answer of a join of m in the current generation:
// the member list for the leader.
func (c *Coordinator) joinAnswer(g *group, m *member) JoinResponse {
	r := JoinResponse{MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader}
	if g.isLeader(m.id) {
		r.Members = g.joinMembers()
	}
	return r
}

func (g *group) joinMembers() []JoinMember {
	ms := make([]JoinMember, 0, len(g.members))
	for _, o := range g.members {
		ms = append(ms, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
	}
	return ms
}

func (c *Coordinator) addMember(g *group, id string, req JoinRequest, done func(JoinResponse)) {
	m := &member{
		id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		session: req.SessionTimeout, rebalance: req.RebalanceTimeout,
		protocolType: req.ProtocolType, protocols: req.Protocols, joinCb: done,
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members = append(g.members, m)
	if g.leader == "" {
		g.leader = id
	}
	if m.instanceID != "" {
		g.static[m.instanceID] = id
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	c.maybePrepareRebalance(g, "member joined")
	c.tryCompleteJoin(g)
}

func (c *Coordinator) updateMember(g *group, m *member, req JoinRequest, done func(JoinResponse)) {
	m.protocols, m.session, m.rebalance = req.Protocols, req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	// A previous JoinGroup of m still waiting is dropped, as Kafka
	// drops it: its client gave up on it.
	m.joinCb = done
	c.maybePrepareRebalance(g, "member rejoined")
	c.tryCompleteJoin(g)
}

// replaceStatic is KIP-345: a static member rejoining without its
// member id takes over its instance's member, fencing the old id. A
// Stable group whose chosen protocol stays is not rebalanced: the
// member gets the current generation and keeps its assignment.
func (c *Coordinator) replaceStatic(g *group, old *member, id string, req JoinRequest, done func(JoinResponse)) {
	oldLeader := g.leader
	c.answerJoin(old, JoinResponse{Code: FencedInstanceID, MemberID: old.id, Generation: -1})
	c.answerSync(old, SyncResponse{Code: FencedInstanceID})
	oldID := old.id
	old.id = id
	old.hb = 0
	old.clientID, old.clientHost = req.ClientID, req.ClientHost
	g.static[req.InstanceID] = id
	if g.leader == oldID {
		g.leader = id
	}
	switch g.state {
	case Stable:
		oldProtocols, oldSession, oldRebalance := old.protocols, old.session, old.rebalance
		old.protocols, old.session, old.rebalance = req.Protocols, req.SessionTimeout, req.RebalanceTimeout
		if g.selectProtocol() != g.protocol {
			old.protocols, old.session, old.rebalance = oldProtocols, oldSession, oldRebalance
			c.updateMember(g, old, req, done)
			return
		}
		r := JoinResponse{MemberID: id, Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, Leader: oldLeader}
		if req.Version >= 9 {
			r.Leader = g.leader
			if g.isLeader(id) {
				r.SkipAssignment = true
				r.Members = g.joinMembers()
			}
		}
		c.heartbeat(g, old)
		c.persistGroup(g)
		c.later(func() { done(r) })
	default:
		c.updateMember(g, old, req, done)
	}
}

func (c *Coordinator) maybePrepareRebalance(g *group, reason string) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		c.prepareRebalance(g, reason)
	}
}

func (c *Coordinator) prepareRebalance(g *group, reason string) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			c.answerSync(m, SyncResponse{Code: RebalanceInProgress})
		}
	}
	initial := g.state == Empty
	c.transition(g, PreparingRebalance)
	if c.cfg.OnRebalance != nil {
		c.cfg.OnRebalance(g.id)
	}
	c.log.Debug("group rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	if initial && c.cfg.InitialRebalanceDelay > 0 {
		g.initialJoin = true
		g.newMemberAdded = false
		delay := c.cfg.InitialRebalanceDelay
		g.remaining = max(g.rebalanceTimeout()-delay, 0)
		c.scheduleInitialJoin(g, delay)
		return
	}
	g.initialJoin = false
	c.scheduleJoin(g, g.rebalanceTimeout())
	c.tryCompleteJoin(g)
}

func (c *Coordinator) scheduleInitialJoin(g *group, delay time.Duration) {
	var tok uint64
	tok = c.after(delay, func() {
		if g.join != tok || g.state != PreparingRebalance {
			return
		}
		if g.newMemberAdded && g.remaining > 0 {
			g.newMemberAdded = false
			d := min(delay, g.remaining)
			g.remaining -= d
			c.scheduleInitialJoin(g, d)
			return
		}
		c.completeJoin(g)
	})
	g.join = tok
}

// scheduleJoin ends the join phase after d unless it ends sooner.
func (c *Coordinator) scheduleJoin(g *group, d time.Duration) {
	var tok uint64
	tok = c.after(d, func() {
		if g.join != tok || g.state != PreparingRebalance {
			return
		}
		c.completeJoin(g)
	})
	g.join = tok
}

// tryCompleteJoin completes a rebalance once every member has joined
// (not during the initial delay, which only its timer ends).
func (c *Coordinator) tryCompleteJoin(g *group) {
	if g.state == PreparingRebalance && !g.initialJoin && g.allJoined() {
		c.completeJoin(g)
	}
}

// completeJoin ends PreparingRebalance: dynamic members that did not
// rejoin are removed, a leader among the joined is chosen, the next
// generation starts and every joined member is answered.
func (c *Coordinator) completeJoin(g *group) {
	g.join = 0
	g.initialJoin = false
	for _, m := range slices.Clone(g.members) {
		if m.joinCb == nil && m.instanceID == "" {
			c.log.Info("group member removed: it did not rejoin within the rebalance timeout", "group", g.id, "member", m.id)
			c.dropMember(g, m)
		}
	}
	if !c.electJoinedLeader(g) && len(g.members) > 0 {
		// Only static members that have not rejoined: wait for them
		// again, their sessions expiring them meanwhile. The wait is at
		// least the shortest session a member may have, so that a tiny
		// rebalance timeout (a loaded record may carry one) re-arms a
		// bounded number of times before the sessions end it.
		c.scheduleJoin(g, max(g.rebalanceTimeout(), c.cfg.MinSessionTimeout))
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader, g.subscribed = "", "", nil
		c.transition(g, Empty)
		c.persistGroup(g)
		return
	}
	g.protocol = g.selectProtocol()
	g.subscribed = c.subscribedTopics(g)
	c.transition(g, CompletingRebalance)
	c.persistGroup(g)
	for _, m := range g.members {
		if m.joinCb != nil {
			c.answerJoin(m, c.joinAnswer(g, m))
		}
		c.heartbeat(g, m)
	}
}

func (c *Coordinator) electJoinedLeader(g *group) bool {
	if g.leader == "" {
		return false
	}
	if l := g.member(g.leader); l != nil && l.joinCb != nil {
		return true
	}
	for _, m := range g.members {
		if m.joinCb != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (c *Coordinator) subscribedTopics(g *group) map[string]bool {
	if g.protocolType != consumerProtocolType || c.cfg.SubscribedTopics == nil {
		return nil
	}
	set := map[string]bool{}
	for _, m := range g.members {
		ts, ok := c.cfg.SubscribedTopics(g.protocol, m.metadata(g.protocol))
		if !ok {
			return nil
		}
		for _, t := range ts {
			set[t] = true
		}
	}
	return set
}

// dropMember takes m out of g, answering what it waits for with
// UNKNOWN_MEMBER_ID; it does not touch the group's state.
func (c *Coordinator) dropMember(g *group, m *member) {
	c.answerJoin(m, JoinResponse{Code: UnknownMemberID, MemberID: m.id, Generation: -1})
	c.answerSync(m, SyncResponse{Code: UnknownMemberID})
	m.hb = 0
	g.members = slices.DeleteFunc(g.members, func(o *member) bool { return o == m })
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
}

// removeMember is Kafka's removeMemberAndUpdateGroup.
func (c *Coordinator) removeMember(g *group, m *member, reason string) {
	c.dropMember(g, m)
	switch g.state {
	case Stable, CompletingRebalance:
		c.maybePrepareRebalance(g, reason)
	case PreparingRebalance:
		c.tryCompleteJoin(g)
	}
}

// Sync handles a SyncGroup; done is called with the answer, at once or
// when the leader's assignment arrives.
func (c *Coordinator) Sync(req SyncRequest, done func(SyncResponse)) {
	c.lock()
	defer c.unlock()
	fail := func(code Code) {
		r := SyncResponse{Code: code}
		c.later(func() { done(r) })
	}
	if c.closed {
		fail(NotCoordinator)
		return
	}
	g := c.groups[req.Group]
	switch {
	case req.Group == "":
		fail(InvalidGroupID)
		return
	case g == nil:
		fail(UnknownMemberID)
		return
	case g.state == Dead:
		fail(CoordinatorNotAvailable)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != None {
		fail(code)
		return
	}
	if req.Generation != g.generation {
		fail(IllegalGeneration)
		return
	}
	if (req.ProtocolType != "" && req.ProtocolType != g.protocolType) || (req.Protocol != "" && req.Protocol != g.protocol) {
		fail(InconsistentGroupProtocol)
		return
	}
	m := g.member(req.MemberID)
	switch g.state {
	case Empty:
		fail(UnknownMemberID)
	case PreparingRebalance:
		fail(RebalanceInProgress)
	case CompletingRebalance:
		if m.syncCb != nil {
			// A SyncGroup of m again while one waits (the leader's while
			// its assignment is written): the older one is superseded,
			// answered so that every callback is called once.
			c.answerSync(m, SyncResponse{Code: RebalanceInProgress})
		}
		m.syncCb = done
		if !g.isLeader(m.id) {
			return
		}
		if g.storingGen == g.generation {
			// The leader's SyncGroup again while its assignment is
			// being written: answered with the others when it is.
			return
		}
		// Kafka's: the group becomes Stable, and the SyncGroups are
		// answered, once its record with the assignment is durable.
		assign := make(map[string][]byte, len(g.members))
		for _, o := range g.members {
			assign[o.id] = req.Assignments[o.id]
		}
		gen := g.generation
		g.storingGen = gen
		c.com.push(&item{ops: []op{c.groupOp(c.snapshot(g, Stable, assign))}, apply: func(err error) {
			c.lock()
			defer c.unlock()
			if g.storingGen == gen {
				g.storingGen = 0
			}
			if c.groups[g.id] != g || g.generation != gen {
				return
			}
			if c.closed || g.state != CompletingRebalance {
				return
			}
			if err != nil {
				c.log.Error("group assignment not stored: rebalancing again", "group", g.id, "generation", gen, "err", err)
				c.prepareRebalance(g, "assignment not stored")
				return
			}
			for _, o := range g.members {
				o.assignment = assign[o.id]
			}
			c.transition(g, Stable)
			for _, o := range g.members {
				if o.syncCb != nil {
					c.answerSync(o, SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: o.assignment})
					c.heartbeat(g, o)
				}
			}
		}})
	case Stable:
		r := SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
		c.heartbeat(g, m)
		c.later(func() { done(r) })
	}
}

// Heartbeat handles a Heartbeat.
func (c *Coordinator) Heartbeat(group, memberID, instanceID string, generation int32) Code {
	c.lock()
	defer c.unlock()
	if c.closed {
		return NotCoordinator
	}
	g := c.groups[group]
	switch {
	case group == "":
		return InvalidGroupID
	case g == nil:
		return UnknownMemberID
	case g.state == Dead:
		return CoordinatorNotAvailable
	}
	if code := g.validateMember(memberID, instanceID); code != None {
		return code
	}
	if generation != g.generation {
		return IllegalGeneration
	}
	m := g.member(memberID)
	switch g.state {
	case Empty:
		return UnknownMemberID
	case PreparingRebalance:
		c.heartbeat(g, m)
		return RebalanceInProgress
	default:
		c.heartbeat(g, m)
		return None
	}
}

// Leave handles a LeaveGroup: top is the group's error, codes one per
// member.
func (c *Coordinator) Leave(group string, members []LeaveMember) (top Code, codes []Code) {
	c.lock()
	defer c.unlock()
	codes = make([]Code, len(members))
	if c.closed {
		return NotCoordinator, codes
	}
	if group == "" {
		return InvalidGroupID, codes
	}
	g := c.groups[group]
	if g == nil {
		for i := range codes {
			codes[i] = UnknownMemberID
		}
		return None, codes
	}
	if g.state == Dead {
		return CoordinatorNotAvailable, codes
	}
	for i, lm := range members {
		id := lm.MemberID
		if lm.InstanceID != "" {
			cur, ok := g.static[lm.InstanceID]
			switch {
			case !ok:
				codes[i] = UnknownMemberID
				continue
			case id != "" && id != cur:
				codes[i] = FencedInstanceID
				continue
			}
			id = cur
		} else if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			c.tryCompleteJoin(g)
			continue
		}
		m := g.member(id)
		if m == nil {
			codes[i] = UnknownMemberID
			continue
		}
		c.removeMember(g, m, "member left")
	}
	return None, codes
}
