package recordbatch

import "strconv"

// Attributes is the batch attributes field. Only its low byte carries
// meaning, as in Kafka (bits 7..15 are unused and ignored on read).
type Attributes int16

// Attribute bits. These constants are part of the wire format; never change them.
const (
	codecMask         Attributes = 0x07
	timestampTypeMask Attributes = 0x08
	transactionalFlag Attributes = 0x10
	controlFlag       Attributes = 0x20
	deleteHorizonFlag Attributes = 0x40
)

// Codec is a compression codec id, bits 0..2 of the attributes.
type Codec int8

// Codec ids. Part of the wire format; never change them.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= 0 && int(c) < len(codecNames) }

// String returns Kafka's name of the codec (CompressionType.name), or
// "unknown(N)".
func (c Codec) String() string {
	if c.Valid() {
		return codecNames[c]
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// ParseCodec maps Kafka's codec name to its id.
func ParseCodec(name string) (Codec, bool) {
	for i, n := range codecNames {
		if n == name {
			return Codec(i), true
		}
	}
	return 0, false
}

// TimestampType says whether record timestamps are the producer's
// (CreateTime) or the broker's (LogAppendTime).
type TimestampType int8

// Timestamp types, as Kafka numbers them.
const (
	NoTimestampType TimestampType = -1
	CreateTime      TimestampType = 0
	LogAppendTime   TimestampType = 1
)

// String returns Kafka's name: CreateTime, LogAppendTime or NoTimestampType.
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	default:
		return "NoTimestampType"
	}
}

// Codec returns the compression codec. It may be invalid (5..7); Validate
// reports that as ErrUnknownCodec.
func (a Attributes) Codec() Codec { return Codec(a & codecMask) }

// TimestampType returns CreateTime or LogAppendTime.
func (a Attributes) TimestampType() TimestampType {
	if a&timestampTypeMask != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// Transactional reports bit 4.
func (a Attributes) Transactional() bool { return a&transactionalFlag != 0 }

// Control reports bit 5: the batch holds control records (markers).
func (a Attributes) Control() bool { return a&controlFlag != 0 }

// HasDeleteHorizon reports bit 6: baseTimestamp holds the delete horizon
// that log compaction set.
func (a Attributes) HasDeleteHorizon() bool { return a&deleteHorizonFlag != 0 }

// MakeAttributes builds the attributes field from its parts.
func MakeAttributes(codec Codec, ts TimestampType, transactional, control, deleteHorizon bool) Attributes {
	a := Attributes(codec) & codecMask
	if ts == LogAppendTime {
		a |= timestampTypeMask
	}
	if transactional {
		a |= transactionalFlag
	}
	if control {
		a |= controlFlag
	}
	if deleteHorizon {
		a |= deleteHorizonFlag
	}
	return a
}
