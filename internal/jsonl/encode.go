package jsonl

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/recordbatch"
)

// AppendRecord appends rec as the record object of the format, with the
// offset and timestamp type first (a reader of the format ignores
// neither: see the package doc), and no newline:
//
//	{"offset":5,"timestampType":"CreateTime","timestamp":1700000000000,
//	 "key":"user-7","value":"hello","headers":[{"key":"source","value":"web"}]}
//
// A nil key or value is null. Bytes that are not valid UTF-8 are given
// as "keyBase64" or "valueBase64" instead, in standard base64; header
// keys and values likewise, a nil header key as "" (the wire cannot
// carry a null one).
func AppendRecord(dst []byte, rec *recordbatch.Record, tsType recordbatch.TimestampType) []byte {
	dst = append(dst, `{"offset":`...)
	dst = strconv.AppendInt(dst, rec.Offset, 10)
	dst = append(dst, `,"timestampType":`...)
	dst = strconv.AppendQuote(dst, tsType.String())
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, rec.Timestamp, 10)
	dst = append(dst, ',')
	dst = appendBytesMember(dst, "key", rec.Key)
	dst = append(dst, ',')
	dst = appendBytesMember(dst, "value", rec.Value)
	dst = append(dst, `,"headers":[`...)
	for i, h := range rec.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		key := h.Key
		if key == nil {
			key = []byte{}
		}
		dst = append(dst, '{')
		dst = appendBytesMember(dst, "key", key)
		dst = append(dst, ',')
		dst = appendBytesMember(dst, "value", h.Value)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendBytesMember appends the member "name":value for b: null, a JSON
// string when b is valid UTF-8, else "<name>Base64" with b in standard
// base64.
func appendBytesMember(dst []byte, name string, b []byte) []byte {
	switch {
	case b == nil:
		dst = strconv.AppendQuote(dst, name)
		return append(dst, ":null"...)
	case utf8.Valid(b):
		dst = strconv.AppendQuote(dst, name)
		dst = append(dst, ':')
		return cliout.AppendJSONString(dst, b)
	default:
		dst = strconv.AppendQuote(dst, name+"Base64")
		dst = append(dst, `:"`...)
		dst = base64.StdEncoding.AppendEncode(dst, b)
		return append(dst, '"')
	}
}
