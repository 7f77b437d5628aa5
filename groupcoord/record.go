package groupcoord

import (
	"encoding/binary"
	"fmt"
	"math"
)

// recordVersion is the first byte of every offset record this build
// writes (group records: groupRecordV2).
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

// groupRecord is what survives of a group across a restart: Kafka's
// GroupMetadata value.
type groupRecord struct {
	// groupID is the group (the record's key, not in the value).
	groupID string
	// v1: decoded from version 1, encoded as it was (a conversion or
	// compaction copies it unchanged).
	v1 bool
	// state is Empty, Stable or CompletingRebalance (written when the
	// join phase ends, see persistGroup). A version 1 record is Empty.
	state        State
	generation   int32
	protocolType string
	// emptyMs is when the group last became Empty (the base of its
	// offsets' retention), -1 when it was not Empty when written.
	emptyMs  int64
	protocol string
	leader   string
	members  []memberRecord
}

// memberRecord is one member of a group record: Kafka's
// GroupMetadataValue.MemberMetadata.
type memberRecord struct {
	id, instanceID       string
	clientID, clientHost string
	// rebalanceMs and sessionMs are the member's timeouts.
	rebalanceMs, sessionMs int64
	// metadata is the member's metadata of the group's protocol (its
	// subscription), assignment what the leader assigned it (nil when
	// the record is not of a Stable group).
	metadata, assignment []byte
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

// Group record versions: 1 (generation, empty-since and protocol type)
// is read, 2 (groupRecordV2) is written.
const (
	groupRecordV1 = 1
	groupRecordV2 = 2
)

// encode writes version 2, big-endian: state int8 | generation int32 |
// emptyMs int64 | uint16 len | protocol type | uint16 len | protocol |
// uint16 len | leader | uint32 member count | members, each: uint16 len
// | member id | uint16 len | instance id | uint16 len | client id |
// uint16 len | client host | rebalance timeout ms int64 | session
// timeout ms int64 | uint32 len | metadata | uint32 len | assignment.
func (r groupRecord) encode() []byte {
	if r.v1 {
		return r.encodeV1()
	}
	n := groupRecordFixedV2 + len(r.protocolType) + len(r.protocol) + len(r.leader)
	for _, m := range r.members {
		n += memberRecordFixed + len(m.id) + len(m.instanceID) + len(m.clientID) + len(m.clientHost) + len(m.metadata) + len(m.assignment)
	}
	b := make([]byte, 0, n)
	b = append(b, groupRecordV2, byte(r.state))
	b = binary.BigEndian.AppendUint32(b, uint32(r.generation))
	b = binary.BigEndian.AppendUint64(b, uint64(r.emptyMs))
	b = appendString16(b, r.protocolType)
	b = appendString16(b, r.protocol)
	b = appendString16(b, r.leader)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.members)))
	for _, m := range r.members {
		b = appendString16(b, m.id)
		b = appendString16(b, m.instanceID)
		b = appendString16(b, m.clientID)
		b = appendString16(b, m.clientHost)
		b = binary.BigEndian.AppendUint64(b, uint64(m.rebalanceMs))
		b = binary.BigEndian.AppendUint64(b, uint64(m.sessionMs))
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.metadata)))
		b = append(b, m.metadata...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.assignment)))
		b = append(b, m.assignment...)
	}
	return b
}

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// encodeV1 is the version 1 record of r's generation, emptiness and
// protocol type: version 1, generation int32, emptyMs int64, protocol
// type length uint16 and bytes; big-endian.
func (r groupRecord) encodeV1() []byte {
	b := make([]byte, 0, groupRecordFixed+len(r.protocolType))
	b = append(b, groupRecordV1)
	b = binary.BigEndian.AppendUint32(b, uint32(r.generation))
	b = binary.BigEndian.AppendUint64(b, uint64(r.emptyMs))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.protocolType)))
	return append(b, r.protocolType...)
}

const (
	groupRecordFixed   = 1 + 4 + 8 + 2
	groupRecordFixedV2 = 1 + 1 + 4 + 8 + 2 + 2 + 2 + 4
	memberRecordFixed  = 2 + 2 + 2 + 2 + 8 + 8 + 4 + 4
)

// decodeGroupRecord decodes version 1 or 2. Every length is checked
// against the bytes left before anything is allocated for it (a member
// count against the bytes its fixed parts need).
func decodeGroupRecord(v []byte) (groupRecord, error) {
	var r groupRecord
	if len(v) < 1 {
		return r, &decodeError{0, "empty record"}
	}
	switch v[0] {
	case groupRecordV1:
	case groupRecordV2:
		return decodeGroupRecordV2(v)
	default:
		return r, &decodeError{0, fmt.Sprintf("group record version %d, this build reads %d and %d", v[0], groupRecordV1, groupRecordV2)}
	}
	if len(v) < groupRecordFixed {
		return r, &decodeError{len(v), fmt.Sprintf("%d bytes, a group record has at least %d", len(v), groupRecordFixed)}
	}
	r.state, r.v1 = Empty, true
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

// reader reads a record front to back; the first error sticks.
type reader struct {
	v   []byte
	off int
	err *decodeError
}

func (d *reader) fail(off int, format string, args ...any) {
	if d.err == nil {
		d.err = &decodeError{off, fmt.Sprintf(format, args...)}
	}
}

func (d *reader) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if n > len(d.v)-d.off {
		d.fail(d.off, "%s needs %d bytes, %d left", what, n, len(d.v)-d.off)
		return false
	}
	return true
}

func (d *reader) u16(what string) int {
	if !d.need(2, what) {
		return 0
	}
	x := binary.BigEndian.Uint16(d.v[d.off:])
	d.off += 2
	return int(x)
}

func (d *reader) u32(what string) uint32 {
	if !d.need(4, what) {
		return 0
	}
	x := binary.BigEndian.Uint32(d.v[d.off:])
	d.off += 4
	return x
}

func (d *reader) u64(what string) uint64 {
	if !d.need(8, what) {
		return 0
	}
	x := binary.BigEndian.Uint64(d.v[d.off:])
	d.off += 8
	return x
}

func (d *reader) bytes(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.v)-d.off) {
		d.fail(d.off-4, "%s of %d bytes, %d left", what, n, len(d.v)-d.off)
		return nil
	}
	b := d.v[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}

func (d *reader) string16(what string) string {
	at := d.off
	n := d.u16(what)
	if d.err != nil {
		return ""
	}
	if n > len(d.v)-d.off {
		d.fail(at, "%s of %d bytes, %d left", what, n, len(d.v)-d.off)
		return ""
	}
	s := string(d.v[d.off : d.off+n])
	d.off += n
	return s
}

// bytes32 is a uint32 length and as many bytes, copied (nil when
// empty, as encode writes nil and empty alike).
func (d *reader) bytes32(what string) []byte {
	n := d.u32(what)
	b := d.bytes(uint64(n), what)
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func decodeGroupRecordV2(v []byte) (groupRecord, error) {
	var r groupRecord
	d := &reader{v: v, off: 1}
	if !d.need(groupRecordFixedV2-1, "a version 2 group record") {
		return r, d.err
	}
	r.state = State(v[1])
	d.off = 2
	switch r.state {
	case Empty, CompletingRebalance, Stable:
	default:
		return r, &decodeError{1, fmt.Sprintf("group state %d (%s) is never written", v[1], r.state)}
	}
	r.generation = int32(d.u32("generation"))
	if r.generation < 0 {
		return r, &decodeError{2, fmt.Sprintf("negative generation %d", r.generation)}
	}
	r.emptyMs = int64(d.u64("empty-since"))
	r.protocolType = d.string16("protocol type")
	r.protocol = d.string16("protocol")
	r.leader = d.string16("leader")
	at := d.off
	n := d.u32("member count")
	if d.err != nil {
		return r, d.err
	}
	if uint64(n)*memberRecordFixed > uint64(len(v)-d.off) {
		return r, &decodeError{at, fmt.Sprintf("%d members need at least %d bytes, %d left", n, uint64(n)*memberRecordFixed, len(v)-d.off)}
	}
	if r.state == Empty && n > 0 {
		return r, &decodeError{at, fmt.Sprintf("an Empty group with %d members", n)}
	}
	if r.state != Empty && n == 0 {
		return r, &decodeError{at, fmt.Sprintf("a %s group without members", r.state)}
	}
	if n > 0 {
		r.members = make([]memberRecord, 0, n)
	}
	ids := make(map[string]bool, n)
	instances := map[string]bool{}
	leaderFound := false
	for range n {
		var m memberRecord
		at := d.off
		m.id = d.string16("member id")
		m.instanceID = d.string16("instance id")
		m.clientID = d.string16("client id")
		m.clientHost = d.string16("client host")
		m.rebalanceMs = int64(d.u64("rebalance timeout"))
		m.sessionMs = int64(d.u64("session timeout"))
		m.metadata = d.bytes32("metadata")
		m.assignment = d.bytes32("assignment")
		if d.err != nil {
			return r, d.err
		}
		switch {
		case m.id == "":
			return r, &decodeError{at, "empty member id"}
		case ids[m.id]:
			return r, &decodeError{at, fmt.Sprintf("member %q twice", m.id)}
		case m.instanceID != "" && instances[m.instanceID]:
			return r, &decodeError{at, fmt.Sprintf("instance id %q twice", m.instanceID)}
		case m.rebalanceMs < 0 || m.sessionMs < 0:
			return r, &decodeError{at, fmt.Sprintf("negative timeout (rebalance %d ms, session %d ms)", m.rebalanceMs, m.sessionMs)}
		}
		ids[m.id] = true
		if m.instanceID != "" {
			instances[m.instanceID] = true
		}
		leaderFound = leaderFound || m.id == r.leader
		r.members = append(r.members, m)
	}
	if n > 0 && !leaderFound {
		return r, &decodeError{at, fmt.Sprintf("leader %q is not a member", r.leader)}
	}
	if d.off != len(v) {
		return r, &decodeError{d.off, fmt.Sprintf("%d bytes after the last member", len(v)-d.off)}
	}
	return r, nil
}
