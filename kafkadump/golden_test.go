package kafkadump

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
)

// updateGolden rewrites testdata/golden/*.txt from what the dump prints:
// go test ./kafkadump -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/*.txt with the current output")

// goldenSection is one "=== name ===" section of golden-output.txt.
type goldenSection struct {
	name  string
	lines []string
}

// readGoldenSections reads golden-output.txt into its sections, in order.
func readGoldenSections(t testing.TB) []goldenSection {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir(t), "golden-output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenSection
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if name, ok := strings.CutPrefix(line, "=== "); ok && strings.HasSuffix(name, " ===") {
			out = append(out, goldenSection{name: strings.TrimSuffix(name, " ===")})
			continue
		}
		if len(out) == 0 {
			t.Fatalf("golden-output.txt starts with %q, not a section", line)
		}
		out[len(out)-1].lines = append(out[len(out)-1].lines, line)
	}
	return out
}

// notDumpLine matches the lines of golden-output.txt that describe the
// fixtures rather than show a dump: hex dumps, checksums and file sizes.
var notDumpLine = regexp.MustCompile(`^([0-9a-f]{4}: |java\.util\.zip\.|offset index file length |time index file length )`)

// dumpBlocks returns the dumps of a section: every "Dumping <file>" line
// and the lines after it up to the next line that is not part of a dump.
// It returns the files, in order, and the expected text.
func dumpBlocks(lines []string) (files []string, text []string) {
	in := false
	for _, l := range lines {
		if f, ok := strings.CutPrefix(l, "Dumping "); ok {
			files = append(files, f)
			in = true
		} else if notDumpLine.MatchString(l) {
			in = false
		}
		if in {
			text = append(text, l)
		}
	}
	return files, text
}

// interleaved captures stdout and stderr in one buffer, in the order they
// are written, marking each stderr line "[stderr] " as golden-output.txt
// does.
type interleaved struct {
	buf       bytes.Buffer
	lineStart bool
}

type stdoutSide struct{ c *interleaved }
type stderrSide struct{ c *interleaved }

func newInterleaved() *interleaved { return &interleaved{lineStart: true} }

func (s stdoutSide) Write(p []byte) (int, error) {
	s.c.buf.Write(p)
	if len(p) > 0 {
		s.c.lineStart = p[len(p)-1] == '\n'
	}
	return len(p), nil
}

func (s stderrSide) Write(p []byte) (int, error) {
	for _, b := range p {
		if s.c.lineStart {
			s.c.buf.WriteString("[stderr] ")
		}
		s.c.buf.WriteByte(b)
		s.c.lineStart = b == '\n'
	}
	return len(p), nil
}

// runInterleaved runs the command and returns stdout and stderr as one
// text, stderr lines marked, and the exit status.
func runInterleaved(args ...string) (string, int) {
	c := newInterleaved()
	code := run(args, stdoutSide{c}, stderrSide{c})
	return c.buf.String(), code
}

// copyGoldenFixtures copies kafka-golden's fixture directories into a new
// temporary directory, makes it the working directory (so the files are
// named as golden-output.txt names them, and Kafka's $PWD is known) and
// returns its absolute path as the JVM would see it (user.dir).
func copyGoldenFixtures(t *testing.T) string {
	t.Helper()
	src := goldenDir(t)
	dst := t.TempDir()
	for _, dir := range []string{"foo-0", "torn-0", "crc-0"} {
		testutil.CopyDir(t, filepath.Join(src, dir), filepath.Join(dst, dir))
	}
	t.Chdir(dst)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return wd
}

// kafkaGoldenRuns gives, for every section of golden-output.txt that shows
// a dump, the flags it was made with; the files come from its "Dumping"
// lines and are dumped in one call. Sections that show no dump are listed
// with nil flags and skip set.
var kafkaGoldenRuns = []struct {
	section string
	flags   []string
	skip    bool // no dump in this section: fixture bytes or other Kafka classes
}{
	{section: "HEX batch 0 (offset 0, 2 records, uncompressed, no producer)", skip: true},
	{section: "HEX batch 3 (idempotent pid 29342342 epoch 15 seq 234123)", skip: true},
	{section: "HEX batch 5 (COMMIT marker, coordinatorEpoch 100)", skip: true},
	{section: "HEX batch 7 (record with headers h1=x, h2=null)", skip: true},
	{section: "HEX batch 8 (LogAppendTime)", skip: true},
	{section: "dump (no options besides --files)"},
	{section: "dump --deep-iteration", flags: []string{"--deep-iteration"}},
	{section: "dump --print-data-log", flags: []string{"--print-data-log"}},
	{section: "dump --print-data-log --skip-record-metadata", flags: []string{"--print-data-log", "--skip-record-metadata"}},
	{section: "torn tail dump (last batch cut in half)"},
	{section: "torn tail dump with --max-bytes 200", flags: []string{"--max-bytes", "200"}},
	// The crc-0 log, then the foo-0 offset index, time index and empty index.
	{section: "corrupted byte in batch 0"},
	{section: "HEX producer snapshot (3 entries)"},
	// The empty snapshot and the five broken ones.
	{section: "HEX empty producer snapshot"},
	{section: "HEX txnindex (2 entries)"},
	{section: "ProducerAppendInfo validation", skip: true},
}

// TestDumpGoldenKafka runs every dump of golden-output.txt, the acceptance
// test of `logstore dump`, and compares stdout and stderr byte for byte,
// and in the order they are written. A section's files are dumped in one
// call: golden-output.txt shows each stderr line after the file it
// belongs to, and in these sections that is also where Kafka prints it
// (a corrupt snapshot's message comes at once; the reports Kafka keeps for
// the end come from single-file sections).
func TestDumpGoldenKafka(t *testing.T) {
	sections := readGoldenSections(t)
	userDir := copyGoldenFixtures(t)
	var names []string
	for _, s := range sections {
		names = append(names, s.name)
	}
	var listed []string
	for _, r := range kafkaGoldenRuns {
		listed = append(listed, r.section)
	}
	if !slices.Equal(names, listed) {
		t.Fatalf("golden-output.txt has the sections\n%q\nthis test knows\n%q", names, listed)
	}
	dumps := 0
	for i, r := range kafkaGoldenRuns {
		files, text := dumpBlocks(sections[i].lines)
		if r.skip {
			if len(files) > 0 {
				t.Errorf("section %q dumps %v but is skipped", r.section, files)
			}
			continue
		}
		t.Run(r.section, func(t *testing.T) {
			if len(files) == 0 {
				t.Fatal("no Dumping line in the section")
			}
			want := strings.Join(text, "\n") + "\n"
			want = strings.ReplaceAll(want, "$PWD/", userDir+"/")
			want = strings.ReplaceAll(want, "<EOL>", "")
			args := append(append([]string{"dump"}, r.flags...), "--files", strings.Join(files, ","))
			got, code := runInterleaved(args...)
			if code != 0 {
				t.Errorf("exit %d", code)
			}
			if got != want {
				t.Errorf("%v: output differs from golden-output.txt\n%s", args, lineDiff(want, got))
			}
		})
		dumps += len(files)
	}
	if dumps != 18 {
		t.Errorf("%d files dumped, golden-output.txt has 18 dumps", dumps)
	}
}

// goldenRun is a command whose output is kept in a golden file.
type goldenRun struct {
	name string
	args []string
}

// ownGoldenRuns are the outputs beyond Kafka's, kept in
// testdata/golden/<name>.txt. They run in a copy of kafka-golden's
// fixtures, plus the directories setupOwnFixtures adds.
var ownGoldenRuns = []goldenRun{
	// producer-snapshots.db: text and JSON.
	{"db", []string{"dump", "--files", "db-0/producer-snapshots.db"}},
	{"db-json", []string{"dump", "--json", "--files", "db-0/producer-snapshots.db"}},
	// --json for every file type.
	{"json-log", []string{"dump", "--json", "--files", "foo-0/00000000000000000000.log,torn-0/00000000000000000000.log,crc-0/00000000000000000000.log"}},
	{"json-log-deep", []string{"dump", "--json", "--deep-iteration", "--files", "foo-0/00000000000000000000.log"}},
	{"json-log-data", []string{"dump", "--json", "--print-data-log", "--files", "foo-0/00000000000000000000.log"}},
	{"json-indexes", []string{"dump", "--json", "--files", "foo-0/00000000000000000000.index,foo-0/00000000000000000000.timeindex,foo-0/00000000000000000099.index,bad-0/00000000000000000000.index,bad-0/00000000000000000000.timeindex"}},
	{"json-verify-index-only", []string{"dump", "--json", "--verify-index-only", "--files", "bad-0/00000000000000000000.index,bad-0/00000000000000000000.timeindex"}},
	{"json-sanity", []string{"dump", "--json", "--index-sanity-check", "--files", "foo-0/00000000000000000000.index,foo-0/00000000000000000099.index"}},
	{"json-snapshots", []string{"dump", "--json", "--files", "foo-0/00000000000000000021.snapshot,foo-0/00000000000000000000.snapshot," +
		"crc-0/00000000000000000001.snapshot,crc-0/00000000000000000002.snapshot,crc-0/00000000000000000003.snapshot," +
		"crc-0/00000000000000000004.snapshot,crc-0/00000000000000000005.snapshot"}},
	{"json-txnindex", []string{"dump", "--json", "--files", "foo-0/00000000000000000000.txnindex,foo-0/notes.txt"}},
	// Decoders, in text and JSON.
	{"decoders-hex-base64", []string{"dump", "--key-decoder", "hex", "--value-decoder", "base64", "--files", "foo-0/00000000000000000000.log"}},
	{"decoders-json", []string{"dump", "--json", "--key-decoder", "base64", "--value-decoder", "hex", "--files", "foo-0/00000000000000000000.log"}},
	{"decoders-string-binary", []string{"dump", "--print-data-log", "--files", "bin-0/00000000000000000000.log"}},
	{"decoders-json-binary", []string{"dump", "--json", "--print-data-log", "--files", "bin-0/00000000000000000000.log"}},
	// A directory in --files.
	{"directory", []string{"dump", "--deep-iteration", "--files", "dir-0"}},
	{"directory-json", []string{"dump", "--json", "--files", "dir-0/"}},
	// Kafka's reports of every kind, in Kafka's order after all files.
	{"reports", []string{"dump", "--deep-iteration", "--files",
		"bad-0/00000000000000000000.timeindex,foo-0/00000000000000000000.log,crc-0/00000000000000000003.snapshot," +
			"bad-0/00000000000000000000.index,foo-0/notes.txt"}},
	{"reports-verify-index-only", []string{"dump", "--verify-index-only", "--files", "bad-0/00000000000000000000.index,bad-0/00000000000000000000.timeindex"}},
	{"sanity-timeindex", []string{"dump", "--index-sanity-check", "--files", "foo-0/00000000000000000000.index,bad-0/00000000000000000000.index,foo-0/00000000000000000000.timeindex"}},
}

// TestDumpGolden compares the outputs beyond Kafka's with their golden
// files; -update rewrites them.
func TestDumpGolden(t *testing.T) {
	// The golden files sit beside this test; find them before the
	// working directory moves.
	dir, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	userDir := copyGoldenFixtures(t)
	setupOwnFixtures(t, userDir)
	for _, r := range ownGoldenRuns {
		t.Run(r.name, func(t *testing.T) {
			out, code := runInterleaved(r.args...)
			got := fmt.Sprintf("$ logstore %s\n%s[exit %d]\n", strings.Join(r.args, " "), strings.ReplaceAll(out, userDir+"/", "$PWD/"), code)
			path := filepath.Join(dir, r.name+".txt")
			if *updateGolden {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./kafkadump -run Golden -update)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s\n%s", path, lineDiff(string(want), got))
			}
		})
	}
	if *updateGolden {
		return
	}
	// The reports are the same when their pairs spill to disk.
	defer func(n int) { reportPairsInMemory = n }(reportPairsInMemory)
	reportPairsInMemory = 1
	for _, r := range ownGoldenRuns {
		if !strings.HasPrefix(r.name, "reports") {
			continue
		}
		out, code := runInterleaved(r.args...)
		got := fmt.Sprintf("$ logstore %s\n%s[exit %d]\n", strings.Join(r.args, " "), strings.ReplaceAll(out, userDir+"/", "$PWD/"), code)
		if want, err := os.ReadFile(filepath.Join(dir, r.name+".txt")); err != nil || got != string(want) {
			t.Errorf("%s with the pairs spilled: %v\n%s", r.name, err, lineDiff(string(want), got))
		}
	}
	// Every golden file belongs to a run.
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		if !slices.ContainsFunc(ownGoldenRuns, func(r goldenRun) bool { return r.name == name }) {
			t.Errorf("%s belongs to no run", f)
		}
	}
}

// setupOwnFixtures adds, beside the copied kafka-golden fixtures in dir:
//   - db-0/producer-snapshots.db: snapshots at offsets 0, 21 and 40, and
//     at 30 a value whose CRC does not match;
//   - bad-0: the foo-0 log with an offset index and a time index that
//     disagree with it in every way Kafka reports;
//   - bin-0: a log whose keys, values and headers are not plain text;
//   - dir-0: a partition directory with foo-0's files, the db, and files
//     dump leaves out;
//   - foo-0/notes.txt: a file of unknown kind.
func setupOwnFixtures(t *testing.T, dir string) {
	t.Helper()
	join := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }
	writeFile := func(p string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fooLog, err := os.ReadFile(join("foo-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}

	writeSnapshotDB(t, join("db-0"))

	writeFile(join("bad-0", "00000000000000000000.log"), fooLog)
	writeFile(join("bad-0", "00000000000000000000.index"), offsetIndexBytes(0, [][2]int64{
		{6, 175}, {9, 259}, {13, 503}, {15, 591}, {20, 820}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0},
	}))
	const T = 1700000000000
	writeFile(join("bad-0", "00000000000000000000.timeindex"), timeIndexBytes(0, [][2]int64{
		{T + 6, 6}, {T + 5, 9}, {T + 13, 12}, {T + 100, 18}, {T + 200, 25}, {0, 0}, {0, 0}, {0, 0},
	}))

	writeFile(join("bin-0", "00000000000000000000.log"), binaryLog(t))

	testutil.CopyDir(t, join("foo-0"), join("dir-0"))
	testutil.CopyDir(t, join("db-0"), join("dir-0"))
	writeFile(join("dir-0", "leader-epoch-checkpoint"), []byte("0\n1\n0 0\n"))
	writeFile(join("dir-0", "partition.metadata"), []byte("version: 0\n"))
	writeFile(join("dir-0", "00000000000000000000.log.deleted"), fooLog)
	writeFile(join("dir-0", "sub", "00000000000000000000.log"), fooLog)

	writeFile(join("foo-0", "notes.txt"), []byte("not a segment file\n"))
}
