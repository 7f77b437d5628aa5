package kafkadump

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// goldenDir returns shared/testdata/kafka-golden, skipping without it.
func goldenDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testutil.SharedDir(t), "testdata", "kafka-golden")
}

// goldenSections reads golden-output.txt into its "=== name ===" sections,
// each a list of lines.
func goldenSections(t testing.TB) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir(t), "golden-output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]string{}
	var name string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "=== ") && strings.HasSuffix(line, " ===") {
			name = strings.TrimSuffix(strings.TrimPrefix(line, "=== "), " ===")
			sections[name] = []string{}
			continue
		}
		sections[name] = append(sections[name], line)
	}
	return sections
}

// splitStreams turns golden lines into the expected stdout and stderr:
// "[stderr] " lines go to stderr, after everything else, with $PWD/
// standing for userDir.
func splitStreams(lines []string, userDir string) (stdout, stderr string) {
	var out, errb strings.Builder
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "[stderr] "); ok {
			errb.WriteString(strings.ReplaceAll(rest, "$PWD/", userDir+"/") + "\n")
			continue
		}
		out.WriteString(l + "\n")
	}
	return out.String(), errb.String()
}

// chdirGolden copies kafka-golden's fixtures into a temporary directory
// and makes it the working directory, so that the files can be named as
// the golden output names them, and returns the absolute working
// directory as the JVM would see it (user.dir).
func chdirGolden(t *testing.T) string {
	t.Helper()
	return copyGoldenFixtures(t)
}

// lineDiff shows the first differing line of two outputs.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}

func TestDumpDecoderClassIsPrintData(t *testing.T) {
	chdirGolden(t)
	const foo = "foo-0/00000000000000000000.log"
	want, wantErr, _ := runCLI(t, "dump", "--print-data-log", "--files", foo)
	for _, flag := range []string{"--value-decoder-class", "--key-decoder-class=" + StringDecoderClass} {
		out, errOut, code := runCLI(t, "dump", flag, "--files", foo)
		if code != 0 || out != want || errOut != wantErr {
			t.Errorf("%s: exit %d, output differs from --print-data-log:\n%s", flag, code, lineDiff(want, out))
		}
	}
}

func TestDumpEmptyLog(t *testing.T) {
	chdirGolden(t)
	for _, args := range [][]string{nil, {"--deep-iteration"}, {"--print-data-log"}} {
		out, errOut, code := runCLI(t, append(append([]string{"dump"}, args...), "--files", "foo-0/00000000000000000099.log")...)
		want := "Dumping foo-0/00000000000000000099.log\nLog starting offset: 99\n"
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%v: exit %d\nstdout %q, want %q\nstderr %q", args, code, out, want, errOut)
		}
	}
}

func TestDumpSameFileTwice(t *testing.T) {
	userDir := chdirGolden(t)
	const foo = "foo-0/00000000000000000000.log"
	// Kafka keys the report by absolute path: both passes land in one
	// list, printed once, newest pair first.
	_, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", foo+","+foo)
	want := "Non-consecutive offsets in " + userDir + "/" + foo + "\n  16 is followed by 20\n  16 is followed by 20\n"
	if code != 0 || errOut != want {
		t.Errorf("exit %d, stderr %q, want %q", code, errOut, want)
	}
}

func TestDumpPathAsJavaPrintsIt(t *testing.T) {
	userDir := chdirGolden(t)
	// java.io.File collapses repeated slashes and drops a trailing one;
	// getAbsolutePath keeps "./".
	out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", ".//foo-0//00000000000000000000.log/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "Dumping ./foo-0/00000000000000000000.log\n") {
		t.Errorf("stdout starts %q", out[:min(len(out), 60)])
	}
	want := "Non-consecutive offsets in " + userDir + "/./foo-0/00000000000000000000.log\n  16 is followed by 20\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

func TestDumpUnknownSuffix(t *testing.T) {
	sections := goldenSections(t)
	userDir := chdirGolden(t)
	wantOut, wantErr := splitStreams(sections["dump --deep-iteration"], userDir)
	out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", "foo-0/00000000000000000000.log,README.md")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := wantOut + "Dumping README.md\n"; out != want {
		t.Errorf("stdout:\n%s", lineDiff(want, out))
	}
	// "Ignoring" comes as the file is met, the reports after all files.
	if want := "Ignoring unknown file README.md\n" + wantErr; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	// Java's split drops trailing empty strings.
	out, _, code = runCLI(t, "dump", "--files", "README.md,,")
	if code != 0 || out != "Dumping README.md\n" {
		t.Errorf("trailing commas: exit %d, stdout %q", code, out)
	}
}

func TestDumpMissingFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "00000000000000000042.log")
	out, errOut, code := runCLI(t, "dump", "--files", p)
	if code != 1 || out != "Dumping "+p+"\nLog starting offset: 42\n" || !strings.Contains(errOut, p) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// batchBytes builds one uncompressed batch of n records "v0".."v<n-1>".
func batchBytes(t testing.TB, base int64, n int, codec recordbatch.Codec) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(base)
	b.Compression = codec
	for i := range n {
		if err := b.Append(1700000000000+int64(i), nil, []byte(fmt.Sprintf("v%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeLog writes data as a .log file in a new temporary directory.
func writeLog(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDumpBadInput(t *testing.T) {
	good := batchBytes(t, 0, 2, recordbatch.CodecNone)
	n := len(good)
	goodLine := func(t *testing.T) string {
		out, _, _ := runCLI(t, "dump", "--files", writeLog(t, good))
		return strings.Split(out, "\n")[2] + "\n"
	}
	ff := bytes.Repeat([]byte{0xff}, 100)
	legacy := append(append([]byte{}, good...), make([]byte, 40)...)
	binary.BigEndian.PutUint32(legacy[n+8:], 28) // offset 0, length 28
	legacy[n+16] = 1                             // magic 1
	small := append([]byte{}, good...)
	binary.BigEndian.PutUint32(small[8:], 20) // length 20: 32 bytes, below the 61-byte header
	codec7 := append([]byte{}, good...)
	codec7[22] |= 7
	magic3 := append([]byte{}, good...)
	magic3[16] = 3

	tests := []struct {
		name     string
		data     []byte
		args     []string
		code     int
		batches  int    // batch lines printed before the end or the error
		wantErr  string // in stderr
		trailing string // "Found ..." line expected
	}{
		{name: "0xff", data: ff, code: 1, wantErr: "position 0: Found record size -1 smaller than minimum record overhead (14)"},
		{name: "zero tail", data: append(append([]byte{}, good...), make([]byte, 4096)...), code: 1, batches: 1,
			wantErr: fmt.Sprintf("position %d: Found record size 0 smaller than minimum record overhead (14)", n)},
		{name: "short zero tail", data: append(append([]byte{}, good...), make([]byte, 17)...), batches: 1,
			trailing: "Found 17 invalid bytes at the end of 00000000000000000000.log\n"},
		{name: "10 bytes", data: []byte("not a log!"), trailing: "Found 10 invalid bytes at the end of 00000000000000000000.log\n"},
		{name: "huge length", data: append(append([]byte{}, good...), 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 9, 9, 9), batches: 1,
			trailing: "Found 19 invalid bytes at the end of 00000000000000000000.log\n"},
		{name: "huge length with max-bytes", data: append(append([]byte{}, good...), 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 9, 9, 9),
			args: []string{"--max-bytes", "1000"}, batches: 1},
		{name: "max-bytes 0", data: good, args: []string{"--max-bytes", "0"}},
		{name: "max-bytes at default given", data: append(append([]byte{}, good...), 1, 2, 3), args: []string{"--max-bytes", "2147483647"}, batches: 1,
			trailing: "Found 3 invalid bytes at the end of 00000000000000000000.log\n"},
		{name: "legacy magic", data: legacy, code: 1, batches: 1, wantErr: fmt.Sprintf("position %d: a magic v1 message set (legacy format, before Kafka 0.11) is not supported yet", n)},
		{name: "magic 3", data: magic3, code: 1, wantErr: "position 0: magic 3"},
		{name: "below header size", data: small, code: 1, wantErr: "position 0: logstore/recordbatch: batch size below the 61-byte minimum"},
		{name: "unknown codec", data: codec7, code: 1, wantErr: "position 0: Unknown compression type id: 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeLog(t, tt.data)
			out, errOut, code := runCLI(t, append(append([]string{"dump"}, tt.args...), "--files", p)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errOut)
			}
			want := "Dumping " + p + "\nLog starting offset: 0\n" + strings.Repeat(goodLine(t), tt.batches) + tt.trailing
			if out != want {
				t.Errorf("stdout:\n%s", lineDiff(want, out))
			}
			if tt.wantErr == "" && errOut != "" {
				t.Errorf("stderr %q, want nothing", errOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, p+": "+tt.wantErr) {
				t.Errorf("stderr %q, want it to name the file and contain %q", errOut, tt.wantErr)
			}
		})
	}
}

// TestDumpBadRecords checks what is printed before a record that does not
// decode: Kafka prints the records of an uncompressed batch up to the bad
// one (but not the last record when bytes follow it), and no record of a
// compressed batch.
func TestDumpBadRecords(t *testing.T) {
	three := batchBytes(t, 0, 3, recordbatch.CodecNone)
	b, err := recordbatch.Parse(three, 0)
	if err != nil {
		t.Fatal(err)
	}
	section := b.Records() // three records of the same size
	h := b.Header()

	// The third record's length claims one byte more than there is.
	third := 2 * len(section) / 3
	badThird := append([]byte{}, section...)
	badThird[third] += 2 // zig-zag varint: +2 is a length one larger
	// Two records declared, three present: the last one leaves bytes behind.
	h2 := h
	h2.NumRecords = 2
	gz := h
	gz.Attributes = recordbatch.MakeAttributes(recordbatch.CodecGzip, recordbatch.CreateTime, false, false, false)
	gzBad, err := recordbatch.Compress(nil, recordbatch.CodecGzip, badThird)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		batch   []byte
		records int
		wantErr string
	}{
		{"uncompressed with a bad third record", recordbatch.AppendBatch(nil, h, badThird), 2,
			fmt.Sprintf("position %d: in the batch at position 0: logstore/recordbatch: invalid record", recordbatch.HeaderSize+third)},
		{"uncompressed with bytes after the last record", recordbatch.AppendBatch(nil, h2, section), 1, "records still remaining"},
		{"gzip with a bad third record", recordbatch.AppendBatch(nil, gz, gzBad), 0, "position 0: decompressed records: logstore/recordbatch: invalid record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeLog(t, tt.batch)
			out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", p)
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 3+tt.records || !strings.HasPrefix(lines[2], "baseOffset: 0 ") {
				t.Fatalf("stdout has %d lines, want the batch line and %d record lines:\n%s\nstderr: %s", len(lines), tt.records, out, errOut)
			}
			for i := range tt.records {
				if want := fmt.Sprintf("| offset: %d CreateTime: ", i); !strings.HasPrefix(lines[3+i], want) {
					t.Errorf("line %q, want prefix %q", lines[3+i], want)
				}
			}
			if !strings.Contains(errOut, p+": ") || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestDumpControlRecords(t *testing.T) {
	// An unknown control type prints its id; a marker its epoch.
	b := recordbatch.NewBuilder(5)
	b.Control = true
	if err := b.Append(1700000000000, []byte{0, 0, 0, 42}, nil, nil); err != nil {
		t.Fatal(err)
	}
	unknown, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	marker, err := recordbatch.AppendEndTxnBatch(nil, 6, 1700000000001, 0, 9, 1, recordbatch.EndTxnMarker{Type: recordbatch.ControlAbort, CoordinatorEpoch: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := writeLog(t, append(unknown, marker...))
	out, errOut, code := runCLI(t, "dump", "--print-data-log", "--files", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"| offset: 5 CreateTime: 1700000000000 keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] controlType: UNKNOWN(42)\n",
		"| offset: 6 CreateTime: 1700000000001 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// TestDumpBatchFields covers header fields the golden files do not: a
// delete horizon, a negative and a zero record count.
func TestDumpBatchFields(t *testing.T) {
	two, err := recordbatch.Parse(batchBytes(t, 0, 2, recordbatch.CodecNone), 0)
	if err != nil {
		t.Fatal(err)
	}
	section := two.Records()

	horizon := two.Header()
	horizon.Attributes = recordbatch.MakeAttributes(recordbatch.CodecNone, recordbatch.CreateTime, false, false, true)
	horizon.BaseTimestamp = 1700000099999
	p := writeLog(t, recordbatch.AppendBatch(nil, horizon, section))
	out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", p)
	if code != 0 {
		t.Fatalf("delete horizon: exit %d: %s", code, errOut)
	}
	// Kafka adds the record deltas to the field, horizon or not.
	for _, want := range []string{
		" isControl: false deleteHorizonMs: OptionalLong[1700000099999] position: 0 CreateTime: 1700000000001 ",
		"| offset: 1 CreateTime: 1700000100000 keySize: -1 valueSize: 2 sequence: -1 headerKeys: []\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("delete horizon: stdout lacks %q:\n%s", want, out)
		}
	}

	negative := two.Header()
	negative.NumRecords = -1
	p = writeLog(t, recordbatch.AppendBatch(nil, negative, section))
	out, errOut, code = runCLI(t, "dump", "--files", p)
	if code != 0 || !strings.Contains(out, " count: -1 ") || !strings.Contains(out, " isvalid: true\n") {
		t.Errorf("negative count, shallow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "dump", "--deep-iteration", "--files", p)
	if code != 1 || !strings.Contains(errOut, p+": position 0: Found invalid record count -1 in magic v2 batch") {
		t.Errorf("negative count, deep: exit %d, stderr %q", code, errOut)
	}

	// Kafka does not read the records of a batch that says it has none.
	empty := two.Header()
	empty.NumRecords = 0
	p = writeLog(t, recordbatch.AppendBatch(nil, empty, section))
	out, errOut, code = runCLI(t, "dump", "--print-data-log", "--files", p)
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("zero count: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDumpKRaftSnapshot dumps the batches of a real KRaft snapshot
// (.checkpoint) copied as a .log: its SNAPSHOT_HEADER record, which Kafka
// prints as JSON, is refused, unless --skip-record-metadata leaves the
// JSON out.
func TestDumpKRaftSnapshot(t *testing.T) {
	src := testutil.SharedFile(t, "kafka-real/pda-final-project-backend/__cluster_metadata-0/00000000000000007201-0000000001.checkpoint")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := writeLog(t, data)
	out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", p)
	if code != 1 || !strings.Contains(errOut, p+": position 0: control record at offset 0: type SNAPSHOT_HEADER(3), which Kafka prints as JSON, is not supported yet") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("stdout has %d lines, want Dumping, Log starting offset and the batch line:\n%s", n, out)
	}
	out, errOut, code = runCLI(t, "dump", "--print-data-log", "--skip-record-metadata", "--files", p)
	if code != 0 || errOut != "" {
		t.Fatalf("skip-record-metadata: exit %d, stderr %q", code, errOut)
	}
	if lines := strings.Split(out, "\n"); lines[3] != "" {
		t.Errorf("the control record prints %q, want an empty line", lines[3])
	}
}

// segmentStats walks a segment as the dump does and counts its whole
// batches and their records, and finds the first legacy message.
func segmentStats(t testing.TB, data []byte) (batches, records int, legacyPos int, legacyMagic int8) {
	t.Helper()
	legacyPos = -1
	for pos := 0; ; {
		f, stop := recordbatch.NextFrame(data[pos:], int64(len(data)-pos))
		if stop != recordbatch.FrameOK {
			break
		}
		if f.Magic < 2 {
			return batches, records, pos, f.Magic
		}
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			t.Fatalf("batch at %d: %v", pos, err)
		}
		batches++
		records += int(b.NumRecords())
		pos += b.Size()
	}
	return batches, records, legacyPos, 0
}

// TestDumpRealSegments dumps every segment that real brokers and clients
// wrote. All must dump without error; the line counts must match the
// batches and records in the file.
func TestDumpRealSegments(t *testing.T) {
	root := filepath.Join(testutil.SharedDir(t), "testdata")
	var files []string
	for _, dir := range []string{"kafka-real", "franz-go"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d .log files under %s", len(files), root)
	}
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			batches, records, legacy, _ := segmentStats(t, data)
			if legacy >= 0 {
				t.Fatalf("legacy message at %d; this test expects none in these files", legacy)
			}
			out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", p)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGapReport(t, errOut)
			if got, want := strings.Count(out, "\n"), 2+batches+records; got != want {
				t.Errorf("%d lines, want %d (%d batches, %d records)", got, want, batches, records)
			}
			out, errOut, code = runCLI(t, "dump", "--deep-iteration", "--print-data-log", "--files", p)
			if code != 0 {
				t.Fatalf("--print-data-log: exit %d: %s", code, errOut)
			}
			checkGapReport(t, errOut)
			if got := strings.Count(out, "\n| offset: "); got < records {
				t.Errorf("--print-data-log: %d record lines, want %d", got, records)
			}
		})
	}
}

// checkGapReport accepts only non-consecutive offset reports on stderr.
func checkGapReport(t *testing.T, stderr string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "Non-consecutive offsets in /") && !strings.HasPrefix(l, "  ") {
			t.Errorf("unexpected stderr line %q", l)
		}
	}
}

// TestDumpLegacySegments dumps the broker-served segment bytes of
// segmentio/kafka-go's fixtures, some of which mix legacy message sets
// (magic 0/1) with v2 batches: the v2 batches before the first legacy
// message are printed, and the legacy message is refused by position.
func TestDumpLegacySegments(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "testdata", "kafka-real", "segmentio-kafka-go")
	files, err := filepath.Glob(filepath.Join(dir, "*.records.bin"))
	if err != nil || len(files) == 0 {
		t.Skipf("no segmentio fixtures in %s: %v", dir, err)
	}
	refused := 0
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			batches, _, legacy, magic := segmentStats(t, data)
			p := writeLog(t, data)
			out, errOut, code := runCLI(t, "dump", "--deep-iteration", "--files", p)
			if got := strings.Count(out, "\nbaseOffset: "); got != batches {
				t.Errorf("%d batch lines, want %d", got, batches)
			}
			if legacy < 0 {
				if code != 0 {
					t.Errorf("exit %d: %s", code, errOut)
				}
				return
			}
			refused++
			want := fmt.Sprintf("%s: position %d: a magic v%d message set (legacy format, before Kafka 0.11) is not supported yet", p, legacy, magic)
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("exit %d, stderr %q, want %q", code, errOut, want)
			}
		})
	}
	t.Logf("%d of %d fixtures hold legacy messages and were refused", refused, len(files))
}

// The generated segments hold batches of benchRecordsPerBatch records,
// each with a key, a header and a value of benchValueSize bytes.
const (
	benchRecordsPerBatch = 64
	benchValueSize       = 100
)

// writeSegment writes a segment of about size bytes built with
// recordbatch.Builder and returns its path.
func writeSegment(t testing.TB, dir string, size int64, codec recordbatch.Codec) string {
	t.Helper()
	p := filepath.Join(dir, "00000000000000000000.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	value := bytes.Repeat([]byte("logstore-"), benchValueSize/9+1)[:benchValueSize]
	headers := []recordbatch.RecordHeader{{Key: []byte("trace"), Value: []byte("0123456789abcdef")}}
	b := recordbatch.NewBuilder(0)
	var buf []byte
	var written, offset int64
	for written < size {
		b.Reset(offset)
		b.Compression = codec
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = 1000, 0, int32(offset%(1<<31))
		for i := range benchRecordsPerBatch {
			key := fmt.Appendf(nil, "key-%d", (offset+int64(i))%1000)
			if err := b.Append(1700000000000+offset+int64(i), key, value, headers); err != nil {
				t.Fatal(err)
			}
		}
		if buf, err = b.AppendTo(buf[:0]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		written += int64(len(buf))
		offset += benchRecordsPerBatch
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDumpMemoryFlat checks that dumping allocates in proportion to a
// batch, not to the segment.
func TestDumpMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 8 MiB segment")
	}
	const size = 8 << 20
	p := writeSegment(t, t.TempDir(), size, recordbatch.CodecNone)
	for _, args := range [][]string{{"--deep-iteration"}, {"--print-data-log"}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		code := run(append(append([]string{"dump"}, args...), "--files", p), io.Discard, io.Discard)
		runtime.ReadMemStats(&after)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
			t.Errorf("%v: dumping %d bytes allocated %d bytes", args, size, alloc)
		}
	}
}

// BenchmarkDump dumps a generated 64 MiB segment of uncompressed batches
// (64 records of 100-byte values, a key and a header each) to io.Discard.
func BenchmarkDump(b *testing.B) {
	p := writeSegment(b, b.TempDir(), 64<<20, recordbatch.CodecNone)
	info, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"shallow", nil},
		{"deep-iteration", []string{"--deep-iteration"}},
		{"print-data-log", []string{"--print-data-log"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			args := append(append([]string{"dump"}, mode.args...), "--files", p)
			b.SetBytes(info.Size())
			b.ReportAllocs()
			for b.Loop() {
				if code := run(args, io.Discard, io.Discard); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

// offsetIndexBytes encodes .index entries (offset, position) of a segment
// at base.
func offsetIndexBytes(base int64, entries [][2]int64) []byte {
	var out []byte
	for _, e := range entries {
		out = binary.BigEndian.AppendUint32(out, uint32(e[0]-base))
		out = binary.BigEndian.AppendUint32(out, uint32(e[1]))
	}
	return out
}

// timeIndexBytes encodes .timeindex entries (timestamp, offset) of a
// segment at base.
func timeIndexBytes(base int64, entries [][2]int64) []byte {
	var out []byte
	for _, e := range entries {
		out = binary.BigEndian.AppendUint64(out, uint64(e[0]))
		out = binary.BigEndian.AppendUint32(out, uint32(e[1]-base))
	}
	return out
}

// writeSnapshotDB writes dir/producer-snapshots.db with snapshots at
// offsets 0 (no producer), 21 (four producers: an empty window, a window
// across the sequence wrap, a transactional producer, and a full window
// with an open transaction) and 40, and at 30 a value whose CRC fails.
func writeSnapshotDB(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const T = 1700000000000
	full := make([]producerstate.BatchMeta, producerstate.WindowSize)
	for i := range full {
		full[i] = producerstate.BatchMeta{FirstSeq: int32(10 * i), LastSeq: int32(10*i + 9), FirstOffset: int64(100 + 10*i), LastOffset: int64(109 + 10*i), Timestamp: T + int64(i)}
	}
	snaps := []producerstate.Snapshot{
		{Offset: 0},
		{Offset: 21, Producers: []producerstate.Entry{
			{ProducerID: 5, Epoch: 1, CoordinatorEpoch: 2, TxnFirstOffset: -1, LastTimestamp: T + 16},
			{ProducerID: 7, Epoch: 0, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: T + 13,
				Batches: []producerstate.BatchMeta{{FirstSeq: 2147483646, LastSeq: 0, FirstOffset: 11, LastOffset: 13, Timestamp: T + 13}}},
			{ProducerID: 98323, Epoch: 99, CoordinatorEpoch: 100, TxnFirstOffset: -1, LastTimestamp: T + 9,
				Batches: []producerstate.BatchMeta{{FirstSeq: 266, LastSeq: 267, FirstOffset: 8, LastOffset: 9, Timestamp: T + 9}}},
			{ProducerID: 29342342, Epoch: 15, CoordinatorEpoch: 3, TxnFirstOffset: 100, LastTimestamp: T + 4, Batches: full},
		}},
		{Offset: 40, Producers: []producerstate.Entry{
			{ProducerID: 7, Epoch: 1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: T + 40,
				Batches: []producerstate.BatchMeta{{FirstSeq: 0, LastSeq: 0, FirstOffset: 39, LastOffset: 39, Timestamp: T + 40}}},
		}},
	}
	st, _, err := snapshot.Open(dir, snapshot.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if err := st.Save(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	bad, err := snapshot.AppendValue(nil, producerstate.Snapshot{Offset: 30, Producers: snaps[1].Producers[:1]})
	if err != nil {
		t.Fatal(err)
	}
	bad[len(bad)-1] ^= 0xff
	db, err := bolt.Open(filepath.Join(dir, snapshot.FileName), 0o644, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("producer-snapshots")).Put(binary.BigEndian.AppendUint64(nil, 30), bad)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// binaryLog builds a segment whose keys, values and headers are not plain
// text: malformed UTF-8, an encoded surrogate, control characters, JSON
// specials, an empty value, a null header value.
func binaryLog(t testing.TB) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	recs := []struct {
		key, value []byte
		headers    []recordbatch.RecordHeader
	}{
		{[]byte{0xff, 'a', 0xc3}, []byte("quote\" backslash\\ tab\t bell\x07 e-acute \xc3\xa9"),
			[]recordbatch.RecordHeader{{Key: []byte("h\xff"), Value: []byte{0, 1, 0xfe}}, {Key: []byte("n"), Value: nil}}},
		{nil, []byte{}, nil},
		{[]byte("\xed\xa0\x80"), []byte("\xf0\x9f\x98\x80 ok"), []recordbatch.RecordHeader{{Key: []byte(""), Value: []byte("")}}},
	}
	for i, r := range recs {
		if err := b.Append(1700000000000+int64(i), r.key, r.value, r.headers); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexFixture writes, in a new directory, a segment at base 0 made of
// the golden foo-0 log, with the index, time index and txnindex files
// given (nil: not written), and returns the directory.
func indexFixture(t *testing.T, index, timeIndex, txnIndex []byte) string {
	t.Helper()
	dir := t.TempDir()
	log, err := os.ReadFile(filepath.Join(goldenDir(t), "foo-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		suffix string
		data   []byte
	}{{".log", log}, {".index", index}, {".timeindex", timeIndex}, {".txnindex", txnIndex}} {
		if f.data != nil {
			if err := os.WriteFile(filepath.Join(dir, "00000000000000000000"+f.suffix), f.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// randomBytes returns n bytes from a fixed seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestDumpIndexBadInput checks what each kind of damaged or missing input
// gives: Kafka's reports where Kafka reports and goes on (exit 0), and
// where Kafka's tool fails, one message naming the file and the byte, and
// exit 1, never a panic.
func TestDumpIndexBadInput(t *testing.T) {
	golden := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(goldenDir(t), "foo-0", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	goodIndex := golden("00000000000000000000.index")
	goodTime := golden("00000000000000000000.timeindex")
	// The first entry says offset 6 is at byte 9999 of an 889-byte log.
	pastEnd := offsetIndexBytes(0, [][2]int64{{6, 9999}})
	negative := offsetIndexBytes(0, [][2]int64{{6, -1}})
	// Position 870: the last 19 bytes, the start of no batch.
	tail := offsetIndexBytes(0, [][2]int64{{20, 870}})
	// Position 885: only 4 bytes left.
	end := offsetIndexBytes(0, [][2]int64{{20, 885}})
	// The last entry is below the base offset: the sanity check fails.
	below := offsetIndexBytes(0, [][2]int64{{11, 503}, {-5, 175}})
	// Versions that Kafka accepts (0, and negative ones: it reads one
	// signed byte), then at entry 3 one it does not know.
	randomTxn := randomBytes(3, 10*txnIndexEntrySize)
	for i := 0; i < len(randomTxn); i += txnIndexEntrySize {
		randomTxn[i] |= 0x80
	}
	randomTxn[0] = 0
	randomTxn[3*txnIndexEntrySize] = 7

	const index, timeindex, txnindex = "00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.txnindex"
	tests := []struct {
		name             string
		index, ti, txn   []byte
		file             string
		args             []string
		code             int
		stdout, stderr   []string // each must appear
		noStdout         []string // must not appear
		stdoutLines      int      // -1: not checked
		removeLog        bool
		stderrNamesFile  bool
		stderrLinesExact int // -1: not checked
	}{
		{name: "missing index", file: index, code: 1, stderr: []string{"no such file or directory"}, stderrNamesFile: true},
		{name: "missing time index", index: goodIndex, file: timeindex, code: 1, stderr: []string{"no such file or directory"}, stderrNamesFile: true},
		{name: "time index without an offset index", ti: goodTime, file: timeindex, code: 1,
			stderr: []string{"opening its segment's offset index", "00000000000000000000.index: no such file or directory"}, stderrNamesFile: true},
		{name: "index without its log", index: goodIndex, file: index, removeLog: true, code: 1,
			stderr: []string{"opening its segment's log", "00000000000000000000.log: no such file or directory"}, stderrNamesFile: true},
		{name: "missing txnindex", file: txnindex, code: 1, stderr: []string{"no such file or directory"}, stderrNamesFile: true},
		{name: "random index", index: randomBytes(1, 1024), file: index, code: 1, stderr: []string{"entry 0 at byte 0: offset "}, stderrNamesFile: true},
		{name: "position past the log", index: pastEnd, file: index, code: 1,
			stderr: []string{"entry 0 at byte 0: offset 6: position 9999 is past the end of", "(889 bytes)"}, stderrNamesFile: true},
		{name: "negative position", index: negative, file: index, code: 1, stderr: []string{"entry 0 at byte 0: offset 6: position -1 is negative"}},
		{name: "position inside a batch", index: tail, file: index, code: 1,
			stderr: []string{"entry 0 at byte 0: offset 20: no batch at position 870 of ", "the batch there runs past the end of the log"}},
		{name: "position near the end", index: end, file: index, code: 1, stderr: []string{"no batch at position 885", "only 4 bytes are left"}},
		{name: "max-message-size below the batch", index: goodIndex, file: index, args: []string{"--max-message-size", "50"}, code: 1,
			stderr: []string{"entry 0 at byte 0: offset 6: no batch at position 175", "within --max-message-size 50 bytes"}},
		{name: "negative max-message-size", index: goodIndex, file: index, args: []string{"--max-message-size", "-1"}, code: 1, stderr: []string{"--max-message-size -1 is negative"}},
		{name: "truncated index", index: goodIndex[:20], file: index, code: 0, stdout: []string{"offset: 6 position: 175\noffset: 9 position: 328\n"}, noStdout: []string{"offset: 13"}},
		{name: "truncated index with the sanity check", index: goodIndex[:20], file: index, args: []string{"--index-sanity-check"}, code: 1,
			stderr: []string{"Index file ", "00000000000000000000.index is corrupt, found 20 bytes which is neither positive nor a multiple of 8"}},
		{name: "index shorter than an entry", index: goodIndex[:7], file: index, code: 0, stdout: []string{"00000000000000000000.index is empty.\n"}},
		{name: "last offset below the base with the sanity check", index: below, file: index, args: []string{"--index-sanity-check"}, code: 1,
			stderr: []string{"Corrupt index found, index file ", "has non-zero size but the last offset is -5 which is less than the base offset 0"}},
		{name: "truncated time index with the sanity check", index: goodIndex, ti: goodTime[:48], file: timeindex, args: []string{"--index-sanity-check"}, code: 0,
			stdout: []string{"00000000000000000000.timeindex passed sanity check.\n"}},
		{name: "time index of 13 bytes with the sanity check", index: goodIndex, ti: goodTime[:13], file: timeindex, args: []string{"--index-sanity-check"}, code: 1,
			stderr: []string{"Time index file ", "is corrupt, found 13 bytes which is neither positive nor a multiple of 12"}},
		// Kafka's time index dump reports what it cannot find, and goes on.
		{name: "random time index", index: goodIndex, ti: randomBytes(2, 1200), file: timeindex, code: 0,
			stderr: []string{"The following indexed offsets are not found in the log.\nIndexed offset: "}},
		{name: "random index and time index", index: randomBytes(1, 1024), ti: randomBytes(2, 1200), file: timeindex, code: 1,
			stderr: []string{"00000000000000000000.timeindex: entry 0 at byte 0: offset "}, stderrNamesFile: true},
		{name: "random txnindex", txn: randomTxn, file: txnindex, code: 1,
			stderr: []string{"entry 3 at byte 102: Unexpected aborted transaction version 7 in transaction index /"}, noStdout: []string{"version: "}, stderrNamesFile: true},
		{name: "txnindex with a partial entry", txn: append(golden(txnindex), 1, 2, 3), file: txnindex, code: 0,
			stdout: []string{"version: 0 producerId: 9 firstOffset: 17 lastOffset: 30 lastStableOffset: 31\n"}},
		{name: "txnindex with negative versions", txn: bytes.Repeat([]byte{0xff}, txnIndexEntrySize), file: txnindex, code: 0,
			stdout: []string{"version: -1 producerId: -1 firstOffset: -1 lastOffset: -1 lastStableOffset: -1\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := indexFixture(t, tt.index, tt.ti, tt.txn)
			if tt.removeLog {
				if err := os.Remove(filepath.Join(dir, "00000000000000000000.log")); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, tt.file)
			out, errOut, code := runCLI(t, append(append([]string{"dump"}, tt.args...), "--files", p)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", code, tt.code, out, errOut)
			}
			if !strings.HasPrefix(out, "Dumping "+p+"\n") {
				t.Errorf("stdout %q does not start with the Dumping line", out)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q lacks %q", out, w)
				}
			}
			for _, w := range tt.noStdout {
				if strings.Contains(out, w) {
					t.Errorf("stdout %q has %q", out, w)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if tt.code == 1 {
				if !strings.HasPrefix(errOut, "logstore dump: ") || strings.Count(errOut, "\n") != 1 {
					t.Errorf("stderr %q: want one line", errOut)
				}
				if tt.stderrNamesFile && !strings.Contains(errOut, dir) {
					t.Errorf("stderr %q does not name the file", errOut)
				}
			}
		})
	}
}

// TestDumpSnapshotBadInput: a snapshot Kafka refuses is reported with
// Kafka's message and the dump goes on (Kafka's behaviour, pinned by
// golden-output.txt); a snapshot that cannot be read at all ends it.
func TestDumpSnapshotBadInput(t *testing.T) {
	dir := t.TempDir()
	random := filepath.Join(dir, "00000000000000000001.snapshot")
	short := filepath.Join(dir, "00000000000000000002.snapshot")
	huge := filepath.Join(dir, "00000000000000000003.snapshot")
	hugeCount := []byte{0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3}
	for p, data := range map[string][]byte{random: randomBytes(4, 500), short: {0, 1, 2, 3, 4}, huge: hugeCount} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(goldenDir(t), "foo-0", "00000000000000000021.snapshot")
	out, errOut, code := runCLI(t, "dump", "--files", strings.Join([]string{random, short, huge, good}, ","))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "Snapshot failed schema validation: Snapshot contained an unknown file version " + fmt.Sprint(int16(binary.BigEndian.Uint16(randomBytes(4, 2)))) + "\n" +
		"Snapshot failed schema validation: null\n" +
		"Snapshot failed schema validation: Tried to allocate a collection of size 2147483647, but there are only 3 bytes remaining.\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if strings.Count(out, "producerId: ") != 3 {
		t.Errorf("the good snapshot after the bad ones was not dumped:\n%s", out)
	}
	// JSON gives the file and the byte where reading stopped.
	out, _, code = runCLI(t, "dump", "--json", "--files", short)
	if code != 0 || !strings.Contains(out, `{"type":"snapshotError","file":"`+short+`","error":"Snapshot failed schema validation: null","position":5,"size":5}`) {
		t.Errorf("json: exit %d, stdout %q", code, out)
	}

	missing := filepath.Join(dir, "00000000000000000009.snapshot")
	out, errOut, code = runCLI(t, "dump", "--files", missing+","+good)
	if code != 1 || out != "Dumping "+missing+"\n" || !strings.Contains(errOut, missing+": no such file or directory") {
		t.Errorf("missing: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDumpSnapshotDB checks the db dump opens the file read-only: it is
// not changed, a file that is not a db is an error, and so is a db that
// a running store holds.
func TestDumpSnapshotDB(t *testing.T) {
	dir := t.TempDir()
	writeSnapshotDB(t, dir)
	p := filepath.Join(dir, snapshot.FileName)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "dump", "--files", p)
	if code != 0 || !strings.Contains(out, "snapshot offset: 40 producers: 1\n") || !strings.Contains(errOut, "snapshot at offset 30") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	after, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	info2, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) || !info.ModTime().Equal(info2.ModTime()) {
		t.Error("dumping changed the db")
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v, want the db alone (%v)", entries, err)
	}

	// A running store holds the file: the dump waits, then says so.
	st, _, err := snapshot.Open(dir, snapshot.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "dump", "--files", p)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(errOut, p) || !strings.Contains(errOut, "timeout") {
		t.Errorf("locked: exit %d, stderr %q", code, errOut)
	}

	other := t.TempDir()
	bad := filepath.Join(other, snapshot.FileName)
	if err := os.WriteFile(bad, randomBytes(5, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, "dump", "--files", bad)
	if code != 1 || !strings.Contains(errOut, bad) {
		t.Errorf("not a db: exit %d, stderr %q", code, errOut)
	}
	if data, err := os.ReadFile(bad); err != nil || !bytes.Equal(data, randomBytes(5, 8192)) {
		t.Errorf("the bad db was changed or moved: %v", err)
	}
	_, errOut, code = runCLI(t, "dump", "--files", filepath.Join(other, "sub", snapshot.FileName))
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing db: exit %d, stderr %q", code, errOut)
	}
}

// TestDumpEmptySnapshotDB: an empty producer-snapshots.db (a crash
// between creating the file and bbolt's first write leaves one) is
// reported in one line that names it, and the files after it are still
// dumped; the exit status says a file could not be dumped.
func TestDumpEmptySnapshotDB(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(log, batchBytes(t, 0, 2, recordbatch.CodecNone), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, snapshot.FileName)
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantLog, _, code := runCLI(t, "dump", "--files", log)
	if code != 0 {
		t.Fatalf("the log alone: exit %d", code)
	}
	out, errOut, code := runCLI(t, "dump", "--files", db+","+log)
	if want := "Dumping " + db + "\n" + wantLog; code != 1 || out != want {
		t.Errorf("exit %d, stdout:\n%s", code, lineDiff(want, out))
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(lines) != 2 || lines[0] != db+": the file is empty (0 bytes), not a snapshot db" ||
		!strings.HasPrefix(lines[1], "logstore dump: producer-snapshots.db could not be dumped: "+db+" ") {
		t.Errorf("stderr %q", errOut)
	}

	// A directory: the db comes last, after the segment's files.
	out, errOut, code = runCLI(t, "dump", "--files", dir)
	if code != 1 || !strings.HasPrefix(out, wantLog) || !strings.HasSuffix(out, "Dumping "+db+"\n") ||
		!strings.HasPrefix(errOut, db+": the file is empty") {
		t.Errorf("directory: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}

	// --json: the problem is a line of its own on stdout.
	out, errOut, code = runCLI(t, "dump", "--json", "--files", db+","+log)
	want := `{"type":"file","file":"` + db + `","kind":"producer-snapshots"}` + "\n" +
		`{"type":"snapshotError","file":"` + db + `","error":"the file is empty (0 bytes), not a snapshot db"}` + "\n"
	if code != 1 || !strings.HasPrefix(out, want) || !strings.Contains(out, `{"type":"batch","file":"`+log+`"`) ||
		strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, db) {
		t.Errorf("json: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if err := Dump(io.Discard, io.Discard, []string{db, log}, DefaultOptions()); !errors.Is(err, ErrUnreadableDB) {
		t.Errorf("Dump: %v, want ErrUnreadableDB", err)
	}
	if data, err := os.ReadFile(db); err != nil || len(data) != 0 {
		t.Errorf("the db was changed: %d bytes, %v", len(data), err)
	}
}

// TestDumpIndexesOfLargeSegment dumps the indexes of a segment of 3000
// batches, as a broker leaves them: sparse, the time index pointing at
// the batch of the largest timestamp so far, both preallocated and not
// trimmed. Like DumpLogSegmentsTest's testDumpIndexMismatches and
// testDumpTimeIndexErrors, nothing is reported; with more entries than
// the warm section, the lookups take both of AbstractIndex's paths.
func TestDumpIndexesOfLargeSegment(t *testing.T) {
	dir := t.TempDir()
	const base = 1000
	var log, index, timeIndex []byte
	var lastIndexed int
	entries := 0
	for i := range 3000 {
		b := recordbatch.NewBuilder(int64(base + 2*i))
		for j := range 2 {
			if err := b.Append(1700000000000+int64(2*i+j), nil, []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
		pos := len(log)
		var err error
		if log, err = b.AppendTo(log); err != nil {
			t.Fatal(err)
		}
		if pos-lastIndexed >= 128 || i == 0 {
			last := int64(base + 2*i + 1)
			index = append(index, offsetIndexBytes(base, [][2]int64{{last, int64(pos)}})...)
			timeIndex = append(timeIndex, timeIndexBytes(base, [][2]int64{{1700000000000 + int64(2*i+1), last}})...)
			lastIndexed = pos
			entries++
		}
	}
	if entries <= 1025 {
		t.Fatalf("only %d index entries", entries)
	}
	index = append(index, make([]byte, 800)...)
	timeIndex = append(timeIndex, make([]byte, 1200)...)
	name := fmt.Sprintf("%020d", base)
	for suffix, data := range map[string][]byte{".log": log, ".index": index, ".timeindex": timeIndex} {
		if err := os.WriteFile(filepath.Join(dir, name+suffix), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, name)
	out, errOut, code := runCLI(t, "dump", "--files", p+".index,"+p+".timeindex")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if n := strings.Count(out, "\noffset: "); n != entries {
		t.Errorf("%d index lines, want %d", n, entries)
	}
	if n := strings.Count(out, "\ntimestamp: "); n != entries {
		t.Errorf("%d time index lines, want %d", n, entries)
	}
	out, errOut, code = runCLI(t, "dump", "--verify-index-only", "--files", p+".index,"+p+".timeindex")
	if code != 0 || errOut != "" || out != "Dumping "+p+".index\nDumping "+p+".timeindex\n" {
		t.Errorf("--verify-index-only: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	// Entries that point at the wrong batches are found wherever they are.
	binary.BigEndian.PutUint32(index[8*1300+4:], 0)
	binary.BigEndian.PutUint64(timeIndex[12*1200:], 5)
	for suffix, data := range map[string][]byte{".index": index, ".timeindex": timeIndex} {
		if err := os.WriteFile(filepath.Join(dir, name+suffix), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code = runCLI(t, "dump", "--verify-index-only", "--files", p+".index,"+p+".timeindex")
	if code != 0 || !strings.Contains(errOut, "Mismatches in :"+p+".index\n  Index offset: ") ||
		!strings.Contains(errOut, "Found timestamp mismatch in :"+p+".timeindex\n  Index timestamp: 5, log timestamp: ") ||
		!strings.Contains(errOut, "Found out of order timestamp in :"+p+".timeindex\n  Index timestamp: 5, Previously indexed timestamp: ") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestDumpIndexMemoryFlat checks that dumping the indexes of a segment
// allocates in proportion to a batch, not to the files.
func TestDumpIndexMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 8 MiB segment")
	}
	dir := t.TempDir()
	p := writeSegment(t, dir, 8<<20, recordbatch.CodecNone)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var index, timeIndex []byte
	for pos := 0; pos < len(data); {
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			t.Fatal(err)
		}
		index = append(index, offsetIndexBytes(0, [][2]int64{{b.LastOffset(), int64(pos)}})...)
		timeIndex = append(timeIndex, timeIndexBytes(0, [][2]int64{{b.MaxTimestamp(), b.LastOffset()}})...)
		pos += b.Size()
	}
	base := strings.TrimSuffix(p, ".log")
	for suffix, d := range map[string][]byte{".index": index, ".timeindex": timeIndex} {
		if err := os.WriteFile(base+suffix, d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := run([]string{"dump", "--files", base + ".index," + base + ".timeindex"}, io.Discard, io.Discard)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("dumping the indexes of %d bytes allocated %d bytes", len(data), alloc)
	}
}

// TestDumpDirectoryOrder lists a directory as the help text says: by
// offset, then kind, then the db; other files and subdirectories left out.
func TestDumpDirectoryOrder(t *testing.T) {
	dir := t.TempDir()
	names := []string{
		"00000000000000000100.snapshot", "00000000000000000100.timeindex", "00000000000000000100.index",
		"00000000000000000100.log", "00000000000000000100.txnindex", "00000000000000000007.snapshot",
		"00000000000000000009.log", "producer-snapshots.db", "00000000000000000100.log.deleted",
		"00000000000000000100.index.swap", "leader-epoch-checkpoint", "00000000000000007201-0000000001.checkpoint",
		"abc.log", "+5.log", "10.log",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "00000000000000000001.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	jobs, err := planDumpJobs([]string{dir + "/"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, strings.TrimPrefix(j.file.path, dir+"/"))
	}
	want := []string{
		"00000000000000000007.snapshot", "00000000000000000009.log", "10.log",
		"00000000000000000100.log", "00000000000000000100.index", "00000000000000000100.timeindex",
		"00000000000000000100.txnindex", "00000000000000000100.snapshot", "producer-snapshots.db",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order %q\nwant  %q", got, want)
	}
	empty := t.TempDir()
	out, errOut, code := runCLI(t, "dump", "--files", empty)
	if code != 0 || out != "" || errOut != "" {
		t.Errorf("empty directory: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestDumpJSONLines checks that every line of every --json golden run is
// one JSON object with a type and the file.
func TestDumpJSONLines(t *testing.T) {
	userDir := copyGoldenFixtures(t)
	setupOwnFixtures(t, userDir)
	types := map[string]int{}
	for _, r := range ownGoldenRuns {
		if !slices.Contains(r.args, "--json") {
			continue
		}
		out, errOut, code := runCLI(t, r.args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", r.name, code, errOut)
		}
		for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			var obj map[string]any
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Fatalf("%s: line %d is not JSON: %v\n%s", r.name, i+1, err, line)
			}
			typ, _ := obj["type"].(string)
			file, _ := obj["file"].(string)
			if typ == "" || file == "" {
				t.Errorf("%s: line %d lacks a type or file: %s", r.name, i+1, line)
			}
			types[typ]++
		}
	}
	for _, typ := range []string{"file", "batch", "record", "invalidBytes", "nonConsecutive", "indexEntry", "indexMismatch",
		"timeIndexEntry", "timestampMismatch", "outOfOrderTimestamp", "offsetNotFound", "sanityCheck", "snapshotEntry",
		"snapshotError", "abortedTxn", "snapshot", "producer"} {
		if types[typ] == 0 {
			t.Errorf("no golden run prints a %q line", typ)
		}
	}
}

// TestDumpJSONControlRecords: --json prints the control records that
// Kafka's text prints as JSON, which the text output refuses.
func TestDumpJSONControlRecords(t *testing.T) {
	src := testutil.SharedFile(t, "kafka-real/pda-final-project-backend/__cluster_metadata-0/00000000000000007201-0000000001.checkpoint")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := writeLog(t, data)
	out, errOut, code := runCLI(t, "dump", "--json", "--deep-iteration", "--files", p)
	if code != 0 || !strings.Contains(out, `"controlType":"SNAPSHOT_HEADER","controlTypeId":3}`) {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// TestDumpProgress: with a progress writer, the dump draws its line there
// (the file, the share done, bytes done of all) and clears it at the end;
// how often it is redrawn is cliout's, tested there.
func TestDumpProgress(t *testing.T) {
	p := writeLog(t, batchBytes(t, 0, 3, recordbatch.CodecNone))
	var out, errOut, prog bytes.Buffer
	opts := DefaultOptions()
	opts.Progress = &prog
	if err := Dump(&out, &errOut, []string{p}, opts); err != nil {
		t.Fatal(err)
	}
	got := prog.String()
	draw := regexp.MustCompile(`^\r00000000000000000000\.log: \d+% \(\d+ of \d+\)\x1b\[K`)
	if !draw.MatchString(got) || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("progress wrote %q", got)
	}
	if errOut.Len() != 0 || !strings.HasPrefix(out.String(), "Dumping "+p+"\n") {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}

// FuzzDumpIndexes feeds arbitrary bytes to the .index, .timeindex and
// .txnindex dumps, over an arbitrary log, in text and JSON: they may
// fail, but only with an error that says where, and never panic.
func FuzzDumpIndexes(f *testing.F) {
	if dir, ok := testutil.SharedDirIfPresent(); ok {
		read := func(name string) []byte {
			data, _ := os.ReadFile(filepath.Join(dir, "testdata", "kafka-golden", "foo-0", name))
			return data
		}
		log := read("00000000000000000000.log")
		f.Add(log, read("00000000000000000000.index"), read("00000000000000000000.timeindex"), read("00000000000000000000.txnindex"), false)
		f.Add(log[:854], offsetIndexBytes(0, [][2]int64{{6, 175}, {20, 820}}), timeIndexBytes(0, [][2]int64{{5, 9}, {0, 25}}), []byte{1}, true)
	}
	f.Add([]byte{}, []byte{0, 0, 0, 1, 0, 0, 0, 0}, []byte{}, []byte{}, false)
	f.Fuzz(func(t *testing.T, log, index, timeIndex, txn []byte, json bool) {
		opts := DefaultOptions()
		opts.JSON = json
		d := newDumper(&opts, io.Discard, io.Discard)
		d.userDir = "/wd"
		file := func(suffix string) javaFile { return newJavaFile("00000000000000000000" + suffix) }
		sl := &dumpSegmentLog{file: file(".log"), f: bytes.NewReader(log), size: int64(len(log))}
		idx := newDumpIndexFile(file(".index"), bytes.NewReader(index), int64(len(index)), 0, offsetIndexEntrySize)
		ti := newDumpIndexFile(file(".timeindex"), bytes.NewReader(timeIndex), int64(len(timeIndex)), 0, timeIndexEntrySize)
		tx := newDumpIndexFile(file(".txnindex"), bytes.NewReader(txn), int64(len(txn)), 0, txnIndexEntrySize)
		for _, sanity := range []bool{false, true} {
			opts.IndexSanityCheck = sanity
			checkDumpError(t, d.offsetIndex(idx, sl))
			checkDumpError(t, d.timeIndex(ti, idx, sl))
		}
		checkDumpError(t, d.txnIndex(tx))
		if err := d.flush(); err != nil {
			t.Fatal(err)
		}
		if !json {
			if err := d.writeReports(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkDumpError accepts an error only if it names where it happened.
func checkDumpError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ie *dumpIndexError
	var de *dumpError
	if !errors.As(err, &ie) && !errors.As(err, &de) && !strings.Contains(err.Error(), "0000000000000000000") {
		t.Fatalf("error names no file or position: %v", err)
	}
}

// TestDumpGapsMemoryFlat dumps a segment with a gap before every record,
// as compaction leaves one: the non-consecutive pairs Kafka reports at the
// end are kept on disk beyond a bound, not in memory.
func TestDumpGapsMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 4 MiB segment")
	}
	defer func(n int) { reportPairsInMemory = n }(reportPairsInMemory)
	reportPairsInMemory = 1024
	var log []byte
	b := recordbatch.NewBuilder(0)
	offset := int64(0)
	for len(log) < 4<<20 {
		b.Reset(offset)
		for range 16 {
			if err := b.AppendWithOffset(offset, 1700000000000, nil, []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
			offset += 2
		}
		var err error
		if log, err = b.AppendTo(log); err != nil {
			t.Fatal(err)
		}
	}
	p := writeLog(t, log)
	records := offset / 2
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var errOut tailWriter
	code := run([]string{"dump", "--deep-iteration", "--files", p}, io.Discard, &errOut)
	runtime.ReadMemStats(&after)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.tail)
	}
	if errOut.lines != records {
		t.Errorf("%d lines on stderr, want the header and %d pairs", errOut.lines, records-1)
	}
	if !strings.HasSuffix(string(errOut.tail), "  0 is followed by 2\n") {
		t.Errorf("the last pair printed is not the first found (newest first): %q", errOut.tail)
	}
	// What is allocated is the 64 KiB buffers, the report's bounded pairs
	// and what reading them back takes.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("dumping %d records with a gap before each allocated %d bytes", records, alloc)
	}
}

// tailWriter counts lines and keeps the last bytes written.
type tailWriter struct {
	lines int64
	tail  []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	w.tail = append(w.tail[:0], p[max(0, len(p)-64):]...)
	return len(p), nil
}
