package kafkadump

// The JSON Lines output (Options.JSON), and the Decoder choices. Lines are appended by hand, field by field, so
// the key order is fixed and a dump of a large segment allocates nothing
// per record.

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/recordbatch"
)

// Decoder is how keys, values and header values are printed.
type Decoder int

const (
	DecodeString Decoder = iota // new String(bytes, UTF_8), as Kafka's StringDecoder
	DecodeHex                   // lower-case hex
	DecodeBase64                // standard base64, padded
)

// ParseDecoder returns the Decoder named string, hex or base64.
func ParseDecoder(name string) (Decoder, bool) {
	switch name {
	case "string":
		return DecodeString, true
	case "hex":
		return DecodeHex, true
	case "base64":
		return DecodeBase64, true
	}
	return 0, false
}

// appendText appends b decoded for Kafka's text output.
func (c Decoder) appendText(dst, b []byte) []byte {
	switch c {
	case DecodeHex:
		return hex.AppendEncode(dst, b)
	case DecodeBase64:
		return base64.StdEncoding.AppendEncode(dst, b)
	default:
		return appendJavaString(dst, b)
	}
}

// appendJSON appends b decoded as a JSON string, or null for nil.
func (c Decoder) appendJSON(dst, b []byte) []byte {
	switch {
	case b == nil:
		return append(dst, "null"...)
	case c == DecodeString:
		return dumpJSONQuoteJava(dst, b)
	}
	dst = append(dst, '"')
	dst = c.appendText(dst, b) // hex and base64 need no escaping
	return append(dst, '"')
}

// djBegin starts a line: {"type":typ,"file":file.
func djBegin(dst []byte, typ, file string) []byte {
	dst = append(dst, `{"type":`...)
	dst = dumpJSONQuote(dst, typ)
	dst = append(dst, `,"file":`...)
	return dumpJSONQuote(dst, file)
}

// djEnd closes the line.
func djEnd(dst []byte) []byte { return append(dst, '}', '\n') }

// djKey appends ,"key": (keys are plain ASCII identifiers).
func djKey(dst []byte, key string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

func djInt(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(djKey(dst, key), v, 10)
}

func djUint(dst []byte, key string, v uint64) []byte {
	return strconv.AppendUint(djKey(dst, key), v, 10)
}

func djBool(dst []byte, key string, v bool) []byte {
	return strconv.AppendBool(djKey(dst, key), v)
}

func djString(dst []byte, key, v string) []byte {
	return dumpJSONQuote(djKey(dst, key), v)
}

// djOptional appends v, or null when it is absent.
func djOptional(dst []byte, key string, v int64, ok bool) []byte {
	if !ok {
		return append(djKey(dst, key), "null"...)
	}
	return djInt(dst, key, v)
}

// dumpJSONQuote appends s as a JSON string, each malformed UTF-8 byte
// replaced by U+FFFD.
func dumpJSONQuote(dst []byte, s string) []byte {
	return cliout.AppendJSONString(dst, s)
}

// dumpJSONQuoteJava appends b as a JSON string of what Java's
// new String(b, UTF_8) holds: malformed sequences replaced as
// appendJavaString replaces them.
func dumpJSONQuoteJava(dst, b []byte) []byte {
	return cliout.AppendJSONStringFunc(dst, b, javaMalformedLen)
}

// dumpBatchJSON formats a batch line: the fields of Kafka's batch line
// under the same names, the codec as "compression".
func dumpBatchJSON(dst []byte, file string, b recordbatch.Batch, pos int64, valid bool) []byte {
	attrs := b.Attributes()
	dst = djBegin(dst, "batch", file)
	dst = djInt(dst, "position", pos)
	dst = djInt(dst, "baseOffset", b.BaseOffset())
	dst = djInt(dst, "lastOffset", b.LastOffset())
	dst = djInt(dst, "count", int64(b.NumRecords()))
	dst = djInt(dst, "baseSequence", int64(b.BaseSequence()))
	dst = djInt(dst, "lastSequence", int64(b.LastSequence()))
	dst = djInt(dst, "producerId", b.ProducerID())
	dst = djInt(dst, "producerEpoch", int64(b.ProducerEpoch()))
	dst = djInt(dst, "partitionLeaderEpoch", int64(b.PartitionLeaderEpoch()))
	dst = djBool(dst, "isTransactional", attrs.Transactional())
	dst = djBool(dst, "isControl", attrs.Control())
	h, ok := b.DeleteHorizonMs()
	dst = djOptional(dst, "deleteHorizonMs", h, ok)
	dst = djString(dst, "timestampType", attrs.TimestampType().String())
	dst = djInt(dst, "maxTimestamp", b.MaxTimestamp())
	dst = djInt(dst, "size", int64(b.Size()))
	dst = djInt(dst, "magic", int64(b.Magic()))
	dst = djString(dst, "compression", attrs.Codec().String())
	dst = djUint(dst, "crc", uint64(b.CRC()))
	dst = djBool(dst, "isValid", valid)
	return djEnd(dst)
}

// appendRecordJSON formats a record line: its metadata, what a control
// record holds, and with --print-data-log its key, value and headers.
func (d *dumper) appendRecordJSON(dst []byte, file string, b recordbatch.Batch, rec *recordbatch.Record) ([]byte, error) {
	dst = djBegin(dst, "record", file)
	dst = djInt(dst, "offset", rec.Offset)
	dst = djInt(dst, "timestamp", rec.Timestamp)
	dst = djInt(dst, "keySize", int64(nullableLen(rec.Key)))
	dst = djInt(dst, "valueSize", int64(nullableLen(rec.Value)))
	dst = djInt(dst, "sequence", int64(rec.Sequence))
	dst = append(djKey(dst, "headerKeys"), '[')
	for i, h := range rec.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = dumpJSONQuoteJava(dst, h.Key)
	}
	dst = append(dst, ']')
	control := b.Attributes().Control()
	if control {
		t, err := recordbatch.ParseControlKey(rec.Key)
		if err != nil {
			return dst, fmt.Errorf("control record at offset %d: %w", rec.Offset, err)
		}
		dst = djString(dst, "controlType", t.String())
		dst = djInt(dst, "controlTypeId", int64(int16(binary.BigEndian.Uint16(rec.Key[2:4]))))
		if t == recordbatch.ControlAbort || t == recordbatch.ControlCommit {
			m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
			if err != nil {
				return dst, fmt.Errorf("control record at offset %d: %w", rec.Offset, err)
			}
			dst = djInt(dst, "coordinatorEpoch", int64(m.CoordinatorEpoch))
		}
	}
	if d.opts.PrintDataLog && !control {
		dst = d.opts.KeyDecoder.appendJSON(djKey(dst, "key"), rec.Key)
		dst = d.opts.ValueDecoder.appendJSON(djKey(dst, "value"), rec.Value)
		dst = append(djKey(dst, "headers"), '[')
		for i, h := range rec.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = dumpJSONQuoteJava(dst, h.Key)
			dst = append(dst, `,"value":`...)
			dst = d.opts.ValueDecoder.appendJSON(dst, h.Value)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return djEnd(dst), nil
}
