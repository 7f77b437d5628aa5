package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key.
type ControlType int16

// Control record types (ControlRecordType). Part of the wire format.
const (
	ControlUnknown        ControlType = -1
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

var controlNames = [...]string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// String returns Kafka's name of the type, or UNKNOWN.
func (t ControlType) String() string {
	if t >= 0 && int(t) < len(controlNames) {
		return controlNames[t]
	}
	return "UNKNOWN"
}

// Sizes of the current control key and end-transaction marker value.
const (
	controlKeySize   = 4 // int16 version, int16 type
	endTxnMarkerSize = 6 // int16 version, int32 coordinator epoch
)

// ParseControlKey reads the key of a control record: int16 version, then
// int16 type. Like Kafka, a version above 0 is read as version 0, a
// negative one is an error, and an unknown type id is ControlUnknown.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < controlKeySize {
		return ControlUnknown, recordsErr(0, ErrControl, "Invalid value size found for end control record key. Must have at least %d bytes, but found only %d", controlKeySize, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return ControlUnknown, recordsErr(0, ErrControl, "Invalid version found for control record: %d. May indicate data corruption", v)
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:]))
	if t < 0 || int(t) >= len(controlNames) {
		t = ControlUnknown
	}
	return t, nil
}

// AppendControlKey appends a version 0 control key of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return binary.BigEndian.AppendUint16(dst, uint16(t))
}

// EndTxnMarker is the value of a COMMIT or ABORT control record.
type EndTxnMarker struct {
	Type             ControlType // ControlCommit or ControlAbort
	CoordinatorEpoch int32
}

// ParseEndTxnMarker decodes a COMMIT or ABORT record from its key and value.
func ParseEndTxnMarker(key, value []byte) (EndTxnMarker, error) {
	t, err := ParseControlKey(key)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if t != ControlCommit && t != ControlAbort {
		return EndTxnMarker{}, recordsErr(0, ErrControl, "Invalid control record type for end transaction marker: %s", t)
	}
	if len(value) < endTxnMarkerSize {
		return EndTxnMarker{}, recordsErr(0, ErrControl, "Invalid value size found for end transaction marker. Must have at least %d bytes, but found only %d", endTxnMarkerSize, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 {
		return EndTxnMarker{}, recordsErr(0, ErrControl, "Invalid version found for end transaction marker: %d. May indicate data corruption", v)
	}
	return EndTxnMarker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:]))}, nil
}

// AppendValue appends the marker's record value: version 0, coordinator epoch.
func (m EndTxnMarker) AppendValue(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// AppendEndTxnBatch appends a marker batch as Kafka's
// MemoryRecords.withEndTransactionMarker writes it: one control record,
// transactional and control set, no compression, CreateTime, the
// producer's id and epoch, base sequence -1.
func AppendEndTxnBatch(dst []byte, baseOffset, timestamp int64, partitionLeaderEpoch int32, producerID int64, producerEpoch int16, m EndTxnMarker) ([]byte, error) {
	if m.Type != ControlCommit && m.Type != ControlAbort {
		return dst, fmt.Errorf("%w: end transaction marker of type %s", ErrBuild, m.Type)
	}
	b := NewBuilder(baseOffset)
	b.PartitionLeaderEpoch = partitionLeaderEpoch
	b.Transactional, b.Control = true, true
	b.ProducerID, b.ProducerEpoch = producerID, producerEpoch
	var kv [controlKeySize + endTxnMarkerSize]byte
	key := AppendControlKey(kv[:0], m.Type)
	value := m.AppendValue(kv[controlKeySize:controlKeySize])
	if err := b.Append(timestamp, key, value, nil); err != nil {
		return dst, err
	}
	return b.AppendTo(dst)
}
