package txncoord

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// state is a transaction state, as Kafka's TransactionState. The values
// are part of the file format (the state byte of a record).
type state uint8

const (
	stateEmpty state = iota
	stateOngoing
	statePrepareCommit
	statePrepareAbort
	stateCompleteCommit
	stateCompleteAbort
	stateDead
	numStates
)

var stateNames = [numStates]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}

func (s state) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// prepared reports whether s is PrepareCommit or PrepareAbort: a
// decision taken whose markers may not all be written.
func (s state) prepared() bool { return s == statePrepareCommit || s == statePrepareAbort }

// record is one transactional id's durable state: the value of its key
// in the transactions bucket.
type record struct {
	state state
	// producerID and epoch are the ones the id maps to now; epoch -1
	// only for an id whose first InitProducerID is not persisted yet
	// (never stored).
	producerID int64
	epoch      int16
	// prevProducerID is the producer id before the last rotation (epoch
	// exhaustion), -1 when none; lastEpoch the epoch before the last
	// bump that a retried InitProducerID may name (Kafka's
	// lastProducerEpoch), -1 when none.
	prevProducerID int64
	lastEpoch      int16
	// timeoutMs is the transaction timeout the producer asked for.
	timeoutMs int32
	// startMs is when the ongoing transaction began (its first
	// AddPartitions), Unix milliseconds, kept once it completed (-1 in
	// Empty, and in a Complete record written before it was kept).
	startMs int64
	// partitions are the partitions of the transaction (Ongoing or
	// Prepare*), sorted; none in the other states.
	partitions []TopicPartition
	// firstOffsets, in PrepareX, holds for each of partitions the first
	// offset of the transaction's data there when it was decided (-1:
	// it had none there). nil in the other states, and for a PrepareX
	// decoded from a record version before 3, which did not keep them.
	// Markers.WriteMarkers uses them to write a marker only where it is
	// still due (see the package doc, Durability).
	firstOffsets []int64
	// lastUpdateMs is when the record was last written, Unix
	// milliseconds (Kafka's txnLastUpdateTimestamp), from which an idle
	// id expires; -1 when unknown (a version 1 record: Open stamps it
	// with its own time).
	lastUpdateMs int64
}

// clone returns r with its own partitions and first offsets.
func (r record) clone() record {
	r.partitions = slices.Clone(r.partitions)
	r.firstOffsets = slices.Clone(r.firstOffsets)
	return r
}

// has reports whether tp is one of r's partitions.
func (r *record) has(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(r.partitions, tp, compareTP)
	return ok
}

// add adds tp to r's partitions, keeping them sorted; it reports whether
// tp was new.
func (r *record) add(tp TopicPartition) bool {
	i, ok := slices.BinarySearchFunc(r.partitions, tp, compareTP)
	if ok {
		return false
	}
	r.partitions = slices.Insert(r.partitions, i, tp)
	return true
}

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Record layouts, all three read: version 3 is written for a record
// with first offsets (a PrepareX), version 2 for any other, version 1
// for a record whose last update time is unknown (as decoded from a
// version 1 record). Each layout is written for exactly what it can
// hold, so a record decodes and encodes back to the same bytes.
const (
	recordVersion1 = 1
	recordVersion2 = 2
	recordVersion  = 3
)

// recordHeaderSize is the fixed part of a version 2 or 3 record;
// recordHeaderSizeV1 of a version 1 record, which has no last update
// time.
const (
	recordHeaderSize   = 50
	recordHeaderSizeV1 = 42
)

// maxTopicLen bounds a topic name in a record: Kafka's limit is 249
// characters; the field is 2 bytes.
const maxTopicLen = math.MaxUint16

// encode returns r in the version 2 or 3 layout (big-endian):
//
//	offset size field
//	0      1    version (2, or 3 with first offsets)
//	1      1    state (0 Empty ... 6 Dead)
//	2      8    producer id
//	10     2    producer epoch
//	12     8    previous producer id (-1: none)
//	20     2    last producer epoch (-1: none)
//	22     4    transaction timeout, ms
//	26     8    start of the ongoing transaction, Unix ms (-1: none)
//	34     4    unused, 0
//	38     8    last update, Unix ms (>= 0)
//	46     4    partition count n
//	50     ...  n times: topic length (2), topic, partition (4), and
//	            in version 3 the first offset (8, >= -1)
//
// Version 3 (only PrepareCommit and PrepareAbort) is written when r has
// first offsets. Version 1 is version 2 without the last update (the
// partition count at 38, the partitions at 42); r is written so when
// its last update is unknown (-1), which only a record decoded from
// version 1 has (and so no first offsets).
func (r *record) encode() []byte {
	n := recordHeaderSize
	for _, tp := range r.partitions {
		n += 2 + len(tp.Topic) + 4 + 8
	}
	version := byte(recordVersion2)
	switch {
	case r.lastUpdateMs < 0:
		version = recordVersion1
	case r.firstOffsets != nil:
		version = recordVersion
	}
	b := make([]byte, 0, n)
	b = append(b, version, byte(r.state))
	b = binary.BigEndian.AppendUint64(b, uint64(r.producerID))
	b = binary.BigEndian.AppendUint16(b, uint16(r.epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(r.prevProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(r.lastEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(r.timeoutMs))
	b = binary.BigEndian.AppendUint64(b, uint64(r.startMs))
	b = binary.BigEndian.AppendUint32(b, 0)
	if version != recordVersion1 {
		b = binary.BigEndian.AppendUint64(b, uint64(r.lastUpdateMs))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.partitions)))
	for i, tp := range r.partitions {
		b = binary.BigEndian.AppendUint16(b, uint16(len(tp.Topic)))
		b = append(b, tp.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
		if version == recordVersion {
			b = binary.BigEndian.AppendUint64(b, uint64(r.firstOffsets[i]))
		}
	}
	return b
}

// decodeError is why a record did not decode and where.
type decodeError struct {
	offset int
	reason string
}

func (e *decodeError) Error() string { return fmt.Sprintf("byte %d: %s", e.offset, e.reason) }

func bad(off int, format string, args ...any) *decodeError {
	return &decodeError{offset: off, reason: fmt.Sprintf(format, args...)}
}

// decodeRecord decodes a record encoded by encode. It checks every
// length against the bytes before it reads or allocates, and the values
// against what the coordinator can have written; it never panics.
func decodeRecord(b []byte) (record, error) {
	var r record
	if len(b) < 1 {
		return r, bad(0, "empty value")
	}
	header := recordHeaderSize
	switch b[0] {
	case recordVersion, recordVersion2:
	case recordVersion1:
		header = recordHeaderSizeV1
	default:
		return r, bad(0, "record version %d, this build reads %d to %d", b[0], recordVersion1, recordVersion)
	}
	if len(b) < header {
		return r, bad(len(b), "record of %d bytes is shorter than its %d-byte header", len(b), header)
	}
	r.state = state(b[1])
	if r.state >= numStates {
		return r, bad(1, "unknown state %d", b[1])
	}
	r.producerID = int64(binary.BigEndian.Uint64(b[2:]))
	if r.producerID < 0 {
		return r, bad(2, "producer id %d is negative", r.producerID)
	}
	r.epoch = int16(binary.BigEndian.Uint16(b[10:]))
	if r.epoch < 0 {
		return r, bad(10, "producer epoch %d is negative", r.epoch)
	}
	r.prevProducerID = int64(binary.BigEndian.Uint64(b[12:]))
	if r.prevProducerID < -1 {
		return r, bad(12, "previous producer id %d is below -1", r.prevProducerID)
	}
	r.lastEpoch = int16(binary.BigEndian.Uint16(b[20:]))
	if r.lastEpoch < -1 {
		return r, bad(20, "last producer epoch %d is below -1", r.lastEpoch)
	}
	r.timeoutMs = int32(binary.BigEndian.Uint32(b[22:]))
	if r.timeoutMs <= 0 {
		return r, bad(22, "transaction timeout %d ms is not positive", r.timeoutMs)
	}
	r.startMs = int64(binary.BigEndian.Uint64(b[26:]))
	if r.startMs < -1 {
		return r, bad(26, "start time %d is below -1", r.startMs)
	}
	// A transaction in progress has its start; Empty has none; a
	// completed one keeps its start (-1 in records written before it was
	// kept).
	open := r.state == stateOngoing || r.state.prepared()
	if (open && r.startMs < 0) || (r.state == stateEmpty && r.startMs >= 0) {
		return r, bad(26, "start time %d in state %s", r.startMs, r.state)
	}
	if u := binary.BigEndian.Uint32(b[34:]); u != 0 {
		return r, bad(34, "unused field is %d, not 0", u)
	}
	firsts := b[0] == recordVersion
	if firsts && !r.state.prepared() {
		return r, bad(0, "record version %d (first offsets) in state %s", b[0], r.state)
	}
	entry := 6 // the least bytes a partition takes
	if firsts {
		entry += 8
	}
	r.lastUpdateMs = -1
	if b[0] != recordVersion1 {
		r.lastUpdateMs = int64(binary.BigEndian.Uint64(b[38:]))
		if r.lastUpdateMs < 0 {
			return r, bad(38, "last update time %d is negative", r.lastUpdateMs)
		}
	}
	n := binary.BigEndian.Uint32(b[header-4:])
	off := header
	// Check the count against the bytes left before allocating for it.
	if uint64(n) > uint64(len(b)-off)/uint64(entry) {
		return r, bad(header-4, "partition count %d does not fit in the %d bytes left", n, len(b)-off)
	}
	if (n > 0) != open {
		return r, bad(header-4, "%d partitions in state %s", n, r.state)
	}
	if n > 0 {
		r.partitions = make([]TopicPartition, 0, n)
		if firsts {
			r.firstOffsets = make([]int64, 0, n)
		}
	}
	for i := range n {
		if len(b)-off < 2 {
			return r, bad(off, "partition %d: topic length cut off", i)
		}
		l := int(binary.BigEndian.Uint16(b[off:]))
		if l == 0 {
			return r, bad(off, "partition %d: empty topic", i)
		}
		off += 2
		if len(b)-off < l+entry-2 {
			return r, bad(off, "partition %d: topic of %d bytes and what follows it cut off (%d bytes left)", i, l, len(b)-off)
		}
		tp := TopicPartition{Topic: string(b[off : off+l]), Partition: int32(binary.BigEndian.Uint32(b[off+l:]))}
		if tp.Partition < 0 {
			return r, bad(off+l, "partition %d: partition number %d is negative", i, tp.Partition)
		}
		if len(r.partitions) > 0 && compareTP(r.partitions[len(r.partitions)-1], tp) >= 0 {
			return r, bad(off-2, "partition %d: %s-%d is not after %s-%d", i, tp.Topic, tp.Partition, r.partitions[len(r.partitions)-1].Topic, r.partitions[len(r.partitions)-1].Partition)
		}
		r.partitions = append(r.partitions, tp)
		off += l + 4
		if firsts {
			first := int64(binary.BigEndian.Uint64(b[off:]))
			if first < -1 {
				return r, bad(off, "partition %d: first offset %d is below -1", i, first)
			}
			r.firstOffsets = append(r.firstOffsets, first)
			off += 8
		}
	}
	if off != len(b) {
		return r, bad(off, "%d bytes after the last partition", len(b)-off)
	}
	return r, nil
}
