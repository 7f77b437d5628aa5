package jsonl

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/logstore/logstore/recordbatch"
)

// textAdvice ends the reason of a line refused for its text.
const textAdvice = `JSON text is UTF-8: give binary keys and values as "keyBase64" and "valueBase64" (standard base64)`

// TestParseLineNotUTF8: a line whose text is not UTF-8, or escapes half
// of a surrogate pair, is refused with the bad byte as a byte and its
// position (encoding/json would store U+FFFD instead, so the stored bytes
// would differ from the line's); a syntax error at a byte that is not
// ASCII shows the byte, not a Latin-1 character.
func TestParseLineNotUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, reason string }{
		{"{\"records\":[{\"value\":\"a\xffb\"}]}", "invalid UTF-8: byte 0xff at 23; " + textAdvice},
		{"{\"records\":[{\"key\":\"\xc3\"}]}", "invalid UTF-8: byte 0xc3 at 20; " + textAdvice},
		{"{\"records\":[{\"headers\":[{\"key\":\"h\",\"value\":\"\xed\xa0\x80\"}]}]}", "invalid UTF-8: byte 0xed at 44; " + textAdvice},
		{`{"records":[{"value":"\ud800"}]}`, `invalid JSON text at byte 22: \ud800 is half of a UTF-16 surrogate pair, not a character; ` + textAdvice},
		{`{"records":[{"value":"x\\\udc00"}]}`, `invalid JSON text at byte 25: \udc00 is half of a UTF-16 surrogate pair, not a character; ` + textAdvice},
		{`{"records":[{"value":"\ud83d\u0041"}]}`, `invalid JSON text at byte 22: \ud83d is half of a UTF-16 surrogate pair, not a character; ` + textAdvice},
		{"\xc3\xa9", "invalid JSON at byte 1: byte 0xc3 at 0 looking for beginning of value"},
		{"{\"records\":[{}]}\xc3\xa9", "invalid JSON: more after the batch object (one batch per line)"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			var bld recordbatch.Builder
			if _, err := ParseLine([]byte(tc.line), Defaults{Topic: "events"}, &bld); err == nil || err.Error() != tc.reason {
				t.Fatalf("got %v, want %s", err, tc.reason)
			}
		})
	}
}

// FuzzParseLine: no line panics; a line taken is valid UTF-8 and gives
// the records encoding/json reads from it, byte for byte.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"records":[{"key":"k","value":"v","headers":[{"key":"h","value":"x"}],"timestamp":1700000000000}]}`,
		`{"topic":"t","partition":1,"producerId":3,"producerEpoch":0,"baseSequence":0,"records":[{"keyBase64":"AAE=","valueBase64":"AP8Q"}],"compression":"gzip"}`,
		`{"records":[{"value":"\ud83d\ude00\\ud800"}],"Records":[{}]}`,
		"{\"records\":[{\"value\":\"\xff\"}]}",
		`{"records":[{},{},{}]} x`,
		`null`, `[]`, `{"records":{}}`,
		`{"offset":5,"timestampType":"CreateTime","timestamp":1700000000000,"keyBase64":"/w==","value":null,"headers":[{"keyBase64":"gA==","value":"x"}]}`,
		`{"value":"v","records":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	def := Defaults{Topic: "events", Timestamp: 1}
	f.Fuzz(func(t *testing.T, line []byte) {
		var bld recordbatch.Builder
		spec, err := ParseLine(line, def, &bld)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty reason")
			}
			return
		}
		if !utf8.Valid(line) {
			t.Fatalf("took a line that is not UTF-8: %q", line)
		}
		raw, err := spec.Build(&bld, nil)
		if err != nil {
			return // e.g. a producer id without a sequence: refused by the store
		}
		b, err := recordbatch.Parse(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.DecodeRecords(recordbatch.DefaultMaxRecordsBytes)
		if err != nil {
			t.Fatal(err)
		}
		// Each record decoded afresh (encoding/json would decode a
		// repeated "records" into the first one's structs).
		var ref struct{ Records []json.RawMessage }
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("encoding/json refuses a line taken: %v", err)
		}
		if len(ref.Records) == 0 {
			ref.Records = []json.RawMessage{line} // a line that is one record
		}
		if len(got) != len(ref.Records) {
			t.Fatalf("%d records, encoding/json reads %d", len(got), len(ref.Records))
		}
		for i, raw := range ref.Records {
			var jr jsonRecord
			if err := json.Unmarshal(raw, &jr); err != nil {
				t.Fatal(err)
			}
			want, err := jr.spec(def.Timestamp)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[i].Key, want.Key) || (got[i].Key == nil) != (want.Key == nil) ||
				!bytes.Equal(got[i].Value, want.Value) || (got[i].Value == nil) != (want.Value == nil) ||
				len(got[i].Headers) != len(want.Headers) {
				t.Fatalf("record %d: key %q value %q, encoding/json reads %q %q", i, got[i].Key, got[i].Value, want.Key, want.Value)
			}
		}
	})
}

// TestAppendRecordRoundTrip: each line AppendRecord writes is a line
// ParseLine takes as one record, with the same key, value, headers and
// timestamp, binary and null included.
func TestAppendRecordRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []recordbatch.Record{
		{Offset: 5, Timestamp: 1700000000000, Key: []byte("user-7"), Value: []byte("hello"),
			Headers: []recordbatch.RecordHeader{{Key: []byte("source"), Value: []byte("web")}, {Key: []byte("trace")}}},
		{Offset: 6, Timestamp: -1},
		{Offset: 7, Timestamp: 3, Key: []byte{0xff}, Value: []byte{0, 0xff, 0x10},
			Headers: []recordbatch.RecordHeader{{Key: []byte{0x80}, Value: []byte{0x81}}, {Value: []byte("")}}},
		{Offset: 8, Timestamp: 4, Key: []byte(""), Value: []byte("tab\there \"quoted\" \u2028 \x7f")},
	}
	for _, rec := range recs {
		line := AppendRecord(nil, &rec, recordbatch.LogAppendTime)
		if !json.Valid(line) {
			t.Fatalf("not JSON: %s", line)
		}
		var bld recordbatch.Builder
		spec, err := ParseLine(line, Defaults{Topic: "events", Timestamp: 99}, &bld)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		raw, err := spec.Build(&bld, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := recordbatch.Parse(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.DecodeRecords(recordbatch.DefaultMaxRecordsBytes)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %d records, %v", line, len(got), err)
		}
		g := got[0]
		if g.Timestamp != rec.Timestamp || !sameBytes(g.Key, rec.Key) || !sameBytes(g.Value, rec.Value) || len(g.Headers) != len(rec.Headers) {
			t.Fatalf("%s: got %+v", line, g)
		}
		for i, h := range rec.Headers {
			if !bytes.Equal(g.Headers[i].Key, h.Key) || !sameBytes(g.Headers[i].Value, h.Value) {
				t.Fatalf("%s: header %d: got %q=%q", line, i, g.Headers[i].Key, g.Headers[i].Value)
			}
		}
	}
}

// sameBytes says a and b hold the same bytes and are both null or not.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

// TestParseRecordLine: a line that is one record object is a batch of
// that record; mixing it with batch fields, or a timestampType that
// names no type, is refused.
func TestParseRecordLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, reason string }{
		{`{"value":"v","records":[{}]}`, `invalid JSON: a line is a batch object (with "records") or one record object, not both`},
		{`{"topic":"t","value":"v"}`, `invalid JSON: a line is a batch object (with "records") or one record object, not both`},
		{`{"value":"v","timestampType":"Later"}`, `record 1: timestampType "Later": want CreateTime or LogAppendTime`},
		{`{"offset":"x"}`, `invalid JSON: field "offset": a string where an integer belongs`},
		{`{"records":[{"offset":1,"value":"v","headers":[{"key":"a","keyBase64":"YQ=="}]}]}`, `record 1: header 1: both "key" and "keyBase64" are given`},
	} {
		var bld recordbatch.Builder
		if _, err := ParseLine([]byte(tc.line), Defaults{Topic: "events"}, &bld); err == nil || err.Error() != tc.reason {
			t.Errorf("%s: got %v, want %s", tc.line, err, tc.reason)
		}
	}
	var bld recordbatch.Builder
	spec, err := ParseLine([]byte(`{"offset":17,"timestampType":"CreateTime","timestamp":5,"value":"v"}`), Defaults{Topic: "events"}, &bld)
	if err != nil || bld.Len() != 1 || spec.Topic != "events" {
		t.Fatalf("record line: %v, %d records", err, bld.Len())
	}
}
