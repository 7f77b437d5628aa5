package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
)

// farTimestamp is the record timestamp of the batches the tests append
// through the CLI (2100-01-01): fixed, so the outputs are the same on
// every run, and in the future, so the store's default producer expiry
// (one day idle, against the clock) never forgets the producers.
const farTimestamp = "4102444800000"

// traceStep is one append of issue 4's acceptance trace (producer 31).
type traceStep struct {
	epoch, seq int
	values     []string
	code       int
}

var acceptanceTraceSteps = []traceStep{
	{0, 0, []string{"a", "b", "c"}, exitOK}, // OK base=0
	{0, 3, []string{"d", "e"}, exitOK},      // OK base=3
	{0, 3, []string{"d", "e"}, exitOK},      // DUPLICATE base=3
	{0, 7, []string{"f"}, exitRefused},      // OUT_OF_ORDER: expected 5
	{1, 7, []string{"f"}, exitRefused},      // OUT_OF_ORDER: a new epoch starts at 0
	{1, 0, []string{"g"}, exitOK},           // OK base=5
	{0, 5, []string{"h"}, exitRefused},      // FENCED
}

// traceWant is producer 31's state after the trace.
const traceWant = "producerId=31 epoch=1 lastSequence=0 lastTimestamp=4102444800000 txnFirstOffset=none coordinatorEpoch=-1 window=[0..0@5..5 ts=4102444800000]\n"

// TestProducersAcceptanceTrace: the state after the appends of the
// acceptance trace, one process per batch, and again as JSON Lines.
func TestProducersAcceptanceTrace(t *testing.T) {
	dir := t.TempDir()
	for i, s := range acceptanceTraceSteps {
		args := append([]string{"append", "--dir", dir, "--timestamp", farTimestamp, "--producer-id", "31",
			"--producer-epoch", fmt.Sprint(s.epoch), "--base-sequence", fmt.Sprint(s.seq)}, s.values...)
		if out, errOut, code := inspectRun(t, args...); code != s.code {
			t.Fatalf("step %d: exit %d, want %d: %s%s", i+1, code, s.code, out, errOut)
		}
	}
	out, code := inspectGolden(t, "producers-trace", dir, "producers", "--dir", dir)
	if code != exitOK || out != traceWant {
		t.Fatalf("exit %d:\n%swant:\n%s", code, out, traceWant)
	}
	out, code = inspectGolden(t, "producers-trace-json", dir, "producers", "--dir", dir, "--json")
	want := `{"producerId":31,"epoch":1,"lastSequence":0,"lastTimestamp":4102444800000,"txnFirstOffset":null,"coordinatorEpoch":-1,"window":[{"firstSequence":0,"lastSequence":0,"firstOffset":5,"lastOffset":5,"timestamp":4102444800000}]}` + "\n"
	if code != exitOK || out != want {
		t.Fatalf("exit %d:\n%swant:\n%s", code, out, want)
	}
	// Every open and close of the trace left the store consistent.
	if out, errOut, code := inspectRun(t, "check", "--dir", dir); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}

	// The same trace as JSON Lines, in one process.
	dir2 := t.TempDir()
	var in strings.Builder
	for _, s := range acceptanceTraceSteps {
		var recs []string
		for _, v := range s.values {
			recs = append(recs, fmt.Sprintf(`{"value":%q,"timestamp":%s}`, v, farTimestamp))
		}
		fmt.Fprintf(&in, `{"producerId":31,"producerEpoch":%d,"baseSequence":%d,"records":[%s]}`+"\n", s.epoch, s.seq, strings.Join(recs, ","))
	}
	input := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := inspectRun(t, "append", "--dir", dir2, "--input", input); code != exitRefused {
		t.Fatalf("append --input: exit %d: %s", code, errOut)
	}
	if out, errOut, code := inspectRun(t, "producers", "--dir", dir2); code != exitOK || out != traceWant {
		t.Fatalf("exit %d:\n%s%swant:\n%s", code, out, errOut, traceWant)
	}
}

// TestProducersWindowAndTransactions: a full window of 5 (the oldest of
// 6 batches forgotten), a producer with an open transaction, and one
// that moved to a new epoch.
func TestProducersWindowAndTransactions(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	line := func(pid, epoch, seq int, txn bool, n int) {
		var recs []string
		for i := range n {
			recs = append(recs, fmt.Sprintf(`{"value":"p%d-%d-%d","timestamp":%d}`, pid, seq, i, 4102444800000+int64(seq+i)))
		}
		fmt.Fprintf(&in, `{"producerId":%d,"producerEpoch":%d,"baseSequence":%d,"transactional":%t,"records":[%s]}`+"\n", pid, epoch, seq, txn, strings.Join(recs, ","))
	}
	for i := range 6 {
		line(40, 2, 2*i, false, 2)
	}
	line(41, 0, 0, true, 1)
	line(41, 0, 1, true, 2)
	line(42, 0, 0, false, 1)
	line(42, 1, 0, false, 3)
	input := filepath.Join(t.TempDir(), "batches.jsonl")
	if err := os.WriteFile(input, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := inspectRun(t, "append", "--dir", dir, "--input", input); code != exitOK {
		t.Fatalf("append: exit %d\n%s%s", code, out, errOut)
	}
	out, code := inspectGolden(t, "producers-window", dir, "producers", "--dir", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "producerId=40 epoch=2 lastSequence=11 ") || !strings.HasSuffix(lines[0], "window=[2..3@2..3 ts=4102444800003, 4..5@4..5 ts=4102444800005, 6..7@6..7 ts=4102444800007, 8..9@8..9 ts=4102444800009, 10..11@10..11 ts=4102444800011]") ||
		!strings.Contains(lines[1], " txnFirstOffset=12 ") || !strings.HasPrefix(lines[2], "producerId=42 epoch=1 lastSequence=2 ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	inspectGolden(t, "producers-window-json", dir, "producers", "--dir", dir, "--json")
}

// TestProducersKafkaDirectory: a partition directory Kafka wrote, with
// transaction markers: the coordinator epochs and open transactions come
// from a full replay. Its timestamps are from 2023, but expiry is judged
// on the store's clock, and a producer replayed at open counts as seen
// then: the default expiry keeps them all, as --producer-expiry 0 does.
func TestProducersKafkaDirectory(t *testing.T) {
	dir := copyKafkaFixtures(t, "foo-0")
	withExpiry, errOut, code := inspectRun(t, "producers", "--dir", dir, "--topic", "foo")
	if code != exitOK || strings.Count(withExpiry, "producerId=") != 4 {
		t.Fatalf("with expiry: exit %d\n%s%s", code, withExpiry, errOut)
	}
	dir = copyKafkaFixtures(t, "foo-0")
	out, code := inspectGolden(t, "producers-kafka", dir, "producers", "--dir", dir, "--topic", "foo", "--producer-expiry", "0")
	if out != withExpiry {
		t.Errorf("the default expiry forgot producers replayed at open:\n%s\nwith --producer-expiry 0:\n%s", withExpiry, out)
	}
	for _, want := range []string{
		"producerId=5 epoch=1 lastSequence=-1 lastTimestamp=1700000000016 txnFirstOffset=none coordinatorEpoch=2 window=[]",
		"producerId=7 epoch=0 lastSequence=0 ",
		"producerId=98323 epoch=99 lastSequence=267 lastTimestamp=1700000000010 txnFirstOffset=none coordinatorEpoch=100 ",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("exit %d:\n%s\nwant a line with %q", code, out, want)
		}
	}
}

// TestProducersSaysWhatOpeningChanged: opening cuts a torn tail, and
// producers says so on stderr.
func TestProducersSaysWhatOpeningChanged(t *testing.T) {
	dir := crashedCheckFixture(t)
	logs := segmentFiles(t, filepath.Join(dir, "events-0"))
	rewrite(t, logs[len(logs)-1], func(b []byte) []byte { return b[:len(b)-9] })
	out, errOut, code := inspectRun(t, "producers", "--dir", dir, "--producer-expiry", "0")
	if code != exitOK || !strings.HasPrefix(out, "producerId=7 ") ||
		!strings.HasPrefix(errOut, "logstore producers: opening partition events-0 cut ") {
		t.Fatalf("exit %d\nstdout:\n%sstderr:\n%s", code, out, errOut)
	}
}

// partitionBadInput are the refusals producers and read share: each is
// exit status 1 with a message on stderr, and creates nothing.
func partitionBadInput(t *testing.T, cmd string) {
	t.Helper()
	dir := checkFixture(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.FileSums(t, dir)
	for _, c := range []struct {
		args []string
		want string // a part of stderr
	}{
		{[]string{"--topic", "../x"}, `invalid topic or partition: topic "../x": character '/' at 2 is not one of [a-zA-Z0-9._-]`},
		{[]string{"--topic", "events", "--partition", "-1"}, `invalid topic or partition: topic "events": partition -1 is negative`},
		{[]string{"--topic", ""}, "topic name is empty"},
		{[]string{"--topic", "nope"}, "store " + dir + " has no partition nope-0 (no directory " + filepath.Join(dir, "nope-0") + ")"},
		{[]string{"--partition", "x"}, `invalid argument "x" for "--partition"`},
		{[]string{"extra"}, `unexpected argument "extra": name the partition with --dir, --topic and --partition`},
	} {
		args := append([]string{cmd, "--dir", dir}, c.args...)
		out, errOut, code := inspectRun(t, args...)
		if code != exitError || out != "" || !strings.HasPrefix(errOut, "logstore "+cmd+": ") || !strings.Contains(errOut, c.want) {
			t.Errorf("logstore %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(args, " "), code, out, errOut, c.want)
		}
	}
	for _, c := range []struct {
		dir  string
		want string
	}{
		{file, "logstore " + cmd + ": store directory " + file + " is not a directory\n"},
		{filepath.Join(t.TempDir(), "missing"), "does not exist\n"},
	} {
		out, errOut, code := inspectRun(t, cmd, "--dir", c.dir)
		if code != exitError || out != "" || !strings.HasSuffix(errOut, c.want) {
			t.Errorf("logstore %s --dir %s: exit %d, stdout %q, stderr %q; want 1 and %q", cmd, c.dir, code, out, errOut, c.want)
		}
	}
	if !sameSums(before, testutil.FileSums(t, dir)) {
		t.Error("a refused command changed the store")
	}
	// A store another process holds: after --lock-timeout, status 1.
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, errOut, code := inspectRun(t, cmd, "--dir", dir, "--lock-timeout", "0")
	if code != exitError || !strings.Contains(errOut, "store in use") {
		t.Errorf("%s on a store in use: exit %d, stderr %q", cmd, code, errOut)
	}
}

func TestProducersBadInput(t *testing.T) {
	partitionBadInput(t, "producers")
	_, errOut, code := inspectRun(t, "producers", "--dir", t.TempDir(), "--producer-expiry", "-1s")
	if code != exitError || errOut != "logstore producers: --producer-expiry -1s: must be 0 (never) or more\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
