package kafkaserver

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/txncoord"
)

// errInvalidGroupID is Kafka's INVALID_GROUP_ID (24).
const errInvalidGroupID int16 = 24

// markers is what the transaction coordinator writes its markers
// through: a marker for a partition of __consumer_offsets commits or
// drops the transaction's pending offsets of the groups of that
// partition (the group coordinator); any other goes to the store. The
// open transactions it lists are the store's: the offsets partition is
// added to a transaction durably (AddPartitionsDurable), so the
// coordinator's file always lists it.
func (s *Server) markers() txncoord.Markers {
	return groupMarkers{groups: s.groups, Markers: txncoord.StoreMarkers(s.store)}
}

type groupMarkers struct {
	groups *groupcoord.Coordinator
	txncoord.Markers
}

func (m groupMarkers) WriteMarkers(d txncoord.Decision) (func() error, error) {
	store := d
	store.Partitions, store.FirstOffsets = nil, nil
	for i, tp := range d.Partitions {
		if tp.Topic != groupcoord.OffsetsTopic {
			store.Partitions = append(store.Partitions, tp)
			if d.FirstOffsets != nil {
				store.FirstOffsets = append(store.FirstOffsets, d.FirstOffsets[i])
			}
		}
	}
	sync := func() error { return nil }
	if len(store.Partitions) > 0 {
		var err error
		if sync, err = m.Markers.WriteMarkers(store); err != nil {
			return nil, err
		}
	}
	// The offsets after the partitions' markers, durable when
	// CompleteTxn returns; each is a no-op when it is written again (the
	// coordinator retries a decision that failed).
	var errs []error
	for _, tp := range d.Partitions {
		if tp.Topic == groupcoord.OffsetsTopic {
			errs = append(errs, m.groups.CompleteTxn(d.ProducerID, tp.Partition, d.Commit))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, sync())
	}
	return sync, nil
}

// offsetsPartition is the transaction partition that holds a group's
// offsets: Kafka's __consumer_offsets partition of the group.
func offsetsPartition(group string) txncoord.TopicPartition {
	return txncoord.TopicPartition{Topic: groupcoord.OffsetsTopic, Partition: groupcoord.OffsetsPartition(group)}
}

// handleAddOffsetsToTxn: AddOffsetsToTxn v0-3 (v4 is KIP-890's and not
// advertised): the group's offsets partition joins the transaction, as
// in Kafka, durably before the answer.
func handleAddOffsetsToTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case r.TransactionalID == "":
		resp.ErrorCode = errInvalidRequest
	case r.Group == "":
		resp.ErrorCode = errInvalidGroupID
	default:
		resp.ErrorCode = fencedBefore(s.txnCode("AddOffsetsToTxn", r.TransactionalID,
			s.txn.AddPartitionsDurable(r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txncoord.TopicPartition{offsetsPartition(r.Group)})), r.Version, 2)
	}
	p.setErr(resp.ErrorCode)
	p.resp = resp
	return nil
}

// handleTxnOffsetCommit: TxnOffsetCommit v0-3 (v3: the consumer's
// generation and member). The transaction must be ongoing with the
// group's offsets partition added (AddOffsetsToTxn), at the producer's
// epoch, as a transactional batch must (BeginProduce); the offsets are
// then pending in groups.db until the transaction's marker. Answered
// once durable.
func handleTxnOffsetCommit(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	p.resp = resp
	tr := groupcoord.TxnCommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: str(r.InstanceID), Generation: r.Generation,
		ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
	if r.Version < 3 {
		tr.Generation, tr.MemberID, tr.InstanceID = -1, "", ""
	}
	var where []*kmsg.TxnOffsetCommitResponseTopicPartition
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for i, t := range r.Topics {
		for j, pt := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			*rp = kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = pt.Partition
			if !s.partitionExists(t.Topic, pt.Partition) {
				rp.ErrorCode = errUnknownTopicOrPartition
				p.setErr(rp.ErrorCode)
				continue
			}
			tr.Offsets = append(tr.Offsets, groupcoord.OffsetCommit{
				TopicPartition: groupcoord.TopicPartition{Topic: t.Topic, Partition: pt.Partition},
				Offset:         pt.Offset, LeaderEpoch: pt.LeaderEpoch, Metadata: str(pt.Metadata),
			})
			where = append(where, rp)
		}
	}
	if len(where) == 0 {
		return nil
	}
	setAll := func(code int16) {
		for _, rp := range where {
			rp.ErrorCode = code
		}
		p.setErr(code)
	}
	if r.TransactionalID == "" {
		setAll(errInvalidRequest)
		return nil
	}
	s.laterTxn(p, func() {
		release, err := s.txn.BeginProduce(r.TransactionalID, r.ProducerID, r.ProducerEpoch, offsetsPartition(r.Group))
		if err != nil {
			setAll(s.produceCode(r.TransactionalID, err))
			return
		}
		done := make(chan []groupcoord.Code, 1)
		s.groups.CommitTxn(tr, func(codes []groupcoord.Code) { done <- codes })
		// Queued: the marker, written after release, comes after it.
		release()
		for i, code := range <-done {
			where[i].ErrorCode = int16(code)
			p.setErr(where[i].ErrorCode)
		}
	})
	return nil
}
