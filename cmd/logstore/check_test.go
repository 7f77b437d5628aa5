package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// inspectGoldenDir holds the golden outputs of producers, read and check.
// It is a folder of its own because TestDumpGolden wants every
// testdata/golden/*.txt to be one of its runs. Found at init, before any
// test changes the working directory; rewritten by -update.
var inspectGoldenDir, _ = filepath.Abs(filepath.Join("testdata", "golden", "inspect"))

// inspectRun runs the logstore command with args.
func inspectRun(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// inspectGolden runs the command and compares what it printed, and its
// exit status, with testdata/golden/inspect/<name>.txt, where the store
// directory dir is written $DIR. It returns stdout and the status.
func inspectGolden(t *testing.T, name, dir string, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := inspectRun(t, args...)
	var b strings.Builder
	fmt.Fprintf(&b, "$ logstore %s\n%s", strings.Join(args, " "), out)
	if errOut != "" {
		fmt.Fprintf(&b, "[stderr]\n%s", errOut)
	}
	fmt.Fprintf(&b, "[exit %d]\n", code)
	got := strings.ReplaceAll(b.String(), dir, "$DIR")
	path := filepath.Join(inspectGoldenDir, name+".txt")
	if *updateGolden {
		if err := os.MkdirAll(inspectGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return out, code
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/logstore -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s\n--- got:\n%s--- want:\n%s", path, got, want)
	}
	return out, code
}

func sameSums(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkFixtureOpts lays the fixture store out in small segments, every
// batch after a segment's first indexed, with producers kept whatever
// their (fixed, old) timestamps.
var checkFixtureOpts = logstore.Options{
	ProducerExpiry: -1,
	SegmentBytes:   600, IndexIntervalBytes: 1,
}

// fillCheckFixture appends the fixture's batches: 14 batches of two
// producers to events-0 (several segments, a snapshot at each roll) and
// 3 plain batches to orders-1. Timestamps are fixed, so the files are
// the same on every run.
func fillCheckFixture(t *testing.T, s *logstore.Store) {
	t.Helper()
	events, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]int32{}
	for i := range 14 {
		pid := int64(7 + i%2)
		bld := recordbatch.NewBuilder(0)
		bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pid, 0, seqs[pid]
		for j := range 1 + i%3 {
			if err := bld.Append(1700000000000+int64(10*i+j), []byte(fmt.Sprintf("k%d", i)), []byte(fmt.Sprintf("value-%d-%d", i, j)), nil); err != nil {
				t.Fatal(err)
			}
			seqs[pid]++
		}
		b, err := bld.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	orders, err := s.Partition("orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		bld := recordbatch.NewBuilder(0)
		if err := bld.Append(1700000001000+int64(i), nil, []byte(fmt.Sprintf("order-%d", i)), nil); err != nil {
			t.Fatal(err)
		}
		b, err := bld.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := orders.Append(b); err != nil {
			t.Fatal(err)
		}
	}
}

// checkFixture builds the fixture store, closed cleanly, in a new
// directory.
func checkFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := logstore.Open(dir, checkFixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	fillCheckFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// crashedCheckFixture builds the fixture store and returns a copy of its
// directory taken while it was open, as a killed process leaves it.
func crashedCheckFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := logstore.Open(dir, checkFixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillCheckFixture(t, s)
	// A copy taken while a roll's flush runs could catch a checkpoint in
	// the middle of its rename: wait for the background work first.
	ids, err := s.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		p, err := s.Partition(id.Topic, id.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Flushed(); err != nil {
			t.Fatal(err)
		}
	}
	crashed := filepath.Join(t.TempDir(), "store")
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(crashed, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(crashed, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return crashed
}

// segmentFiles returns the .log files of a partition directory, in
// order.
func segmentFiles(t *testing.T, pdir string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(pdir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no segments in %s: %v", pdir, err)
	}
	return logs
}

// batchStarts returns the byte position of each batch of a .log file.
func batchStarts(t *testing.T, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for pos := 0; pos < len(data); {
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			t.Fatalf("%s at %d: %v", path, pos, err)
		}
		out = append(out, int64(pos))
		pos += b.Size()
	}
	return out
}

func rewrite(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkRun runs check on dir through the golden file name, checks that
// no file changed, and returns stdout and the exit status.
func checkRun(t *testing.T, name, dir string) (string, int) {
	t.Helper()
	before := testutil.FileSums(t, dir)
	out, code := inspectGolden(t, name, dir, "check", "--dir", dir)
	if !sameSums(before, testutil.FileSums(t, dir)) {
		t.Fatal("check changed the store's files")
	}
	return out, code
}

func TestCheckClean(t *testing.T) {
	dir := checkFixture(t)
	if len(segmentFiles(t, filepath.Join(dir, "events-0"))) < 3 {
		t.Fatal("the fixture has too few segments")
	}
	out, code := checkRun(t, "check-clean", dir)
	if code != exitOK || !strings.HasPrefix(out, "checked 2 partitions: ") || !strings.Contains(out, "; no problems\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// Every snapshot was compared: one per roll and one per partition at
	// close.
	if strings.Contains(out, " 0 snapshots") {
		t.Fatalf("no snapshot compared:\n%s", out)
	}
}

// TestCheckFlippedByte: a byte flipped inside a batch of a sealed segment
// is corruption, named by file and the batch's byte position.
func TestCheckFlippedByte(t *testing.T) {
	dir := checkFixture(t)
	log := segmentFiles(t, filepath.Join(dir, "events-0"))[0]
	starts := batchStarts(t, log)
	rewrite(t, log, func(b []byte) []byte { b[starts[1]+70] ^= 0x01; return b })
	out, code := checkRun(t, "check-flipped-byte", dir)
	want := fmt.Sprintf("CORRUPT events-0/%s at byte %d: crc mismatch", filepath.Base(log), starts[1])
	if code != exitProblems || !strings.HasPrefix(out, want) {
		t.Fatalf("exit %d:\n%s\nwant a line starting %q", code, out, want)
	}
}

// TestCheckTornTail: after a crash, the active segment ends inside a
// batch. check says how much the next open cuts, and the next open cuts
// exactly that.
func TestCheckTornTail(t *testing.T) {
	dir := crashedCheckFixture(t)
	logs := segmentFiles(t, filepath.Join(dir, "events-0"))
	active := logs[len(logs)-1]
	starts := batchStarts(t, active)
	fi, err := os.Stat(active)
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, active, func(b []byte) []byte { return b[:len(b)-9] })
	torn := fi.Size() - 9 - starts[len(starts)-1]
	out, code := checkRun(t, "check-torn-tail", dir)
	want := fmt.Sprintf("TORN_TAIL events-0/%s at byte %d: torn tail: %d bytes, will be cut at the next open", filepath.Base(active), starts[len(starts)-1], torn)
	if code != exitProblems || !strings.Contains(out, want) || strings.Contains(out, "CORRUPT") {
		t.Fatalf("exit %d:\n%s\nwant a line with %q", code, out, want)
	}
	s, err := logstore.Open(dir, checkFixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep := p.Recovery(); rep.TruncatedBytes != torn {
		t.Fatalf("the open cut %d bytes, check said %d", rep.TruncatedBytes, torn)
	}
}

// TestCheckWrongIndexEntry: an offset-index entry pointing inside a
// batch.
func TestCheckWrongIndexEntry(t *testing.T) {
	dir := checkFixture(t)
	log := segmentFiles(t, filepath.Join(dir, "events-0"))[1]
	index := strings.TrimSuffix(log, ".log") + ".index"
	rewrite(t, index, func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[12:], binary.BigEndian.Uint32(b[12:])+1)
		return b
	})
	out, code := checkRun(t, "check-wrong-index-entry", dir)
	want := fmt.Sprintf("INDEX events-0/%s at byte 8: entry (offset ", filepath.Base(index))
	if code != exitProblems || !strings.HasPrefix(out, want) || !strings.Contains(out, "is not the start of a batch") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestCheckWrongSnapshot: a snapshot saved with a wrong epoch for a
// producer differs from the replay of the log.
func TestCheckWrongSnapshot(t *testing.T) {
	dir := checkFixture(t)
	pdir := filepath.Join(dir, "events-0")
	st, _, err := snapshot.Open(pdir, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := st.List()
	if err != nil || len(offsets) < 3 {
		t.Fatalf("snapshots %v: %v", offsets, err)
	}
	off := offsets[1]
	snap, err := st.Load(off)
	if err != nil || len(snap.Producers) == 0 {
		t.Fatalf("snapshot at %d: %+v %v", off, snap, err)
	}
	snap.Producers[0].Epoch = 3
	if err := st.Save(snap); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out, code := checkRun(t, "check-wrong-snapshot", dir)
	want := fmt.Sprintf("SNAPSHOT events-0/producer-snapshots.db at snapshot offset %d: differs from a replay of the log up to offset %d: producer %d: epoch 3, the log gives 0",
		off, off, snap.Producers[0].ProducerID)
	if code != exitProblems || !strings.HasPrefix(out, want) {
		t.Fatalf("exit %d:\n%s\nwant a line starting %q", code, out, want)
	}
}

// TestCheckKafkaDirectories: the directories Kafka's own classes wrote:
// an untrimmed index is a note, a torn tail and a flipped byte are
// problems.
func TestCheckKafkaDirectories(t *testing.T) {
	dir := copyKafkaFixtures(t, "foo-0", "torn-0", "crc-0")
	out, code := checkRun(t, "check-kafka", dir)
	if code != exitProblems || !strings.Contains(out, "TORN_TAIL torn-0/00000000000000000000.log at byte 820: torn tail: 35 bytes") ||
		!strings.Contains(out, "CORRUPT crc-0/00000000000000000000.log at byte 0: crc mismatch") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// copyKafkaFixtures copies directories of shared/testdata/kafka-golden
// into a new store directory, writable.
func copyKafkaFixtures(t *testing.T, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for _, name := range names {
		src := filepath.Join(testutil.SharedDir(t), "testdata", "kafka-golden", name)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Skipf("shared fixture %s: %v", name, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestCheckBadInput: what check cannot check is exit status 1 with a
// message naming why.
func TestCheckBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--dir", missing}, "logstore check: store directory " + missing + " does not exist\n"},
		{[]string{"check", "--dir", file}, "logstore check: store directory " + file + " is not a directory\n"},
		{[]string{"check", "--dir", missing, "extra"}, "logstore check: unexpected argument \"extra\": name the store with --dir\n"},
		{[]string{"check", "--dir", ""}, "logstore check: --dir is empty\n"},
	} {
		out, errOut, code := inspectRun(t, c.args...)
		if code != exitError || out != "" || errOut != c.want {
			t.Errorf("logstore %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("check created the missing store")
	}
}

// TestCheckLockedStore: while the store is open, its snapshot db is
// locked and check fails with status 1 instead of reading a moving store.
func TestCheckLockedStore(t *testing.T) {
	dir := checkFixture(t)
	s, err := logstore.Open(dir, checkFixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Partition("events", 0); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := inspectRun(t, "check", "--dir", dir)
	if code != exitError || !strings.Contains(errOut, "is locked by another process: is the store open?") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestInspectNoArguments: with no arguments each command looks for the
// default store, ./logstore-data, and says it is missing; none creates
// it.
func TestInspectNoArguments(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(envStoreDir, "")
	for _, cmd := range []string{"check", "producers", "read"} {
		out, errOut, code := inspectRun(t, cmd)
		want := "logstore " + cmd + ": store directory ./logstore-data does not exist\n"
		if code != exitError || out != "" || errOut != want {
			t.Errorf("logstore %s: exit %d, stdout %q, stderr %q; want 1 and %q", cmd, code, out, errOut, want)
		}
	}
	if _, err := os.Stat(defaultAppendDir); err == nil {
		t.Error("a command created the default store")
	}
}

// TestCheckSummaryCounts: the summary's nouns agree with their numbers.
func TestCheckSummaryCounts(t *testing.T) {
	got := checkSummary(logstore.CheckStats{Partitions: 1, Segments: 2, Batches: 1, Records: 3, Bytes: 1, IndexEntries: 1, Snapshots: 0, Problems: 1, Notes: 2})
	want := "checked 1 partition: 2 segments, 1 batch, 3 records, 1 byte, 1 index entry, 0 snapshots; 1 problem, 2 notes"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if !regexp.MustCompile(`^checked \d+ partitions?: `).MatchString(got) {
		t.Fatal("summary shape")
	}
}
