package groupcoord

import (
	"encoding/binary"
	"fmt"
	"math"
)

// recordVersion is the first byte of every value this build writes.
const recordVersion = 1

// maxGroupIDBytes bounds a group id: its length is a uint16 in the keys
// of the offsets bucket. Kafka sets no bound; ids this long are refused
// with INVALID_GROUP_ID.
const maxGroupIDBytes = math.MaxUint16

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// offsetRecord is one committed offset as stored.
type offsetRecord struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	// expireMs is the explicit expiry of OffsetCommit v1-4's retention
	// time, -1 when there is none (retention then counts from the
	// group's emptiness or the commit, see expired).
	expireMs int64
}

// groupRecord is what survives of a group across a restart.
type groupRecord struct {
	generation   int32
	protocolType string
	// emptyMs is when the group last became Empty (the base of its
	// offsets' retention), -1 when it was not Empty when written.
	emptyMs int64
}

// groupPrefix is the prefix of every offsets key of group.
func groupPrefix(group string) []byte {
	b := make([]byte, 0, 2+len(group))
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

// offsetKey is group, topic and partition, each length-prefixed so that
// groupPrefix(group) selects exactly the group's offsets.
func offsetKey(group string, tp TopicPartition) []byte {
	b := make([]byte, 0, 2+len(group)+2+len(tp.Topic)+4)
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	b = append(b, group...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(tp.Topic)))
	b = append(b, tp.Topic...)
	return binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
}

// decodeOffsetKey is the inverse of offsetKey. Of a string key, the
// group and topic it returns are substrings of it (no copy).
func decodeOffsetKey[K ~string | ~[]byte](k K) (string, TopicPartition, error) {
	if len(k) < 2 {
		return "", TopicPartition{}, &decodeError{0, fmt.Sprintf("%d bytes, too short for the group length", len(k))}
	}
	gl := int(be16(k, 0))
	if 2+gl+2 > len(k) {
		return "", TopicPartition{}, &decodeError{0, fmt.Sprintf("group of %d bytes, %d bytes follow", gl, len(k)-2)}
	}
	group := string(k[2 : 2+gl])
	at := 2 + gl
	tl := int(be16(k, at))
	if at+2+tl+4 != len(k) {
		return "", TopicPartition{}, &decodeError{at, fmt.Sprintf("topic of %d bytes and a partition need %d bytes, %d follow", tl, tl+4, len(k)-at-2)}
	}
	topic := string(k[at+2 : at+2+tl])
	p := int32(be32(k, at+2+tl))
	if p < 0 {
		return "", TopicPartition{}, &decodeError{at + 2 + tl, fmt.Sprintf("negative partition %d", p)}
	}
	if group == "" || topic == "" {
		return "", TopicPartition{}, &decodeError{0, "empty group or topic"}
	}
	return group, TopicPartition{topic, p}, nil
}

// be16, be32 and be64 read big-endian integers at off of a key.
func be16[K ~string | ~[]byte](k K, off int) uint16 { return uint16(k[off])<<8 | uint16(k[off+1]) }

func be32[K ~string | ~[]byte](k K, off int) uint32 {
	return uint32(be16(k, off))<<16 | uint32(be16(k, off+2))
}

func be64[K ~string | ~[]byte](k K, off int) uint64 {
	return uint64(be32(k, off))<<32 | uint64(be32(k, off+4))
}

// encode: version 1, offset int64, leader epoch int32, commit time and
// expiry (ms, int64), metadata length uint32 and bytes; big-endian.
func (r offsetRecord) encode() []byte {
	b := make([]byte, 0, 1+8+4+8+8+4+len(r.metadata))
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(r.offset))
	b = binary.BigEndian.AppendUint32(b, uint32(r.leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(r.commitMs))
	b = binary.BigEndian.AppendUint64(b, uint64(r.expireMs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.metadata)))
	return append(b, r.metadata...)
}

const offsetRecordFixed = 1 + 8 + 4 + 8 + 8 + 4

func decodeOffsetRecord(v []byte) (offsetRecord, error) {
	var r offsetRecord
	if len(v) < 1 {
		return r, &decodeError{0, "empty record"}
	}
	if v[0] != recordVersion {
		return r, &decodeError{0, fmt.Sprintf("record version %d, this build reads %d", v[0], recordVersion)}
	}
	if len(v) < offsetRecordFixed {
		return r, &decodeError{len(v), fmt.Sprintf("%d bytes, an offset record has at least %d", len(v), offsetRecordFixed)}
	}
	r.offset = int64(binary.BigEndian.Uint64(v[1:]))
	r.leaderEpoch = int32(binary.BigEndian.Uint32(v[9:]))
	r.commitMs = int64(binary.BigEndian.Uint64(v[13:]))
	r.expireMs = int64(binary.BigEndian.Uint64(v[21:]))
	n := binary.BigEndian.Uint32(v[29:])
	if uint64(n) != uint64(len(v)-offsetRecordFixed) {
		return r, &decodeError{29, fmt.Sprintf("metadata of %d bytes, %d bytes follow", n, len(v)-offsetRecordFixed)}
	}
	if r.offset < -1 {
		return r, &decodeError{1, fmt.Sprintf("offset %d", r.offset)}
	}
	r.metadata = string(v[offsetRecordFixed:])
	return r, nil
}

// encode: version 1, generation int32, emptyMs int64, protocol type
// length uint16 and bytes; big-endian.
func (r groupRecord) encode() []byte {
	b := make([]byte, 0, 1+4+8+2+len(r.protocolType))
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(r.generation))
	b = binary.BigEndian.AppendUint64(b, uint64(r.emptyMs))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.protocolType)))
	return append(b, r.protocolType...)
}

const groupRecordFixed = 1 + 4 + 8 + 2

func decodeGroupRecord(v []byte) (groupRecord, error) {
	var r groupRecord
	if len(v) < 1 {
		return r, &decodeError{0, "empty record"}
	}
	if v[0] != recordVersion {
		return r, &decodeError{0, fmt.Sprintf("record version %d, this build reads %d", v[0], recordVersion)}
	}
	if len(v) < groupRecordFixed {
		return r, &decodeError{len(v), fmt.Sprintf("%d bytes, a group record has at least %d", len(v), groupRecordFixed)}
	}
	r.generation = int32(binary.BigEndian.Uint32(v[1:]))
	r.emptyMs = int64(binary.BigEndian.Uint64(v[5:]))
	n := int(binary.BigEndian.Uint16(v[13:]))
	if n != len(v)-groupRecordFixed {
		return r, &decodeError{13, fmt.Sprintf("protocol type of %d bytes, %d bytes follow", n, len(v)-groupRecordFixed)}
	}
	if r.generation < 0 {
		return r, &decodeError{1, fmt.Sprintf("negative generation %d", r.generation)}
	}
	r.protocolType = string(v[groupRecordFixed:])
	return r, nil
}
