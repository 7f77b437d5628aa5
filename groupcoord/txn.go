package groupcoord

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// OffsetsTopic is the name of Kafka's internal topic of committed
// offsets: a transaction that commits offsets holds the partition
// OffsetsPartition(group) of it, as in Kafka, so TopicPartitions of
// transactions are Kafka's. logstore keeps no such topic: the
// transaction's marker for that partition is routed to CompleteTxn.
const OffsetsTopic = "__consumer_offsets"

// offsetsPartitions is Kafka's default offsets.topic.num.partitions.
const offsetsPartitions = 50

// OffsetsPartition is the __consumer_offsets partition of group, as
// Kafka computes it: abs(group.hashCode()) % 50, with Java's String
// hashCode over UTF-16 code units and Kafka's Utils.abs (MIN_VALUE is 0).
func OffsetsPartition(group string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % offsetsPartitions
}

// TxnCommitRequest is a TxnOffsetCommit: offsets committed by a
// transactional producer, pending until the transaction's marker.
type TxnCommitRequest struct {
	Group      string
	MemberID   string
	InstanceID string
	// Generation is -1 with no member id for a producer that does not
	// name its consumer's generation (TxnOffsetCommit v0-2).
	Generation    int32
	ProducerID    int64
	ProducerEpoch int16
	Offsets       []OffsetCommit
}

// pendingKey is offsetKey(group, tp) and the producer id (8 bytes,
// big-endian): the key of a pending transactional offset in bucket
// "pending"; groupPrefix(group) selects a group's.
func pendingKey(group string, tp TopicPartition, producerID int64) []byte {
	return binary.BigEndian.AppendUint64(offsetKey(group, tp), uint64(producerID))
}

func decodePendingKey[K ~string | ~[]byte](k K) (string, TopicPartition, int64, error) {
	if len(k) < 8 {
		return "", TopicPartition{}, 0, &decodeError{0, fmt.Sprintf("%d bytes, too short for a producer id", len(k))}
	}
	g, tp, err := decodeOffsetKey(k[:len(k)-8])
	if err != nil {
		return "", TopicPartition{}, 0, err
	}
	pid := int64(be64(k, len(k)-8))
	if pid < 0 {
		return "", TopicPartition{}, 0, &decodeError{len(k) - 8, fmt.Sprintf("negative producer id %d", pid)}
	}
	return g, tp, pid, nil
}

// CommitTxn handles a TxnOffsetCommit: the offsets are stored pending
// for the producer (durably: done is called once they are in
// groups.db) and become the group's committed offsets when CompleteTxn
// commits the producer's transaction, or are dropped when it aborts.
// The member checks are Kafka's for transactional commits: a member
// names its generation; generation -1 with no member id is accepted in
// any state (older producers do not know the consumer's generation).
// The queueing is done when CommitTxn returns: a CompleteTxn called
// after it sees these offsets.
func (c *Coordinator) CommitTxn(req TxnCommitRequest, done func([]Code)) {
	c.lock()
	defer c.unlock()
	codes := make([]Code, len(req.Offsets))
	failAll := func(code Code) { c.answerAll(codes, code, done) }
	switch {
	case c.closed:
		failAll(NotCoordinator)
		return
	case req.Group == "" || len(req.Group) > maxGroupIDBytes:
		failAll(InvalidGroupID)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		g = c.newGroup(req.Group)
	}
	if code := c.validateCommit(g, req.MemberID, req.InstanceID, req.Generation, true); code != None {
		failAll(code)
		return
	}
	now := c.clk.Now()
	type put struct {
		tp TopicPartition
		r  offsetRecord
	}
	var puts []put
	var ops []op
	for i, o := range req.Offsets {
		switch {
		case o.Topic == "" || len(o.Topic) > maxGroupIDBytes || o.Partition < 0:
			codes[i] = UnknownTopicOrPartition
			continue
		case len(o.Metadata) > maxMetadataBytes:
			codes[i] = OffsetMetadataTooLarge
			continue
		}
		r := offsetRecord{offset: max(o.Offset, -1), leaderEpoch: o.LeaderEpoch, metadata: o.Metadata, commitMs: now.UnixMilli(), expireMs: -1}
		puts = append(puts, put{o.TopicPartition, r})
		ops = append(ops, op{kind: opPutPending, key: pendingKey(g.id, o.TopicPartition, req.ProducerID), val: r.encode()})
	}
	if len(ops) == 0 {
		c.later(func() { done(codes) })
		return
	}
	pid := req.ProducerID
	c.com.push(&item{ops: ops, apply: func(err error) {
		c.lock()
		if err != nil {
			c.log.Error("transactional offset commit failed", "group", g.id, "producer_id", pid, "err", err)
			for i := range codes {
				if codes[i] == None {
					codes[i] = NotCoordinator
				}
			}
		} else {
			m := g.txnOffsets[pid]
			if m == nil {
				m = map[TopicPartition]offsetRecord{}
				g.txnOffsets[pid] = m
			}
			for _, p := range puts {
				m[p.tp] = p.r
			}
		}
		c.later(func() { done(codes) })
		c.unlock()
	}})
}

// CompleteTxn applies the marker of producerID's transaction for the
// offsets partition: with commit, the producer's pending offsets of
// every group of that partition become committed offsets (unless an
// offset committed later replaced them already); otherwise they are
// dropped. It returns once that is durable in groups.db. A marker with
// no pending offsets (a marker written again after a restart) changes
// nothing.
func (c *Coordinator) CompleteTxn(producerID int64, partition int32, commit bool) error {
	c.lock()
	if c.closed {
		c.unlock()
		return ErrClosed
	}
	done := make(chan error, 1)
	c.com.push(&item{
		prepare: func() []op {
			c.lock()
			defer c.unlock()
			var ops []op
			for _, g := range c.groups {
				pend, ok := g.txnOffsets[producerID]
				if !ok || OffsetsPartition(g.id) != partition {
					continue
				}
				for tp, r := range pend {
					ops = append(ops, op{kind: opDeletePending, key: pendingKey(g.id, tp, producerID)})
					if !commit {
						continue
					}
					if cur, ok := g.offsets[tp]; ok && cur.commitMs > r.commitMs {
						continue // a later plain commit wins, as in Kafka
					}
					g.offsets[tp] = r
					ops = append(ops, op{kind: opPutOffset, key: offsetKey(g.id, tp), val: r.encode()})
				}
				delete(g.txnOffsets, producerID)
				if commit && c.cfg.OnCommit != nil {
					c.cfg.OnCommit(len(pend))
				}
			}
			return ops
		},
		apply: func(err error) { done <- err },
	})
	c.unlock()
	return <-done
}

// unstable reports whether tp of g has offsets pending in a
// transaction (OffsetFetch's UNSTABLE_OFFSET_COMMIT when asked for
// stable offsets).
func (g *group) unstable(tp TopicPartition) bool {
	for _, m := range g.txnOffsets {
		if _, ok := m[tp]; ok {
			return true
		}
	}
	return false
}
