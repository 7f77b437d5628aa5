package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/logstore/logstore/segment"
)

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
		return fmt.Sprintf("INVALID line %d: batch too large: by record 105 it passes the store's limit of %d bytes (give fewer records per line)\n", n, segment.DefaultMaxBatchBytes)
	}
	wantRun(t, limitLine(1)+"OK base=0 last=199\nOK base=200 last=399\n"+limitLine(4), 3,
		"append", "--dir", dir, "--input", input)
	for i, b := range storeBatches(t, dir, "events", 0) {
		if n := len(decodeRecords(t, b)); n != 200 {
			t.Errorf("batch %d: %d records, want 200", i, n)
		}
	}
}
