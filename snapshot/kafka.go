package snapshot

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// Kafka's producer snapshot file (storage/src/main/resources/message/
// ProducerSnapshot.json, written version-prefixed). Part of Kafka's
// on-disk format: never change.
const (
	// KafkaSnapshotVersion is the only version Kafka writes and reads.
	KafkaSnapshotVersion = 1
	// KafkaEntrySize is the size of one entry.
	KafkaEntrySize = 46
	// KafkaHeaderSize is the size of version, CRC and entry count.
	KafkaHeaderSize = 10

	kafkaCRCPos   = 2
	kafkaCountPos = 6 // the CRC covers [6, end of file)

	// KafkaSnapshotSuffix ends a snapshot file's name.
	KafkaSnapshotSuffix = ".snapshot"
)

// KafkaEntry is one producer in a Kafka snapshot file, field for field.
// Kafka keeps only the producer's newest batch: LastSequence, LastOffset
// and OffsetDelta (= its last offset − its first offset) describe it, and
// LastOffset < 0 means there is none. CurrentTxnFirstOffset < 0 means no
// open transaction.
type KafkaEntry struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastOffset            int64
	OffsetDelta           int32
	Timestamp             int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

// Kafka's CorruptSnapshotException texts (ProducerStateManager.readSnapshot
// and the generated ProducerSnapshot reader). A Java buffer underflow has
// no message, so Kafka prints "null".
const (
	kafkaSchemaPrefix = "Snapshot failed schema validation: "
	kafkaUnderflow    = kafkaSchemaPrefix + "null"
)

func kafkaError(pos int, sentinel error, msg string) error {
	return &KafkaSnapshotError{Msg: msg, Pos: pos, Err: sentinel}
}

// ReadKafka reads a Kafka <offset>.snapshot file's bytes, checking them in
// Kafka's order: the version, the structure, then the CRC over everything
// after byte 6 (so trailing bytes fail the CRC, as in Kafka, unless the
// CRC covers them). Entries come in file order. A file Kafka would refuse
// gives a *KafkaSnapshotError carrying Kafka's message.
func ReadKafka(data []byte) ([]KafkaEntry, error) {
	if len(data) < 2 {
		return nil, kafkaError(len(data), ErrCorrupt, kafkaUnderflow)
	}
	if v := int16(binary.BigEndian.Uint16(data)); v != KafkaSnapshotVersion {
		return nil, kafkaError(0, ErrVersion, fmt.Sprintf("%sSnapshot contained an unknown file version %d", kafkaSchemaPrefix, v))
	}
	if len(data) < KafkaHeaderSize {
		return nil, kafkaError(len(data), ErrCorrupt, kafkaUnderflow)
	}
	count := int32(binary.BigEndian.Uint32(data[kafkaCountPos:]))
	remaining := len(data) - KafkaHeaderSize
	switch {
	case count < 0:
		return nil, kafkaError(kafkaCountPos, ErrCorrupt, kafkaSchemaPrefix+"non-nullable field producerEntries was serialized as null")
	case int64(count) > int64(remaining):
		return nil, kafkaError(kafkaCountPos, ErrCorrupt, fmt.Sprintf(
			"%sTried to allocate a collection of size %d, but there are only %d bytes remaining.", kafkaSchemaPrefix, count, remaining))
	case int64(count)*KafkaEntrySize > int64(remaining):
		// The first entry that does not fit is where Java's reader underflows.
		return nil, kafkaError(KafkaHeaderSize+remaining/KafkaEntrySize*KafkaEntrySize, ErrCorrupt, kafkaUnderflow)
	}
	stored := binary.BigEndian.Uint32(data[kafkaCRCPos:])
	if sum := recordbatch.Checksum(data[kafkaCountPos:]); sum != stored {
		return nil, kafkaError(kafkaCRCPos, ErrCorrupt, fmt.Sprintf(
			"Snapshot is corrupt (CRC is no longer valid). Stored crc: %d. Computed crc: %d", stored, sum))
	}
	if count == 0 {
		return nil, nil
	}
	entries := make([]KafkaEntry, count)
	p := data[KafkaHeaderSize:]
	for i := range entries {
		e := p[i*KafkaEntrySize : (i+1)*KafkaEntrySize]
		entries[i] = KafkaEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(e[0:])),
			Epoch:                 int16(binary.BigEndian.Uint16(e[8:])),
			LastSequence:          int32(binary.BigEndian.Uint32(e[10:])),
			LastOffset:            int64(binary.BigEndian.Uint64(e[14:])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(e[22:])),
			Timestamp:             int64(binary.BigEndian.Uint64(e[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:])),
		}
	}
	return entries, nil
}

// AppendKafka appends a Kafka snapshot file holding entries, in the given
// order, to dst: the bytes Kafka's writeSnapshot produces for them.
func AppendKafka(dst []byte, entries []KafkaEntry) []byte {
	start := len(dst)
	dst = slices.Grow(dst, KafkaHeaderSize+KafkaEntrySize*len(entries))
	dst = binary.BigEndian.AppendUint16(dst, KafkaSnapshotVersion)
	dst = append(dst, 0, 0, 0, 0) // CRC, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(entries)))
	for _, e := range entries {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.Epoch))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.LastSequence))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.OffsetDelta))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Timestamp))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.CoordinatorEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(dst[start+kafkaCRCPos:], recordbatch.Checksum(dst[start+kafkaCountPos:]))
	return dst
}

// Entry is the producer state Kafka restores from k: its epoch,
// coordinator epoch and open transaction, Timestamp as the last
// timestamp, LastOffset as the last applied offset (no seen time), and,
// when LastOffset >= 0, a window of the one batch k describes, with its
// first sequence and offset derived as Kafka derives them (the sequence
// wrapping past 2147483647).
func (k KafkaEntry) Entry() producerstate.Entry {
	e := producerstate.Entry{
		ProducerID:       k.ProducerID,
		Epoch:            k.Epoch,
		CoordinatorEpoch: k.CoordinatorEpoch,
		TxnFirstOffset:   -1,
		LastTimestamp:    k.Timestamp,
		LastApplied:      k.LastOffset,
	}
	if k.CurrentTxnFirstOffset >= 0 {
		e.TxnFirstOffset = k.CurrentTxnFirstOffset
	}
	if k.LastOffset >= 0 {
		e.Batches = []producerstate.BatchMeta{{
			FirstSeq:    recordbatch.DecrementSequence(k.LastSequence, k.OffsetDelta),
			LastSeq:     k.LastSequence,
			FirstOffset: k.LastOffset - int64(k.OffsetDelta),
			LastOffset:  k.LastOffset,
			Timestamp:   k.Timestamp,
		}}
	}
	return e
}

// KafkaEntryOf is what Kafka writes for e: only its newest batch, or
// LastSequence -1, LastOffset -1 and OffsetDelta 0 when its window is
// empty; its last timestamp; -1 for no open transaction.
func KafkaEntryOf(e producerstate.Entry) KafkaEntry {
	k := KafkaEntry{
		ProducerID:            e.ProducerID,
		Epoch:                 e.Epoch,
		LastSequence:          -1,
		LastOffset:            -1,
		Timestamp:             e.LastTimestamp,
		CoordinatorEpoch:      e.CoordinatorEpoch,
		CurrentTxnFirstOffset: -1,
	}
	if e.TxnFirstOffset >= 0 {
		k.CurrentTxnFirstOffset = e.TxnFirstOffset
	}
	if n := len(e.Batches); n > 0 {
		b := e.Batches[n-1]
		k.LastSequence = b.LastSeq
		k.LastOffset = b.LastOffset
		k.OffsetDelta = int32(b.LastOffset - b.FirstOffset)
	}
	return k
}

// KafkaEntriesOf converts every producer of snap (in its order) with
// KafkaEntryOf.
func KafkaEntriesOf(snap producerstate.Snapshot) []KafkaEntry {
	entries := make([]KafkaEntry, len(snap.Producers))
	for i, e := range snap.Producers {
		entries[i] = KafkaEntryOf(e)
	}
	return entries
}

// SnapshotFromKafka is the state Kafka loads from a snapshot file at
// offset: the producers sorted by id and, if an id appears twice, the
// later entry kept (Kafka puts each into a map in file order). It does
// not drop expired producers; that is the state machine's business.
func SnapshotFromKafka(offset int64, entries []KafkaEntry) producerstate.Snapshot {
	snap := producerstate.Snapshot{Offset: offset}
	if len(entries) == 0 {
		return snap
	}
	ps := make([]producerstate.Entry, len(entries))
	for i, k := range entries {
		ps[i] = k.Entry()
	}
	// A stable sort keeps file order among equal ids; keep the last.
	slices.SortStableFunc(ps, func(a, b producerstate.Entry) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	out := ps[:0]
	for i := range ps {
		if i+1 < len(ps) && ps[i+1].ProducerID == ps[i].ProducerID {
			continue
		}
		out = append(out, ps[i])
	}
	snap.Producers = out
	return snap
}

// KafkaSnapshotName is the file name Kafka gives the snapshot at offset:
// 20 zero-padded digits and ".snapshot" (offset >= 0).
func KafkaSnapshotName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, KafkaSnapshotSuffix)
}

// ParseKafkaSnapshotName returns the offset a snapshot file name holds:
// the decimal digits before ".snapshot" (Kafka writes 20; fewer read the
// same, as Kafka's parseLong reads them). It returns false for any other
// name, a ".snapshot.deleted" file among them.
func ParseKafkaSnapshotName(name string) (int64, bool) {
	prefix, rest, found := strings.Cut(name, ".")
	if !found || "."+rest != KafkaSnapshotSuffix || prefix == "" {
		return 0, false
	}
	for _, c := range prefix {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(prefix, 10, 64)
	if err != nil {
		return 0, false
	}
	return off, true
}
