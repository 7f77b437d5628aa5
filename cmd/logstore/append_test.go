package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// storeBatches reads back every batch of a partition, as copies.
func storeBatches(t *testing.T, dir, topic string, partition int32) []recordbatch.Batch {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	var out []recordbatch.Batch
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			out = append(out, recordbatch.Batch(bytes.Clone(b)))
			data = data[b.Size():]
			off = b.LastOffset() + 1
		}
	}
	return out
}

func decodeRecords(t *testing.T, b recordbatch.Batch) []recordbatch.Record {
	t.Helper()
	recs, err := b.DecodeRecords(recordbatch.DefaultMaxRecordsBytes)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// wantRun runs the command and checks its stdout and exit status.
func wantRun(t *testing.T, wantOut string, wantCode int, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if out != wantOut || code != wantCode {
		t.Fatalf("logstore %s\nexit %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, wantOut, errOut)
	}
	return errOut
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// producerChecksWired reports whether Partition.Append checks producer
// sequences yet: a first batch of an unknown producer that does not start
// at sequence 0 is OUT_OF_ORDER once it does.
func producerChecksWired(t *testing.T) bool {
	t.Helper()
	s, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("probe", 0)
	if err != nil {
		t.Fatal(err)
	}
	bld := recordbatch.NewBuilder(0)
	bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 1, 0, 5
	if err := bld.Append(1700000000000, nil, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	b, err := bld.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Append(b)
	return errors.Is(err, logstore.ErrOutOfOrder)
}

func TestAppendPlain(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	if errOut := wantRun(t, "OK base=0 last=1\n", 0, "append", "--dir", dir, "hello", "world"); errOut != "" {
		t.Errorf("stderr: %q", errOut)
	}
	wantRun(t, "OK base=2 last=4\n", 0, "append", "--dir", dir, "again", "and", "")

	bs := storeBatches(t, dir, "events", 0)
	if len(bs) != 2 {
		t.Fatalf("%d batches, want 2", len(bs))
	}
	var values []string
	for _, b := range bs {
		if b.HasProducerID() || b.Attributes().Codec() != recordbatch.CodecNone || b.Attributes().Transactional() {
			t.Errorf("batch at %d: producer %d, codec %s, transactional %v; want a plain batch", b.BaseOffset(), b.ProducerID(), b.Attributes().Codec(), b.Attributes().Transactional())
		}
		for _, r := range decodeRecords(t, b) {
			if r.Key != nil || r.Headers != nil {
				t.Errorf("offset %d: key %q, headers %v; want null key and no headers", r.Offset, r.Key, r.Headers)
			}
			values = append(values, string(r.Value))
		}
	}
	if want := []string{"hello", "world", "again", "and", ""}; !slices.Equal(values, want) {
		t.Errorf("values %q, want %q", values, want)
	}
}

func TestAppendDefaultDir(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	t.Setenv(envStoreDir, "")
	wantRun(t, "OK base=0 last=0\n", 0, "append", "x")
	if got := storeBatches(t, filepath.Join(wd, "logstore-data"), "events", 0); len(got) != 1 {
		t.Errorf("./logstore-data/events-0 holds %d batches, want 1", len(got))
	}

	env := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(envStoreDir, env)
	wantRun(t, "OK base=0 last=0\n", 0, "append", "y")
	if got := storeBatches(t, env, "events", 0); len(got) != 1 {
		t.Errorf("$%s/events-0 holds %d batches, want 1", envStoreDir, len(got))
	}
	// --dir wins over the environment.
	flag := filepath.Join(t.TempDir(), "flag")
	wantRun(t, "OK base=0 last=0\n", 0, "append", "--dir", flag, "z")
	if got := storeBatches(t, env, "events", 0); len(got) != 1 {
		t.Errorf("$%s/events-0 holds %d batches after an append to --dir, want 1", envStoreDir, len(got))
	}
}

func TestAppendFlagsMakeTheBatch(t *testing.T) {
	t.Parallel()
	const ts = 1700000000123
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wantRun(t, "OK base=0 last=2\n", 0, "append", "--dir", dir, "--topic", "orders", "--partition", "3",
				"--key", "user-7", "--header", "source=web", "--header", "empty=", "--header", "eq=a=b",
				"--timestamp", fmt.Sprint(ts), "--compression", codec,
				"--producer-id", "42", "--producer-epoch", "3", "--base-sequence", "0", "--transactional",
				"one", "two", "three")
			bs := storeBatches(t, dir, "orders", 3)
			if len(bs) != 1 {
				t.Fatalf("%d batches, want 1", len(bs))
			}
			b := bs[0]
			wantCodec, _ := recordbatch.ParseCodec(codec)
			a := b.Attributes()
			if a.Codec() != wantCodec || !a.Transactional() || a.Control() || a.TimestampType() != recordbatch.CreateTime {
				t.Errorf("attributes: codec %s transactional %v control %v %s", a.Codec(), a.Transactional(), a.Control(), a.TimestampType())
			}
			if b.ProducerID() != 42 || b.ProducerEpoch() != 3 || b.BaseSequence() != 0 || b.LastSequence() != 2 {
				t.Errorf("producer %d epoch %d sequences %d..%d, want 42, 3, 0..2", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.LastSequence())
			}
			if b.BaseTimestamp() != ts || b.MaxTimestamp() != ts {
				t.Errorf("timestamps %d, %d, want %d", b.BaseTimestamp(), b.MaxTimestamp(), ts)
			}
			wantHeaders := []recordbatch.RecordHeader{
				{Key: []byte("source"), Value: []byte("web")},
				{Key: []byte("empty"), Value: []byte{}},
				{Key: []byte("eq"), Value: []byte("a=b")},
			}
			recs := decodeRecords(t, b)
			for i, want := range []string{"one", "two", "three"} {
				r := recs[i]
				if string(r.Value) != want || string(r.Key) != "user-7" || r.Timestamp != ts || r.Offset != int64(i) || r.Sequence != int32(i) {
					t.Errorf("record %d: offset %d seq %d ts %d key %q value %q", i, r.Offset, r.Sequence, r.Timestamp, r.Key, r.Value)
				}
				if !equalHeaders(r.Headers, wantHeaders) {
					t.Errorf("record %d: headers %q, want %q", i, r.Headers, wantHeaders)
				}
			}
		})
	}
}

func equalHeaders(a, b []recordbatch.RecordHeader) bool {
	return slices.EqualFunc(a, b, func(x, y recordbatch.RecordHeader) bool {
		return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && (x.Value == nil) == (y.Value == nil)
	})
}

func TestAppendEmptyKeyIsNotNull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wantRun(t, "OK base=0 last=0\n", 0, "append", "--dir", dir, "--key", "", "v")
	r := decodeRecords(t, storeBatches(t, dir, "events", 0)[0])[0]
	if r.Key == nil || len(r.Key) != 0 {
		t.Errorf("key %v, want empty, not null", r.Key)
	}
}

func TestAppendJSONLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := writeFile(t, "in.jsonl", strings.Join([]string{
		`{"records":[{"key":"k","value":"v","headers":[{"key":"h","value":"x"},{"key":"n","value":null}],"timestamp":1700000000000}]}`,
		`{"topic":"other","partition":2,"compression":"gzip","records":[{"key":null,"value":null,"timestamp":1700000000001},{"timestamp":1700000000002}]}`,
		`{"records":[{"value":"broken"]}`,
		``,
		`{"compression":"zstd","records":[{"keyBase64":"AAE=","valueBase64":"AP8Q","headers":[{"key":"bin","valueBase64":"/w=="}],"timestamp":1700000000003}]}`,
		`{"records":[{"value":"last","timestamp":1700000000004}]}`,
	}, "\n")+"\n")
	errOut := wantRun(t, "OK base=0 last=0\n"+
		"OK base=0 last=1\n"+
		"INVALID line 3: invalid JSON at byte 30: invalid character ']' after object key:value pair\n"+
		"OK base=1 last=1\n"+
		"OK base=2 last=2\n", 3,
		"append", "--dir", dir, "--input", input)
	if want := "logstore append: 1 of 5 batches refused\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}

	type rec struct {
		key, value []byte
		headers    []recordbatch.RecordHeader
		ts         int64
	}
	check := func(topic string, partition int32, want []rec) {
		t.Helper()
		var got []recordbatch.Record
		for _, b := range storeBatches(t, dir, topic, partition) {
			got = append(got, decodeRecords(t, b)...)
		}
		if len(got) != len(want) {
			t.Fatalf("%s-%d: %d records, want %d", topic, partition, len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			if !bytes.Equal(g.Key, w.key) || (g.Key == nil) != (w.key == nil) ||
				!bytes.Equal(g.Value, w.value) || (g.Value == nil) != (w.value == nil) ||
				!equalHeaders(g.Headers, w.headers) || g.Timestamp != w.ts {
				t.Errorf("%s-%d record %d: key %v value %v headers %v ts %d; want %v %v %v %d", topic, partition, i, g.Key, g.Value, g.Headers, g.Timestamp, w.key, w.value, w.headers, w.ts)
			}
		}
	}
	check("events", 0, []rec{
		{[]byte("k"), []byte("v"), []recordbatch.RecordHeader{{Key: []byte("h"), Value: []byte("x")}, {Key: []byte("n")}}, 1700000000000},
		{[]byte{0, 1}, []byte{0, 0xff, 0x10}, []recordbatch.RecordHeader{{Key: []byte("bin"), Value: []byte{0xff}}}, 1700000000003},
		{nil, []byte("last"), nil, 1700000000004},
	})
	check("other", 2, []rec{{nil, nil, nil, 1700000000001}, {nil, nil, nil, 1700000000002}})
	if c := storeBatches(t, dir, "other", 2)[0].Attributes().Codec(); c != recordbatch.CodecGzip {
		t.Errorf("other-2: codec %s, want gzip", c)
	}
}

// TestAppendBadLines: each line that cannot become a batch is INVALID with
// its number and reason, and the next line is still sent.
func TestAppendBadLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, reason string }{
		{`not json`, "invalid JSON at byte 2: invalid character 'o' in literal null (expecting 'u')"},
		{`{"records":[{"value":"v"}]`, "invalid JSON: the line ends inside the batch object"},
		{`[]`, "invalid JSON: a array where the batch object belongs"},
		{`{"records":[{"value":"v"}]} {}`, "invalid JSON: more after the batch object (one batch per line)"},
		{`{"records":[{"vaule":"v"}]}`, `invalid JSON: unknown field "vaule"`},
		{`{"partition":"1","records":[{}]}`, `invalid JSON: field "partition": a string where an integer belongs`},
		{`{"records":[{"value":1}]}`, `invalid JSON: field "records.value": a number where a string belongs`},
		{`{}`, "no records"},
		{`{"records":[]}`, "no records"},
		{`{"records":null}`, "no records"},
		{`{"compression":"brotli","records":[{}]}`, `unknown compression "brotli": want none, gzip, snappy, lz4 or zstd`},
		{`{"producerId":31,"records":[{}]}`, "producer id without a base sequence: producer id 31 has base sequence -1"},
		{`{"producerEpoch":40000,"records":[{}]}`, "producerEpoch 40000 is outside the 16-bit range"},
		{`{"baseSequence":2147483648,"records":[{}]}`, "baseSequence 2147483648 is outside the 32-bit range"},
		{`{"partition":-1,"records":[{}]}`, `invalid topic or partition: topic "events": partition -1 is negative`},
		{`{"topic":"../x","records":[{}]}`, `invalid topic or partition: topic "../x": character '/' at 2 is not one of [a-zA-Z0-9._-]`},
		{`{"records":[{"timestamp":-2}]}`, "record 1: timestamp -2 is negative (give milliseconds since the epoch, or -1 for none)"},
		{`{"records":[{},{"key":"a","keyBase64":"YQ=="}]}`, `record 2: both "key" and "keyBase64" are given`},
		{`{"records":[{"valueBase64":"not base64!"}]}`, `record 1: "valueBase64" is not standard base64: illegal base64 data at input byte 3`},
		{`{"records":[{"headers":[{"value":"x"}]}]}`, "record 1: header 1: a header key is required (it may be empty, not null)"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			wantLineRefused(t, tc.line, tc.reason)
		})
	}
}

func TestAppendLineTooLong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := `{"records":[{"value":"` + strings.Repeat("x", jsonl.MaxLineBytes) + `"}]}`
	input := writeFile(t, "in.jsonl", long+"\r\n"+`{"records":[{"value":"ok"}]}`)
	wantRun(t, fmt.Sprintf("INVALID line 1: the line is longer than %d bytes\nOK base=0 last=0\n", jsonl.MaxLineBytes), 3,
		"append", "--dir", dir, "--input", input)
}

func TestAppendJSONReplies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wantRun(t, `{"outcome":"OK","base":0,"last":1}`+"\n", 0, "append", "--dir", dir, "--json", "a", "b")
	input := writeFile(t, "in.jsonl", `{"records":[{"value":"c"}]}`+"\n"+`{"records":[]}`+"\n")
	out, _, code := runCLI(t, "append", "--dir", dir, "--json", "--input", input)
	if code != 3 {
		t.Errorf("exit %d, want 3", code)
	}
	want := []map[string]any{
		{"line": 1.0, "outcome": "OK", "base": 2.0, "last": 2.0},
		{"line": 2.0, "outcome": "INVALID", "reason": "no records"},
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stdout:\n%s", out)
	}
	for i, l := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("line %d: %v, want %v", i+1, got, want[i])
		}
	}
	if want := `{"line":2,"outcome":"INVALID","reason":"no records"}`; lines[1] != want {
		t.Errorf("field order: %s, want %s", lines[1], want)
	}
}

// TestAppendStdin reads JSON Lines from stdin (--input -). It swaps
// os.Stdin, so it does not run in parallel.
func TestAppendStdin(t *testing.T) {
	in := writeFile(t, "in.jsonl", `{"records":[{"value":"a"},{"value":"b"}]}`+"\n"+`{"records":[{"value":"c"}]}`)
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old })
	wantRun(t, "OK base=0 last=1\nOK base=2 last=2\n", 0, "append", "--dir", t.TempDir(), "--input", "-")
}

// notifyWriter signals each Write, so a test can see that a reply went
// out before the input ended.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.wrote <- struct{}{}
	return len(p), nil
}

// TestAppendStreams: the reply to a line is written as soon as its batch
// is acknowledged, while the input is still open.
func TestAppendStreams(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old })

	out := &notifyWriter{wrote: make(chan struct{}, 4)}
	var errb bytes.Buffer
	done := make(chan int)
	go func() { done <- run([]string{"append", "--dir", t.TempDir(), "--input", "-"}, out, &errb) }()
	for i, want := range []string{"OK base=0 last=0\n", "OK base=1 last=1\n"} {
		if _, err := fmt.Fprintf(w, `{"records":[{"value":"%d"}]}`+"\n", i); err != nil {
			t.Fatal(err)
		}
		select {
		case <-out.wrote:
		case <-time.After(10 * time.Second):
			t.Fatalf("no reply to line %d while the input is open", i+1)
		}
		out.mu.Lock()
		got := out.buf.String()
		out.buf.Reset()
		out.mu.Unlock()
		if got != want {
			t.Errorf("reply %q, want %q", got, want)
		}
	}
	w.Close()
	if code := <-done; code != 0 {
		t.Errorf("exit %d, stderr %s", code, errb.String())
	}
}

// TestAppendFromKafkaLog re-sends the batches of a segment Kafka wrote.
// Its two control batches (a COMMIT and an ABORT marker) are refused as
// INVALID: a producer may not send them. Once the producer checks are in
// Partition.Append, its three batches of producers the store has never
// seen, which do not start at sequence 0, are OUT_OF_ORDER.
func TestAppendFromKafkaLog(t *testing.T) {
	t.Parallel()
	logFile := testutil.SharedFile(t, "kafka-golden/foo-0/00000000000000000000.log")
	orig, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	wired := producerChecksWired(t)
	control := "invalid control batch: a producer may not send control batches"
	var want []string
	var sent []int // indexes of the file's batches that were appended
	if wired {
		want = []string{
			"OK base=0 last=1", "OK base=2 last=3", "OK base=4 last=6",
			"OUT_OF_ORDER", "OUT_OF_ORDER",
			"INVALID batch 6 at position 425: " + control,
			"OUT_OF_ORDER",
			"OK base=7 last=7", "OK base=8 last=8",
			"INVALID batch 10 at position 742: " + control,
			"OK base=9 last=9",
		}
		sent = []int{0, 1, 2, 7, 8, 10}
	} else {
		want = []string{
			"OK base=0 last=1", "OK base=2 last=3", "OK base=4 last=6", "OK base=7 last=7", "OK base=8 last=9",
			"INVALID batch 6 at position 425: " + control,
			"OK base=10 last=12", "OK base=13 last=13", "OK base=14 last=14",
			"INVALID batch 10 at position 742: " + control,
			"OK base=15 last=15",
		}
		sent = []int{0, 1, 2, 3, 4, 6, 7, 8, 10}
	}
	dir := t.TempDir()
	out, errOut, code := runCLI(t, "append", "--dir", dir, "--topic", "foo", "--from-log", logFile)
	if code != 3 {
		t.Errorf("exit %d, want 3; stderr %s", code, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("stdout:\n%s\nwant %d lines", out, len(want))
	}
	for i := range want {
		if got[i] != want[i] && !(want[i] == "OUT_OF_ORDER" && strings.HasPrefix(got[i], "OUT_OF_ORDER ")) {
			t.Errorf("reply %d: %q, want %q", i+1, got[i], want[i])
		}
	}

	// What was appended is the file's batches, byte for byte but for the
	// base offset.
	var fileBatches []recordbatch.Batch
	for data := orig; len(data) > 0; {
		b, err := recordbatch.Parse(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		fileBatches = append(fileBatches, b)
		data = data[b.Size():]
	}
	stored := storeBatches(t, dir, "foo", 0)
	if len(stored) != len(sent) {
		t.Fatalf("%d batches stored, want %d", len(stored), len(sent))
	}
	for i, fi := range sent {
		if !bytes.Equal(stored[i][8:], fileBatches[fi][8:]) {
			t.Errorf("stored batch %d differs from the file's batch %d beyond the base offset", i, fi+1)
		}
	}
}

// TestAppendFromOwnLog re-sends a segment this store's Builder wrote, one
// batch per codec: every batch is accepted, and since the file starts at
// offset 0 without gaps, the new segment is the same file byte for byte.
func TestAppendFromOwnLog(t *testing.T) {
	t.Parallel()
	logFile := filepath.Join(testutil.RepoDir(t), "testdata", "segments", "logstore-all-codecs", "00000000000000000000.log")
	dir := t.TempDir()
	wantRun(t, "OK base=0 last=3\nOK base=4 last=7\nOK base=8 last=11\nOK base=12 last=15\nOK base=16 last=19\n", 0,
		"append", "--dir", dir, "--topic", "codecs", "--partition", "1", "--from-log", logFile)
	orig, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(dir, "codecs-1", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copied, orig) {
		t.Errorf("the copied segment (%d bytes) differs from the original (%d bytes)", len(copied), len(orig))
	}
	// --json names each batch by ordinal and position.
	out, _, code := runCLI(t, "append", "--dir", dir, "--topic", "codecs", "--partition", "1", "--json", "--from-log", logFile)
	if first := strings.SplitN(out, "\n", 2)[0]; code != 0 || first != `{"batch":1,"position":0,"outcome":"OK","base":20,"last":23}` {
		t.Errorf("exit %d, first line %s", code, first)
	}
}

func TestAppendFromTornLog(t *testing.T) {
	t.Parallel()
	logFile := testutil.SharedFile(t, "kafka-golden/torn-0/00000000000000000000.log")
	out, errOut, code := runCLI(t, "append", "--dir", t.TempDir(), "--topic", "torn", "--from-log", logFile)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if n := strings.Count(out, "\n"); n != 10 {
		t.Errorf("%d replies before the torn batch, want 10:\n%s", n, out)
	}
	if want := "position 820: the file ends inside a batch of 69 bytes"; !strings.Contains(errOut, want) || !strings.Contains(errOut, logFile) {
		t.Errorf("stderr %q does not name the file and %q", errOut, want)
	}
}

func TestAppendSegmentBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 5 {
		wantRun(t, fmt.Sprintf("OK base=%d last=%d\n", i, i), 0, "append", "--dir", dir, "--segment-bytes", "100", "--sync", "never", "0123456789")
	}
	logs, err := filepath.Glob(filepath.Join(dir, "events-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 5 {
		t.Errorf("%d segment files with --segment-bytes 100, want one per batch: %v", len(logs), logs)
	}
	wantRun(t, "INVALID batch too large: 118 bytes, limits 1048588 per batch and 100 per segment\n", 3,
		"append", "--dir", dir, "--segment-bytes", "100", strings.Repeat("x", 50))
	wantRun(t, "OK base=5 last=5\n", 0, "append", "--dir", dir, "--sync", "interval", "--sync-interval", "10ms", "x")
}

func TestAppendExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, "file", "")
	lines := writeFile(t, "in.jsonl", `{"records":[{}]}`)
	text := writeFile(t, "text.log", "this is not a segment file\n")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string // contained in stderr
	}{
		{"no values", []string{}, "no records: give the record values as arguments"},
		{"unknown flag", []string{"--nope", "x"}, "unknown flag: --nope"},
		{"bad integer", []string{"--partition", "one", "x"}, `invalid argument "one" for "--partition"`},
		{"epoch range", []string{"--producer-epoch", "40000", "x"}, `invalid argument "40000" for "--producer-epoch"`},
		{"unknown codec", []string{"--compression", "brotli", "x"}, `--compression: unknown compression "brotli"`},
		{"bad timestamp", []string{"--timestamp", "-5", "x"}, "--timestamp: timestamp -5 is negative"},
		{"bad header", []string{"--header", "novalue", "x"}, `--header "novalue": want KEY=VALUE`},
		{"bad sync", []string{"--sync", "sometimes", "x"}, `--sync "sometimes": want always, interval or never`},
		{"interval without sync interval", []string{"--sync-interval", "1s", "x"}, "--sync-interval applies only with --sync interval"},
		{"small segment", []string{"--segment-bytes", "60", "x"}, "--segment-bytes 60: must be from 61 to 2147483647"},
		{"missing input", []string{"--input", filepath.Join(dir, "missing.jsonl")}, "--input: open " + filepath.Join(dir, "missing.jsonl")},
		{"missing log", []string{"--from-log", filepath.Join(dir, "missing.log")}, "--from-log: open " + filepath.Join(dir, "missing.log")},
		{"input and from-log", []string{"--input", lines, "--from-log", lines}, "--input and --from-log cannot be used together"},
		{"values with input", []string{"--input", lines, "x"}, `unexpected argument "x": with --input the records come from the file`},
		{"key with input", []string{"--input", lines, "--key", "k"}, "--key describes the batch of the arguments"},
		{"compression with from-log", []string{"--from-log", lines, "--compression", "gzip"}, "--compression cannot be used with --from-log"},
		{"not a segment", []string{"--from-log", text}, "position 0: magic byte 103: not a record batch"},
		{"short file", []string{"--from-log", lines}, "position 0: the file ends inside a batch header (16 of 17 bytes)"},
		{"bad topic", []string{"--topic", "../x", "x"}, `invalid topic or partition: topic "../x"`},
		{"negative partition", []string{"--partition", "-1", "x"}, "partition -1 is negative"},
		{"dir is a file", []string{"--dir", file, "x"}, file + " is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"append"}, tc.args...)
			if !slices.Contains(tc.args, "--dir") {
				args = append(args, "--dir", filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")))
			}
			out, errOut, code := runCLI(t, args...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, "logstore append: ") || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and %q", code, out, errOut, tc.stderr)
			}
		})
	}
}

func TestAppendStoreInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "append", "--dir", dir, "--lock-timeout", "0", "x")
	if code != 1 || !strings.Contains(errOut, "store in use") {
		t.Errorf("exit %d, stderr %q; want 1 and store in use", code, errOut)
	}
	// With time to wait, the append waits for the lock.
	done := make(chan string)
	go func() {
		out, errOut, code := runCLI(t, "append", "--dir", dir, "y")
		done <- fmt.Sprintf("%d %s%s", code, out, errOut)
	}()
	time.Sleep(100 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "0 OK base=0 last=0\n" {
		t.Errorf("append after the lock was released: %q", got)
	}
}

func TestAppendConcurrentProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 4
	outs := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var errOut string
			outs[i], errOut, codes[i] = runCLI(t, "append", "--dir", dir, fmt.Sprint(i), "second")
			if errOut != "" {
				t.Errorf("run %d: stderr %q", i, errOut)
			}
		})
	}
	wg.Wait()
	slices.Sort(outs)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("OK base=%d last=%d\n", 2*i, 2*i+1))
	}
	if !slices.Equal(outs, want) || slices.ContainsFunc(codes, func(c int) bool { return c != 0 }) {
		t.Errorf("outputs %q, exit statuses %v; want %q, all 0", outs, codes, want)
	}
}

// TestAppendProducer runs the acceptance trace of the producer checks
// (DESIGN.md, "Producer checks"): once as one process per batch, once as
// JSON Lines.
func TestAppendProducer(t *testing.T) {
	t.Parallel()
	if !producerChecksWired(t) {
		t.Skip("producer checks not wired yet")
	}
	type step struct {
		epoch, seq int
		values     []string
		outcome    string // the whole reply, or its first word for a refusal
		mentions   []string
	}
	trace := []step{
		{0, 0, []string{"a", "b", "c"}, "OK base=0 last=2", nil},
		{0, 3, []string{"d", "e"}, "OK base=3 last=4", nil},
		{0, 3, []string{"d", "e"}, "DUPLICATE base=3 last=4", nil},
		{0, 7, []string{"f"}, "OUT_OF_ORDER", []string{"5", "7"}},
		{1, 7, []string{"f"}, "OUT_OF_ORDER", []string{"0", "7"}},
		{1, 0, []string{"g"}, "OK base=5 last=5", nil},
		{0, 5, []string{"h"}, "FENCED", []string{"0", "1"}},
	}
	checkReply := func(t *testing.T, i int, got string, s step, dir string) {
		t.Helper()
		if !strings.Contains(s.outcome, " ") {
			reason, ok := strings.CutPrefix(got, s.outcome+" ")
			if !ok || reason == "" || strings.Contains(reason, "logstore") || strings.Contains(reason, dir) {
				t.Errorf("step %d: %q, want %s and a reason without package prefixes or the store", i+1, got, s.outcome)
			}
			for _, m := range s.mentions {
				if !strings.Contains(reason, m) {
					t.Errorf("step %d: reason %q does not mention %s", i+1, reason, m)
				}
			}
			return
		}
		if got != s.outcome {
			t.Errorf("step %d: %q, want %q", i+1, got, s.outcome)
		}
	}

	t.Run("process per batch", func(t *testing.T) {
		dir := t.TempDir()
		for i, s := range trace {
			args := append([]string{"append", "--dir", dir, "--producer-id", "31",
				"--producer-epoch", fmt.Sprint(s.epoch), "--base-sequence", fmt.Sprint(s.seq)}, s.values...)
			out, errOut, code := runCLI(t, args...)
			wantCode := 0
			if !strings.Contains(s.outcome, " ") {
				wantCode = 3
			}
			if code != wantCode {
				t.Errorf("step %d: exit %d, want %d; stderr %s", i+1, code, wantCode, errOut)
			}
			checkReply(t, i, strings.TrimSuffix(out, "\n"), s, dir)
		}
	})

	t.Run("JSON Lines", func(t *testing.T) {
		dir := t.TempDir()
		var in strings.Builder
		for _, s := range trace {
			var recs []string
			for _, v := range s.values {
				recs = append(recs, fmt.Sprintf(`{"value":%q}`, v))
			}
			fmt.Fprintf(&in, `{"producerId":31,"producerEpoch":%d,"baseSequence":%d,"records":[%s]}`+"\n", s.epoch, s.seq, strings.Join(recs, ","))
		}
		out, errOut, code := runCLI(t, "append", "--dir", dir, "--input", writeFile(t, "trace.jsonl", in.String()))
		if code != 3 || errOut != "logstore append: 3 of 7 batches refused\n" {
			t.Errorf("exit %d, stderr %q; want 3 and 3 of 7 refused", code, errOut)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != len(trace) {
			t.Fatalf("stdout:\n%s", out)
		}
		for i, s := range trace {
			checkReply(t, i, got[i], s, dir)
		}
	})
}

// TestRefusalReason: the reason of a refusal is the store's
// RefusedError.Reason, which has no package prefixes, operation,
// partition or store; the error around it has them.
func TestRefusalReason(t *testing.T) {
	t.Parallel()
	// A real refusal from the store: a control batch.
	s, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	marker, err := recordbatch.AppendEndTxnBatch(nil, 0, 1700000000000, 0, 9, 0, recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Append(marker)
	var refused *logstore.RefusedError
	if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.As(err, &refused) {
		t.Fatalf("control batch: %v, want a refusal matching ErrInvalidBatch", err)
	}
	if got, want := refused.Reason, "invalid control batch: a producer may not send control batches"; got != want {
		t.Errorf("reason %q, want %q (from %v)", got, want, err)
	}
	if want := "logstore: append (partition events-0, store "; !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "logstore: ") != 1 {
		t.Errorf("error %q, want it to start with %q and the package prefix once", err, want)
	}
}

// TestAppendRefusedByFlags: flags that make a batch the store refuses get
// an INVALID reply and status 3, not a usage error.
func TestAppendRefusedByFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	errOut := wantRun(t, "INVALID producer id without a base sequence: producer id 5 has base sequence -1\n", 3,
		"append", "--dir", dir, "--producer-id", "5", "x")
	if want := "logstore append: the batch was refused\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	wantRun(t, `{"outcome":"INVALID","reason":"producer id without a base sequence: producer id 5 has base sequence -1"}`+"\n", 3,
		"append", "--dir", dir, "--json", "--producer-id", "5", "x")
	if got := storeBatches(t, dir, "events", 0); len(got) != 0 {
		t.Errorf("%d batches written, want none", len(got))
	}
}

// wantLineRefused runs append --input on line between two good lines:
// the good ones are stored, line is answered INVALID with reason, and the
// exit status is 3.
func wantLineRefused(t *testing.T, line, reason string) {
	t.Helper()
	const good = `{"records":[{"value":"ok"}]}`
	input := writeFile(t, "in.jsonl", good+"\n"+line+"\n"+good+"\n")
	wantRun(t, "OK base=0 last=0\nINVALID line 2: "+reason+"\nOK base=1 last=1\n", 3,
		"append", "--dir", t.TempDir(), "--input", input)
}
