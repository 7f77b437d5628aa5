package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logstore/logstore/recordbatch"
)

// textAdvice ends the reason of a line refused for its text.
const textAdvice = `JSON text is UTF-8: give binary keys and values as "keyBase64" and "valueBase64" (standard base64)`

// TestAppendLineNotUTF8: a line whose text is not UTF-8, or escapes half
// of a surrogate pair, is refused with the bad byte as a byte and its
// position (encoding/json would store U+FFFD instead, so the stored bytes
// would differ from the line's); a syntax error at a byte that is not
// ASCII shows the byte, not a Latin-1 character.
func TestAppendLineNotUTF8(t *testing.T) {
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
			wantLineRefused(t, tc.line, tc.reason)
		})
	}
}

// TestAppendLineUTF8Kept: valid text, escaped or not, is stored as the
// UTF-8 the line spells; an escaped backslash before "u" is no escape.
func TestAppendLineUTF8Kept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := writeFile(t, "in.jsonl", `{"records":[{"key":"é","value":"\ud83d\ude00","headers":[{"key":"\u00e9","value":"\\ud800"}]}]}`+"\n")
	wantRun(t, "OK base=0 last=0\n", 0, "append", "--dir", dir, "--input", input)
	recs := decodeRecords(t, storeBatches(t, dir, "events", 0)[0])
	r := recs[0]
	if string(r.Key) != "é" || !bytes.Equal(r.Value, []byte{0xf0, 0x9f, 0x98, 0x80}) ||
		len(r.Headers) != 1 || string(r.Headers[0].Key) != "é" || string(r.Headers[0].Value) != `\ud800` {
		t.Errorf("stored key %q value %x headers %q", r.Key, r.Value, r.Headers)
	}
}

// TestAppendLineBatchLimit: a line whose batch passes the store's limit
// without compression is refused as it is built, naming the record that
// passed it; with compression the limit is the compressed size, so the
// same records are taken, whether "compression" comes before the records
// or after them.
func TestAppendLineBatchLimit(t *testing.T) {
	t.Parallel()
	var recs []string
	for range 200 {
		recs = append(recs, `{"value":"`+strings.Repeat("a", 10000)+`","timestamp":1700000000000}`)
	}
	records := `"records":[` + strings.Join(recs, ",") + `]`
	dir := t.TempDir()
	input := writeFile(t, "in.jsonl", strings.Join([]string{
		"{" + records + "}",
		`{"compression":"zstd",` + records + "}",
		"{" + records + `,"compression":"zstd"}`,
		"{" + records + `,"compression":"none"}`,
	}, "\n")+"\n")
	limitLine := func(n int) string {
		return fmt.Sprintf("INVALID line %d: batch too large: by record 105 it passes the store's limit of %d bytes (give fewer records per line)\n", n, maxBatchBytes)
	}
	wantRun(t, limitLine(1)+"OK base=0 last=199\nOK base=200 last=399\n"+limitLine(4), 3,
		"append", "--dir", dir, "--input", input)
	for i, b := range storeBatches(t, dir, "events", 0) {
		if n := len(decodeRecords(t, b)); n != 200 {
			t.Errorf("batch %d: %d records, want 200", i, n)
		}
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
	} {
		f.Add([]byte(s))
	}
	def := lineDefaults{topic: "events", codec: 0, timestamp: 1}
	f.Fuzz(func(t *testing.T, line []byte) {
		var bld recordbatch.Builder
		spec, err := parseLine(line, def, &bld)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty reason")
			}
			return
		}
		if !utf8.Valid(line) {
			t.Fatalf("took a line that is not UTF-8: %q", line)
		}
		raw, err := spec.build(&bld, nil)
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
		if len(got) != len(ref.Records) {
			t.Fatalf("%d records, encoding/json reads %d", len(got), len(ref.Records))
		}
		for i, raw := range ref.Records {
			var jr jsonRecord
			if err := json.Unmarshal(raw, &jr); err != nil {
				t.Fatal(err)
			}
			want, err := jr.spec(def.timestamp)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[i].Key, want.key) || (got[i].Key == nil) != (want.key == nil) ||
				!bytes.Equal(got[i].Value, want.value) || (got[i].Value == nil) != (want.value == nil) ||
				len(got[i].Headers) != len(want.headers) {
				t.Fatalf("record %d: key %q value %q, encoding/json reads %q %q", i, got[i].Key, got[i].Value, want.key, want.value)
			}
		}
	})
}
