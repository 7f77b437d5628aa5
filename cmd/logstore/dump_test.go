package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// runCLI runs the real root command, as main does, and returns what it
// wrote and its exit status.
func runCLI(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

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

// logPart keeps the leading lines of a section that a .log dump prints;
// the "corrupted byte in batch 0" section goes on with other files.
func logPart(lines []string) []string {
	for i, l := range lines {
		isLog := (i == 0 && strings.HasPrefix(l, "Dumping ")) || strings.HasPrefix(l, "Log starting offset: ") ||
			strings.HasPrefix(l, "baseOffset: ") || strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "Found ")
		if !isLog {
			return lines[:i]
		}
	}
	return lines
}

// chdirGolden makes kafka-golden the working directory, so that the files
// can be named as the golden output names them, and returns the absolute
// working directory as the JVM would see it (user.dir).
func chdirGolden(t *testing.T) string {
	t.Helper()
	t.Chdir(goldenDir(t))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return wd
}

func TestDumpGolden(t *testing.T) {
	sections := goldenSections(t)
	userDir := chdirGolden(t)
	const foo = "foo-0/00000000000000000000.log"
	const torn = "torn-0/00000000000000000000.log"
	tests := []struct {
		section string
		args    []string
		logOnly bool // compare only the .log part of the section
	}{
		{"dump (no options besides --files)", []string{"--files", foo}, false},
		{"dump --deep-iteration", []string{"--deep-iteration", "--files", foo}, false},
		{"dump --print-data-log", []string{"--print-data-log", "--files", foo}, false},
		{"dump --print-data-log --skip-record-metadata", []string{"--print-data-log", "--skip-record-metadata", "--files", foo}, false},
		{"torn tail dump (last batch cut in half)", []string{"--files", torn}, false},
		{"torn tail dump with --max-bytes 200", []string{"--max-bytes", "200", "--files", torn}, false},
		{"corrupted byte in batch 0", []string{"--files", "crc-0/00000000000000000000.log"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.section, func(t *testing.T) {
			lines, ok := sections[tt.section]
			if !ok {
				t.Fatalf("golden-output.txt has no section %q", tt.section)
			}
			if tt.logOnly {
				lines = logPart(lines)
			}
			wantOut, wantErr := splitStreams(lines, userDir)
			out, errOut, code := runCLI(t, append([]string{"dump"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			if out != wantOut {
				t.Errorf("stdout differs from the golden output\n%s", lineDiff(wantOut, out))
			}
			if errOut != wantErr {
				t.Errorf("stderr differs from the golden output\n%s", lineDiff(wantErr, errOut))
			}
		})
	}
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
	for _, flag := range []string{"--value-decoder-class", "--key-decoder-class=" + stringDecoderClass} {
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

func TestDumpRefused(t *testing.T) {
	chdirGolden(t)
	const log = "foo-0/00000000000000000000.log"
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{}, `logstore dump: Missing required argument "[files]"`},
		{[]string{"--deep-iteration"}, `Missing required argument "[files]"`},
		{[]string{"--files", log + ",foo-0/00000000000000000000.index"}, ".index files are not supported yet: foo-0/00000000000000000000.index"},
		{[]string{"--files", "foo-0/00000000000000000000.timeindex"}, ".timeindex files are not supported yet"},
		{[]string{"--files", "foo-0/00000000000000000021.snapshot"}, ".snapshot files are not supported yet"},
		{[]string{"--files", "foo-0/00000000000000000000.txnindex"}, ".txnindex files are not supported yet"},
		{[]string{"--files", "00000000000000007201-0000000001.checkpoint"}, ".checkpoint files (KRaft snapshots) are not supported yet"},
		{[]string{"--files", "foo-0"}, `"foo-0": the file name has no suffix`},
		{[]string{"--files", ""}, `"": the file name has no suffix`},
		{[]string{"--files", "foo-0/abc.log"}, "foo-0/abc.log: the file name does not start with an offset"},
		{[]string{"--offsets-decoder", "--files", log}, "--offsets-decoder is not supported yet"},
		{[]string{"--cluster-metadata-decoder", "--files", log}, "--cluster-metadata-decoder is not supported yet"},
		{[]string{"--key-decoder-class=org.example.Custom", "--files", log}, "--key-decoder-class org.example.Custom is not supported yet"},
		{[]string{"--max-bytes", "-1", "--files", log}, "--max-bytes must not be negative"},
		{[]string{"--max-bytes", "3000000000", "--files", log}, `invalid argument "3000000000" for "--max-bytes"`},
		{[]string{"--max-bytes", "0x10", "--files", log}, `invalid argument "0x10" for "--max-bytes"`},
		{[]string{"--files", log, "extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, append([]string{"dump"}, tt.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", tt.args, code)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want nothing", tt.args, out)
		}
		if !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line with %q", tt.args, errOut, tt.want)
		}
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
	for pos := 0; len(data)-pos > headerSizeUpToMagic; {
		length := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if length < minRecordOverhead || pos+12+length > len(data) {
			break
		}
		if m := int8(data[pos+16]); m < 2 {
			return batches, records, pos, m
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
