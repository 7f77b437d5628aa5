package groupcoord

import (
	"slices"
	"strings"
	"time"
)

// answerAll sets every code to code and answers done with them once
// the coordinator's lock is released (c.later).
func (c *Coordinator) answerAll(codes []Code, code Code, done func([]Code)) {
	for i := range codes {
		codes[i] = code
	}
	c.later(func() { done(codes) })
}

// Commit handles an OffsetCommit: done gets one code per offset, once
// the offsets are durable in groups.db (or refused). Kafka's classic
// rules: a member commits with its member id and the current
// generation (during PreparingRebalance too; REBALANCE_IN_PROGRESS in
// CompletingRebalance); generation -1 with no member id is a consumer
// outside group management, accepted while the group is Empty (and a
// group it names that does not exist is created, Empty).
func (c *Coordinator) Commit(req CommitRequest, done func([]Code)) {
	c.lock()
	defer c.unlock()
	codes := make([]Code, len(req.Offsets))
	failAll := func(code Code) { c.answerAll(codes, code, done) }
	if c.closed {
		failAll(NotCoordinator)
		return
	}
	if req.Group == "" || len(req.Group) > maxGroupIDBytes {
		failAll(InvalidGroupID)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			failAll(IllegalGeneration)
			return
		}
		g = c.newGroup(req.Group)
	}
	if code := c.validateCommit(g, req.MemberID, req.InstanceID, req.Generation, false); code != None {
		failAll(code)
		return
	}
	switch g.state {
	case CompletingRebalance:
		failAll(RebalanceInProgress)
		return
	case Stable, PreparingRebalance:
		c.heartbeat(g, g.member(req.MemberID))
	}
	now := c.clk.Now()
	expire := int64(-1)
	if req.Retention > 0 {
		expire = now.Add(req.Retention).UnixMilli()
	}
	type put struct {
		tp TopicPartition
		r  offsetRecord
	}
	var puts []put
	var ops []op
	for i, o := range req.Offsets {
		if o.Topic == "" || len(o.Topic) > maxGroupIDBytes || o.Partition < 0 {
			codes[i] = UnknownTopicOrPartition
			continue
		}
		if len(o.Metadata) > maxMetadataBytes {
			codes[i] = OffsetMetadataTooLarge
			continue
		}
		r := offsetRecord{offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata, commitMs: now.UnixMilli(), expireMs: expire}
		if r.offset < -1 {
			r.offset = -1
		}
		puts = append(puts, put{o.TopicPartition, r})
		ops = append(ops, op{kind: opPutOffset, key: offsetKey(g.id, o.TopicPartition), val: r.encode()})
	}
	if len(ops) == 0 {
		c.later(func() { done(codes) })
		return
	}
	c.com.push(&item{ops: ops, apply: func(err error) {
		c.lock()
		if err != nil {
			c.log.Error("offset commit failed", "group", g.id, "err", err)
			for i := range codes {
				if codes[i] == None {
					codes[i] = NotCoordinator
				}
			}
		} else {
			for _, p := range puts {
				g.offsets[p.tp] = p.r
			}
			if c.cfg.OnCommit != nil {
				c.cfg.OnCommit(len(puts))
			}
		}
		c.later(func() { done(codes) })
		c.unlock()
	}})
}

// validateCommit is Kafka's validateOffsetCommit: a commit naming a
// generation or a member must come from a member of the current
// generation; one naming neither is taken only by an Empty group, or,
// transactional (TxnOffsetCommit), whatever the group's state.
func (c *Coordinator) validateCommit(g *group, memberID, instanceID string, generation int32, transactional bool) Code {
	switch {
	case g.state == Dead:
		return CoordinatorNotAvailable
	case generation >= 0 || memberID != "" || instanceID != "":
		if code := g.validateMember(memberID, instanceID); code != None {
			return code
		}
		if generation != g.generation {
			return IllegalGeneration
		}
	case g.state != Empty && !transactional:
		// Only members commit to a group that has members.
		return UnknownMemberID
	}
	return None
}

// Fetch handles an OffsetFetch: the committed offsets of group for tps,
// or for every partition it has offsets of when tps is nil, sorted by
// topic and partition. A partition without an offset answers -1.
//
// With requireStable, a partition with offsets pending in a transaction
// answers UNSTABLE_OFFSET_COMMIT (OffsetFetch v7+), as Kafka.
func (c *Coordinator) Fetch(group string, tps []TopicPartition, requireStable bool) ([]Offset, Code) {
	c.lock()
	defer c.unlock()
	if c.closed {
		return nil, NotCoordinator
	}
	if group == "" {
		return nil, InvalidGroupID
	}
	g := c.groups[group]
	if tps == nil {
		if g == nil {
			return nil, None
		}
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, compareTP)
	}
	out := make([]Offset, 0, len(tps))
	for _, tp := range tps {
		o := Offset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1}
		if g != nil && requireStable && g.unstable(tp) {
			o.Code = UnstableOffsetCommit
		} else if g != nil {
			if r, ok := g.offsets[tp]; ok {
				o.Offset, o.LeaderEpoch, o.Metadata, o.Committed = r.offset, r.leaderEpoch, r.metadata, time.UnixMilli(r.commitMs)
			}
		}
		out = append(out, o)
	}
	return out, None
}

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// List handles ListGroups: every group, or those in one of states when
// states is not empty, sorted by id.
func (c *Coordinator) List(states []State) []GroupListing {
	c.lock()
	defer c.unlock()
	var out []GroupListing
	for _, g := range c.groups {
		if len(states) > 0 && !slices.Contains(states, g.state) {
			continue
		}
		out = append(out, GroupListing{Group: g.id, ProtocolType: g.protocolType, State: g.state})
	}
	slices.SortFunc(out, func(a, b GroupListing) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Describe handles DescribeGroups.
func (c *Coordinator) Describe(groups []string) []GroupDescription {
	c.lock()
	defer c.unlock()
	out := make([]GroupDescription, 0, len(groups))
	for _, id := range groups {
		d := GroupDescription{Group: id, State: Dead}
		g := c.groups[id]
		switch {
		case c.closed:
			d.Code = NotCoordinator
		case id == "":
			d.Code = InvalidGroupID
		case g != nil:
			d.State, d.ProtocolType, d.Generation, d.Leader = g.state, g.protocolType, g.generation, g.leader
			stable := g.state == Stable
			if stable {
				d.Protocol = g.protocol
			}
			for _, m := range g.members {
				md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
				if stable {
					md.Metadata, md.Assignment = m.metadata(g.protocol), m.assignment
				}
				d.Members = append(d.Members, md)
			}
		}
		out = append(out, d)
	}
	return out
}

// DeleteGroups handles DeleteGroups: an Empty group is deleted with its
// offsets (done once that is durable); others are refused,
// NON_EMPTY_GROUP, or GROUP_ID_NOT_FOUND when absent.
func (c *Coordinator) DeleteGroups(groups []string, done func([]Code)) {
	c.lock()
	defer c.unlock()
	codes := make([]Code, len(groups))
	var ops []op
	var deleted []int
	for i, id := range groups {
		g := c.groups[id]
		switch {
		case c.closed:
			codes[i] = NotCoordinator
		case id == "":
			codes[i] = InvalidGroupID
		case g == nil || g.state == Dead:
			codes[i] = GroupIDNotFound
		case g.state != Empty || len(g.members) > 0:
			codes[i] = NonEmptyGroup
		default:
			c.killGroup(g)
			ops = append(ops, op{kind: opDeleteGroup, key: []byte(id)})
			deleted = append(deleted, i)
		}
	}
	if len(ops) == 0 {
		c.later(func() { done(codes) })
		return
	}
	c.com.push(&item{ops: ops, apply: func(err error) {
		if err != nil {
			c.log.Error("group deletion failed", "err", err)
			for _, i := range deleted {
				codes[i] = NotCoordinator
			}
		}
		done(codes)
	}})
}

// killGroup makes g Dead and forgets it (its pending members too): a
// group of the same id made later is a new one.
func (c *Coordinator) killGroup(g *group) {
	for _, m := range g.members {
		c.dropMember(g, m)
	}
	clear(g.pending)
	g.join = 0
	c.transition(g, Dead)
	delete(c.groups, g.id)
}

// DeleteOffsets handles OffsetDelete: top is the group's error, codes
// one per partition; done is called once the deletion is durable. An
// Empty group's offsets are deleted; a group with members of protocol
// type "consumer" keeps (GROUP_SUBSCRIBED_TO_TOPIC) the topics its
// members subscribe to; other groups with members refuse
// (NON_EMPTY_GROUP).
func (c *Coordinator) DeleteOffsets(group string, tps []TopicPartition, done func(top Code, codes []Code)) {
	c.lock()
	defer c.unlock()
	codes := make([]Code, len(tps))
	fail := func(code Code) { c.later(func() { done(code, codes) }) }
	g := c.groups[group]
	switch {
	case c.closed:
		fail(NotCoordinator)
		return
	case group == "":
		fail(InvalidGroupID)
		return
	case g == nil || g.state == Dead:
		fail(GroupIDNotFound)
		return
	case g.state != Empty && g.protocolType != consumerProtocolType:
		fail(NonEmptyGroup)
		return
	}
	var ops []op
	var gone []TopicPartition
	for i, tp := range tps {
		if g.state != Empty && g.subscribed[tp.Topic] {
			codes[i] = GroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			ops = append(ops, op{kind: opDeleteOffset, key: offsetKey(g.id, tp)})
			gone = append(gone, tp)
		}
	}
	if len(ops) == 0 {
		fail(None)
		return
	}
	c.com.push(&item{ops: ops, apply: func(err error) {
		c.lock()
		top := None
		if err != nil {
			c.log.Error("offset deletion failed", "group", g.id, "err", err)
			top = NotCoordinator
		} else {
			for _, tp := range gone {
				delete(g.offsets, tp)
			}
		}
		c.later(func() { done(top, codes) })
		c.unlock()
	}})
}

func (c *Coordinator) scheduleScan() {
	c.scan = c.clk.AfterFunc(c.cfg.RetentionCheckInterval, func() {
		c.ExpireOffsets()
		c.lock()
		if !c.closed {
			c.scheduleScan()
		}
		c.unlock()
	})
}

// ExpireOffsets removes the offsets past retention, as Kafka (2.1+)
// expires them: a group with a protocol type that is Empty loses every
// offset once OffsetsRetention has passed since it became Empty; a
// Stable "consumer" group whose subscription is known loses the offsets
// of topics it no longer subscribes to, by commit time; a group without
// protocol type (only commits, no members ever) loses each offset by
// commit time. An offset committed with an explicit retention (v1-4)
// expires at its own time. An Empty group left without offsets is
// deleted. It returns once the removal is durable; it runs every
// RetentionCheckInterval.
func (c *Coordinator) ExpireOffsets() {
	done := make(chan struct{})
	c.lock()
	if c.closed {
		c.unlock()
		return
	}
	c.com.push(&item{
		prepare: func() []op {
			c.lock()
			defer c.unlock()
			return c.expire()
		},
		apply: func(err error) {
			if err != nil {
				c.log.Error("offset expiry failed", "err", err)
			}
			close(done)
		},
	})
	c.unlock()
	<-done
}

func (c *Coordinator) expire() []op {
	now := c.clk.Now()
	retention := c.cfg.OffsetsRetention
	var ops []op
	for _, g := range c.groups {
		var base func(r offsetRecord) (time.Time, bool)
		switch {
		case g.protocolType != "" && g.state == Empty:
			base = func(offsetRecord) (time.Time, bool) { return g.stateTime, true }
		case g.protocolType == consumerProtocolType && g.state == Stable && g.subscribed != nil:
			base = func(r offsetRecord) (time.Time, bool) { return time.UnixMilli(r.commitMs), true }
		case g.protocolType == "":
			base = func(r offsetRecord) (time.Time, bool) { return time.UnixMilli(r.commitMs), true }
		default:
			base = func(offsetRecord) (time.Time, bool) { return time.Time{}, false }
		}
		for tp, r := range g.offsets {
			if g.state == Stable && g.subscribed[tp.Topic] {
				continue
			}
			var expired bool
			if r.expireMs >= 0 {
				expired = now.UnixMilli() >= r.expireMs
			} else if b, ok := base(r); ok {
				expired = now.Sub(b) >= retention
			}
			if expired {
				delete(g.offsets, tp)
				ops = append(ops, op{kind: opDeleteOffset, key: offsetKey(g.id, tp)})
			}
		}
		if g.state == Empty && len(g.offsets) == 0 && len(g.members) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0 {
			// Its offsets are all applied (prepare runs after every item
			// queued before it) and deleted above: only its record is left.
			c.killGroup(g)
			ops = append(ops, op{kind: opDeleteGroupRecord, key: []byte(g.id)})
		}
	}
	return ops
}

// Stats counts groups by state and members.
func (c *Coordinator) Stats() Stats {
	c.lock()
	defer c.unlock()
	var s Stats
	for _, g := range c.groups {
		s.ByState[g.state]++
		s.Members += len(g.members)
	}
	return s
}

// GroupOffset is one committed offset of a group.
type GroupOffset struct {
	Group string
	TopicPartition
	Offset int64
}

// Committed returns every committed offset of every group (the lag
// metrics), in no order.
func (c *Coordinator) Committed() []GroupOffset {
	c.lock()
	defer c.unlock()
	var out []GroupOffset
	for _, g := range c.groups {
		for tp, r := range g.offsets {
			out = append(out, GroupOffset{Group: g.id, TopicPartition: tp, Offset: r.offset})
		}
	}
	return out
}
