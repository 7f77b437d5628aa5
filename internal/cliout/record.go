package cliout

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/logstore/logstore/recordbatch"
)

// AppendRecordText appends rec as a line of `logstore read`, without its
// newline:
//
//	offset=5 CreateTime=1700000000000 key=user-7 value=hello headers=[source=web,trace=null]
//
// A key, value, header key or header value is null when nil, as it is
// when it is plain (see the command's help: non-empty valid UTF-8 of
// printable characters other than spaces and , = [ ], not starting with
// " and not the word null), else a Go-quoted string. A nil header key,
// which the wire cannot carry, is the empty key "".
func AppendRecordText(dst []byte, rec *recordbatch.Record, tsType recordbatch.TimestampType) []byte {
	dst = append(dst, "offset="...)
	dst = strconv.AppendInt(dst, rec.Offset, 10)
	dst = append(dst, ' ')
	dst = append(dst, tsType.String()...)
	dst = append(dst, '=')
	dst = strconv.AppendInt(dst, rec.Timestamp, 10)
	dst = append(dst, " key="...)
	dst = appendTextBytes(dst, rec.Key)
	dst = append(dst, " value="...)
	dst = appendTextBytes(dst, rec.Value)
	dst = append(dst, " headers=["...)
	for i, h := range rec.Headers {
		if i > 0 {
			dst = append(dst, ',')
		}
		key := h.Key
		if key == nil {
			key = []byte{}
		}
		dst = appendTextBytes(dst, key)
		dst = append(dst, '=')
		dst = appendTextBytes(dst, h.Value)
	}
	return append(dst, ']')
}

// appendTextBytes appends b as AppendRecordText writes each field.
func appendTextBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	s := string(b)
	if needsQuotes(s) {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, s...)
}

func needsQuotes(s string) bool {
	if s == "" || s == "null" || s[0] == '"' || !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(",=[]", r) {
			return true
		}
	}
	return false
}
