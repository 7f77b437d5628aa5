package recordbatch

import "encoding/binary"

// Framing of batches laid end to end in a file, as Kafka's
// FileLogInputStream.nextBatch does it. Every reader of segment files
// frames with NextFrame, so the stop rules live here once.
const (
	// HeaderSizeUpToMagic is Kafka's HEADER_SIZE_UP_TO_MAGIC: base offset,
	// length and partition leader epoch, then the magic byte. It is what
	// a file reader reads before it trusts anything else of a batch.
	HeaderSizeUpToMagic = magicOffset + 1
	// MinRecordOverhead is LegacyRecord.RECORD_OVERHEAD_V0, the smallest
	// length field Kafka's file iterator accepts; a smaller one is
	// corruption the file cannot be read past.
	MinRecordOverhead = 14
)

// FrameStop says whether file iteration goes on at a position, and if
// not, why it stops there.
type FrameStop uint8

const (
	// FrameOK: a batch is framed; its Size bytes are all in the file.
	FrameOK FrameStop = iota
	// FrameShortTail: HeaderSizeUpToMagic bytes or fewer are left.
	// Kafka's iterator ends quietly; at the end of a segment it is a torn
	// write.
	FrameShortTail
	// FrameTooSmall: the length field is below MinRecordOverhead. Kafka
	// throws a CorruptRecordException; nothing past it can be framed.
	FrameTooSmall
	// FramePastEnd: the batch runs past the end of the file. Kafka's
	// iterator ends quietly; at the end of a segment it is a torn write.
	FramePastEnd
)

// Frame is one batch's place in a file, read from its first
// HeaderSizeUpToMagic bytes.
type Frame struct {
	Length int32 // the length field
	Size   int64 // Length + LogOverhead: the bytes the batch takes
	Magic  int8  // the format version; only Magic is a record batch
}

// HasFrameHead reports whether a batch may start where left bytes of the
// file remain: Kafka's first stop rule. A reader that reads before it
// frames may use it to skip the read; NextFrame applies it as well.
func HasFrameHead(left int64) bool { return left > HeaderSizeUpToMagic }

// NextFrame frames the batch that starts where left bytes of the file
// remain (left may be math.MaxInt64 for a stream of unknown length).
// head holds the batch's first bytes: at least HeaderSizeUpToMagic of
// them whenever HasFrameHead(left). The stop rules, in Kafka's order:
// too few bytes for a header (FrameShortTail), a length field below
// MinRecordOverhead (FrameTooSmall), a batch that runs past the end
// (FramePastEnd). The magic byte is returned unchecked: what a reader
// does with an older or unknown format is its own business. The Frame
// holds what was read up to the stop (Length and Size from
// FrameTooSmall on).
func NextFrame(head []byte, left int64) (Frame, FrameStop) {
	if !HasFrameHead(left) {
		return Frame{}, FrameShortTail
	}
	length := int32(binary.BigEndian.Uint32(head[lengthOffset:]))
	f := Frame{Length: length, Size: int64(length) + LogOverhead, Magic: int8(head[magicOffset])}
	switch {
	case length < MinRecordOverhead:
		return f, FrameTooSmall
	case f.Size > left:
		return f, FramePastEnd
	}
	return f, FrameOK
}
