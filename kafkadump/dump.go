package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// Defaults of kafka-dump-log.sh (DumpLogSegments in Kafka 3.x).
const (
	defaultMaxBytes       = math.MaxInt32   // --max-bytes, Integer.MAX_VALUE
	defaultMaxMessageSize = 5 * 1024 * 1024 // --max-message-size
	stringDecoderClass    = "org.apache.kafka.tools.api.StringDecoder"
)

// errNotSupported marks input that Kafka's tool handles and this one does
// not yet; the message says what.
var errNotSupported = errors.New("not supported yet")

// dumpOptions holds the flags of `logstore dump` and what is derived from
// them, plus where the output goes.
type dumpOptions struct {
	filesArg           string // --files as given, split by complete
	files              []string
	printDataLog       bool
	deepIteration      bool
	skipRecordMetadata bool
	verifyIndexOnly    bool // .index and .timeindex only
	indexSanityCheck   bool // .index and .timeindex only
	maxBytes           int  // .log only
	maxMessageSize     int  // .index only
	keyDecoderClass    string
	valueDecoderClass  string
	keyDecoderName     string // --key-decoder
	valueDecoderName   string // --value-decoder
	keyDecoder         dumpDecoder
	valueDecoder       dumpDecoder
	json               bool

	stdout io.Writer
	stderr io.Writer
}

// refusedDecoders are Kafka's decoder flags: accepted by name so that the
// refusal is plain, not "unknown flag".
var refusedDecoders = []struct{ name, usage string }{
	{"offsets-decoder", "parse __consumer_offsets data (not supported yet)"},
	{"transaction-log-decoder", "parse __transaction_state data (not supported yet)"},
	{"cluster-metadata-decoder", "parse KRaft cluster metadata records (not supported yet)"},
	{"remote-log-metadata-decoder", "parse remote log metadata records (not supported yet)"},
	{"share-group-state-decoder", "parse __share_group_state data (not supported yet)"},
}

const dumpLong = `dump prints segment files as Kafka's kafka-dump-log.sh (DumpLogSegments,
Kafka 3.x, the Scala tool) prints them, byte for byte on stdout and stderr,
with the same flags: .log (record batches v2), .index, .timeindex,
.snapshot (Kafka's producer snapshot) and .txnindex files. As in Kafka,
stdout gets "Dumping <file>" and the file's content, a corrupt .snapshot
is reported on stderr at once, and index mismatches, time index errors and
non-consecutive offsets are reported on stderr after all files, in that
order. Files with any other suffix are ignored, as Kafka ignores them.

Beyond Kafka:

  producer-snapshots.db  logstore's own producer snapshots (opened
      read-only) are dumped too, oldest snapshot first:
        snapshot offset: <offset> producers: <count>
      then one line per producer, in producer id order:
        producerId: <id> producerEpoch: <epoch> coordinatorEpoch: <epoch>
        currentTxnFirstOffset: <OptionalLong> lastTimestamp: <ms>
        window: [<batch>, ...]
      (on one line), where each batch of the window, oldest first, is
        sequences <first>..<last> offsets <first>..<last> timestamp <ms>
      and currentTxnFirstOffset is OptionalLong[<offset>] while a
      transaction is open, else OptionalLong.empty, as in Kafka's lines.
      A stored snapshot that does not decode is reported on stderr and
      the next one is dumped.

  A directory in --files dumps the segment files in it, not its
  subdirectories: by offset (the number the name starts with), and for
  one offset .log, .index, .timeindex, .txnindex, then .snapshot; then
  producer-snapshots.db. Other files in it (checkpoints, .deleted,
  .cleaned, .swap, partition.metadata, ...) are left out.

  --key-decoder and --value-decoder print keys, values and (with --json)
  header values as string (the default: UTF-8, malformed bytes replaced
  as Kafka's StringDecoder does), hex or base64. Like Kafka's decoder
  flags, they imply --print-data-log.

  --json prints JSON Lines on stdout instead, one object per line with a
  "type" and the "file" as given:
    file            {"kind": log|index|timeindex|snapshot|txnindex|
                     producer-snapshots|unknown, "startOffset"|"baseOffset"}
    batch           every header field, "position", "isValid"
    record          (--deep-iteration) "offset", "timestamp", "keySize",
                    "valueSize", "sequence", "headerKeys", "controlType",
                    "controlTypeId", "coordinatorEpoch" (markers); with
                    --print-data-log also "key", "value" and "headers"
                    ([{"key","value"}]); null for a null key or value
    invalidBytes    "position", "size": bytes after the last whole batch
    indexEntry      "offset", "position"
    timeIndexEntry  "timestamp", "offset"
    sanityCheck     "passed": true
    snapshotEntry   the .snapshot fields; "batch" null or an object
    abortedTxn      "version", "producerId", "firstOffset", "lastOffset",
                    "lastStableOffset"
    snapshot        (producer-snapshots.db) "offset", "producers"
    producer        "snapshotOffset", the producer fields, "window"
  Problems come as objects of their own, right after what they concern:
  nonConsecutive, indexMismatch, timestampMismatch, outOfOrderTimestamp,
  offsetNotFound, snapshotError ("error" is Kafka's message, "position"
  the byte where reading failed). Nothing but fatal errors goes to stderr.

While stderr is a terminal and stdout goes elsewhere, progress shows on
stderr.
Memory stays flat however large a file is: files are read in pieces,
except a .snapshot, which Kafka also reads whole.

Exit status: 0 when every file was dumped, problems found in them or not
(as Kafka's tool); 1 when a file cannot be read (missing, unreadable, or
bytes Kafka's tool fails on): the message names the file and byte
position, and the files after it are not dumped. A corrupt .snapshot is
the exception, as in Kafka: its message goes to stderr and the dump goes
on. Where Kafka's tool fails with a stack trace this prints one line;
it never creates a missing index as Kafka's does before failing; and a
missing .txnindex, which Kafka's tool dumps as empty, is an error.

Not supported yet, refused with an error: .checkpoint files (KRaft
snapshots), legacy message sets (magic 0 and 1), decoder classes other
than the default StringDecoder, and, unless --skip-record-metadata or
--json is given, control records that Kafka prints as JSON
(SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS).`

func newDumpCommand() *cobra.Command {
	opts := &dumpOptions{maxBytes: defaultMaxBytes, maxMessageSize: defaultMaxMessageSize}
	cmd := &cobra.Command{
		Use:   "dump --files FILE[,FILE...]",
		Short: "Print segment files exactly as Kafka's kafka-dump-log.sh does",
		Long:  dumpLong,
		Example: `  logstore dump --files /var/lib/kafka/events-0/00000000000000000000.log
  logstore dump --print-data-log --files a.log,b.log
  logstore dump --files events-0/00000000000000000000.index,events-0/00000000000000000000.timeindex
  logstore dump --json --deep-iteration --value-decoder hex --files logstore-data/events-0`,
		Args: noPositionalArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.complete(cmd); err != nil {
				return err
			}
			opts.stdout, opts.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runDump(opts)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&opts.filesArg, "files", "", "REQUIRED: The comma separated list of data and index log files to be dumped.")
	f.BoolVar(&opts.printDataLog, "print-data-log", false, "If set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")
	f.BoolVar(&opts.deepIteration, "deep-iteration", false, "If set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")
	f.BoolVar(&opts.skipRecordMetadata, "skip-record-metadata", false, "Whether to skip printing metadata for each record (no effect with --json).")
	f.Var(javaIntFlag{&opts.maxBytes}, "max-bytes", "Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
	f.Var(javaIntFlag{&opts.maxMessageSize}, "max-message-size", "Size of largest message (used by .index dumps only).")
	f.BoolVar(&opts.verifyIndexOnly, "verify-index-only", false, "If set, just verify the index log without printing its content.")
	f.BoolVar(&opts.indexSanityCheck, "index-sanity-check", false, "If set, just checks the index sanity without printing its content. This is the same check that is executed on broker startup to determine if an index needs rebuilding or not.")
	f.StringVar(&opts.keyDecoderClass, "key-decoder-class", stringDecoderClass, "Used to deserialize the keys; only "+stringDecoderClass+" is supported. Give the value with '='.")
	f.Lookup("key-decoder-class").NoOptDefVal = stringDecoderClass
	f.StringVar(&opts.valueDecoderClass, "value-decoder-class", stringDecoderClass, "Used to deserialize the messages; only "+stringDecoderClass+" is supported. Give the value with '='.")
	f.Lookup("value-decoder-class").NoOptDefVal = stringDecoderClass
	for _, d := range refusedDecoders {
		f.Bool(d.name, false, d.usage)
	}
	f.StringVar(&opts.keyDecoderName, "key-decoder", "string", "How to print keys: string, hex or base64. Implies --print-data-log.")
	f.StringVar(&opts.valueDecoderName, "value-decoder", "string", "How to print values and header values: string, hex or base64. Implies --print-data-log.")
	f.BoolVar(&opts.json, "json", false, "Print JSON Lines on stdout instead of Kafka's text.")
	return cmd
}

// noPositionalArgs refuses arguments outside flags, which Kafka's tool
// silently ignores.
func noPositionalArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: name the files with --files FILE[,FILE...]", args[0])
	}
	return nil
}

// complete checks the flags and derives the rest as DumpLogSegmentsOptions
// does: a decoder implies print data, print data implies deep iteration,
// and --files is split on commas as Java's String.split does.
func (o *dumpOptions) complete(cmd *cobra.Command) error {
	f := cmd.Flags()
	for _, d := range refusedDecoders {
		if f.Changed(d.name) {
			return fmt.Errorf("--%s is %w", d.name, errNotSupported)
		}
	}
	for _, c := range []struct{ name, value string }{
		{"key-decoder-class", o.keyDecoderClass},
		{"value-decoder-class", o.valueDecoderClass},
	} {
		if !f.Changed(c.name) {
			continue
		}
		if c.value != stringDecoderClass {
			return fmt.Errorf("--%s %s is %w: only %s is", c.name, c.value, errNotSupported, stringDecoderClass)
		}
		o.printDataLog = true
	}
	for _, c := range []struct {
		name, value, class string
		dst                *dumpDecoder
	}{
		{"key-decoder", o.keyDecoderName, "key-decoder-class", &o.keyDecoder},
		{"value-decoder", o.valueDecoderName, "value-decoder-class", &o.valueDecoder},
	} {
		dec, ok := parseDumpDecoder(c.value)
		if !ok {
			return fmt.Errorf("--%s %q: want string, hex or base64", c.name, c.value)
		}
		if f.Changed(c.name) {
			if f.Changed(c.class) && dec != dumpDecodeString {
				return fmt.Errorf("--%s %s and --%s: give one of them", c.name, c.value, c.class)
			}
			o.printDataLog = true
		}
		*c.dst = dec
	}
	if !f.Changed("files") {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return errors.New(`Missing required argument "[files]"`)
	}
	if o.maxBytes < 0 {
		return fmt.Errorf("--max-bytes must not be negative, got %d", o.maxBytes)
	}
	o.files = javaSplit(o.filesArg, ",")
	o.deepIteration = o.deepIteration || o.printDataLog
	return nil
}

// javaIntFlag parses a flag value as Kafka's option parser does
// (Integer.valueOf): decimal, optional sign, within int32.
type javaIntFlag struct{ p *int }

func (v javaIntFlag) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v javaIntFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return fmt.Errorf("not a 32-bit decimal integer")
	}
	*v.p = int(n)
	return nil
}

func (javaIntFlag) Type() string { return "size" }

// fileKind is what DumpLogSegments does with a file, by the suffix after
// the last '.' of its name.
type fileKind int

const (
	kindLog        fileKind = iota // .log: the log dump
	kindIndex                      // .index: the offset index dump
	kindTimeIndex                  // .timeindex: the time index dump
	kindTxnIndex                   // .txnindex: the aborted transactions
	kindSnapshot                   // .snapshot: Kafka's producer snapshot
	kindSnapshotDB                 // producer-snapshots.db: logstore's snapshots
	kindUnknown                    // any other suffix: "Ignoring unknown file"
)

// fileKindNames are the "kind" values of --json's file lines.
var fileKindNames = [...]string{"log", "index", "timeindex", "txnindex", "snapshot", "producer-snapshots", "unknown"}

func (k fileKind) String() string { return fileKindNames[k] }

// dumpSuffixes maps Kafka's suffixes to what is dumped. The order of the
// table is the order of one offset's files in a directory.
var dumpSuffixes = []struct {
	suffix string
	kind   fileKind
}{
	{".log", kindLog},
	{".index", kindIndex},
	{".timeindex", kindTimeIndex},
	{".txnindex", kindTxnIndex},
	{".snapshot", kindSnapshot},
}

// dumpJob is one file to dump: its kind, and the offset its name starts
// with (for the kinds that Kafka parses it for).
type dumpJob struct {
	file  javaFile
	kind  fileKind
	start int64
}

// classify decides, from the name alone, what to do with f. It returns an
// error for names Kafka's tool dumps and this one cannot yet, and for
// names Kafka's tool fails on; runDump checks every name before it prints
// anything, so a refused file never leaves partial output behind.
func classify(f javaFile) (dumpJob, error) {
	name := f.Name()
	if name == snapshot.FileName {
		return dumpJob{file: f, kind: kindSnapshotDB}, nil
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		// Kafka's tool fails here too (substring(-1)).
		return dumpJob{}, fmt.Errorf("%q: the file name has no suffix such as .log", f.path)
	}
	suffix := name[dot:]
	if suffix == ".checkpoint" {
		return dumpJob{}, fmt.Errorf(".checkpoint files (KRaft snapshots) are %w: %s", errNotSupported, f)
	}
	for _, s := range dumpSuffixes {
		if s.suffix != suffix {
			continue
		}
		j := dumpJob{file: f, kind: s.kind}
		if s.kind == kindSnapshot {
			return j, nil // Kafka reads a producer snapshot without parsing its name
		}
		// Kafka parses the offset from the name before the first '.'.
		start, err := strconv.ParseInt(name[:strings.IndexByte(name, '.')], 10, 64)
		if err != nil {
			return dumpJob{}, fmt.Errorf("%s: the file name does not start with an offset: %w", f, err)
		}
		j.start = start
		return j, nil
	}
	return dumpJob{file: f, kind: kindUnknown}, nil
}

// planDumpJobs classifies every --files entry, expanding directories.
func planDumpJobs(names []string) ([]dumpJob, error) {
	jobs := make([]dumpJob, 0, len(names))
	for _, name := range names {
		f := newJavaFile(name)
		if info, err := os.Stat(f.path); err == nil && info.IsDir() {
			dir, err := dumpDirJobs(f)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, dir...)
			continue
		}
		j, err := classify(f)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// dumpDirJobs lists the files of dir that dump knows, in the order the help
// text gives: by the offset in the name, then .log, .index, .timeindex,
// .txnindex, .snapshot; then producer-snapshots.db.
func dumpDirJobs(dir javaFile) ([]dumpJob, error) {
	entries, err := os.ReadDir(dir.path)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	type ranked struct {
		job  dumpJob
		off  int64
		rank int
	}
	var files []ranked
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		path := newJavaFile(dir.path + "/" + name)
		if name == snapshot.FileName {
			files = append(files, ranked{dumpJob{file: path, kind: kindSnapshotDB}, math.MaxInt64, len(dumpSuffixes)})
			continue
		}
		prefix, suffix, ok := strings.Cut(name, ".")
		if !ok || prefix == "" || strings.Trim(prefix, "0123456789") != "" {
			continue
		}
		off, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil {
			continue
		}
		for rank, s := range dumpSuffixes {
			if "."+suffix == s.suffix {
				files = append(files, ranked{dumpJob{file: path, kind: s.kind, start: off}, off, rank})
				break
			}
		}
	}
	slices.SortFunc(files, func(a, b ranked) int {
		if a.off != b.off {
			if a.off < b.off {
				return -1
			}
			return 1
		}
		return a.rank - b.rank
	})
	jobs := make([]dumpJob, len(files))
	for i, r := range files {
		jobs[i] = r.job
	}
	return jobs, nil
}

// runDump dumps every file of o.files in order, then prints the reports
// that Kafka's tool keeps for the end, as DumpLogSegments.main does.
func runDump(o *dumpOptions) error {
	jobs, err := planDumpJobs(o.files)
	if err != nil {
		return err
	}
	d := newDumper(o)
	defer d.closeReports()
	defer d.prog.clear()
	for _, j := range jobs {
		if err := d.dumpFile(j); err != nil {
			if ferr := d.flush(); ferr != nil {
				return errors.Join(err, ferr)
			}
			return err
		}
		if d.werr != nil {
			return fmt.Errorf("writing the output: %w", d.werr)
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	if o.json {
		return nil
	}
	d.prog.clear()
	return d.writeReports()
}

// dumper prints files. Its buffers are reused from file to file and batch
// to batch, so memory stays in proportion to the largest batch, not to
// the files.
type dumper struct {
	opts   *dumpOptions
	out    *bufio.Writer
	werr   error // first write error on stdout; bufio.Writer keeps it too
	stderr io.Writer
	prog   *dumpProgress // nil unless progress is shown

	// What Kafka reports on stderr after all files, keyed by absolute
	// path, in the maps DumpLogSegments keeps.
	indexMismatches *scalaReportMap // newest first
	timeMismatches  *scalaReportMap // TimeIndexDumpErrors, in order found
	timeOutOfOrder  *scalaReportMap
	timeNotFound    *scalaReportMap
	gaps            *scalaReportMap // newest first
	userDir         string

	// .log state
	seg      segmentReader
	rr       recordbatch.RecordReader
	inflated []byte // decompressed records section
	plain    []byte // a compressed batch rebuilt uncompressed around inflated
	line     []byte // the line being formatted

	// index state
	ibuf  []byte // index entries read in chunks
	hdr   [recordbatch.HeaderSize]byte
	batch []byte // one whole batch, for the time index dump
}

func newDumper(o *dumpOptions) *dumper {
	return &dumper{
		opts:            o,
		out:             bufio.NewWriterSize(o.stdout, 64<<10),
		stderr:          o.stderr,
		prog:            newDumpProgress(o.stdout, o.stderr),
		indexMismatches: newScalaReportMap(),
		timeMismatches:  newScalaReportMap(),
		timeOutOfOrder:  newScalaReportMap(),
		timeNotFound:    newScalaReportMap(),
		gaps:            newScalaReportMap(),
	}
}

func (d *dumper) write(p []byte) {
	if _, err := d.out.Write(p); err != nil && d.werr == nil {
		d.werr = err
	}
}

func (d *dumper) printf(format string, args ...any) {
	if _, err := fmt.Fprintf(d.out, format, args...); err != nil && d.werr == nil {
		d.werr = err
	}
}

// flush writes what stdout has buffered.
func (d *dumper) flush() error {
	if err := d.out.Flush(); err != nil {
		if d.werr == nil {
			d.werr = err
		}
		return fmt.Errorf("writing the output: %w", d.werr)
	}
	return nil
}

// errorLine prints a line on stderr now, after what stdout has so far, as
// Kafka's System.err.println does between its println calls.
func (d *dumper) errorLine(s string) error {
	if err := d.flush(); err != nil {
		return err
	}
	d.prog.clear()
	_, err := io.WriteString(d.stderr, s+"\n")
	return err
}

// absPath is File.getAbsolutePath, as Kafka keys its reports.
func (d *dumper) absPath(f javaFile) string {
	if d.userDir == "" {
		dir, err := javaUserDir()
		if err != nil {
			dir = "."
		}
		d.userDir = dir
	}
	return f.AbsolutePath(d.userDir)
}

// dumpFile prints "Dumping <file>" (or its JSON line) and the file.
func (d *dumper) dumpFile(j dumpJob) error {
	if d.opts.json {
		d.line = djBegin(d.line[:0], "file", j.file.path)
		d.line = djString(d.line, "kind", j.kind.String())
		switch j.kind {
		case kindLog:
			d.line = djInt(d.line, "startOffset", j.start)
		case kindIndex, kindTimeIndex, kindTxnIndex:
			d.line = djInt(d.line, "baseOffset", j.start)
		}
		d.write(djEnd(d.line))
	} else {
		d.printf("Dumping %s\n", j.file)
	}
	switch j.kind {
	case kindLog:
		return d.dumpLog(j.file, j.start)
	case kindIndex:
		return d.dumpOffsetIndex(j.file, j.start)
	case kindTimeIndex:
		return d.dumpTimeIndex(j.file, j.start)
	case kindTxnIndex:
		return d.dumpTxnIndex(j.file)
	case kindSnapshot:
		return d.dumpProducerSnapshot(j.file)
	case kindSnapshotDB:
		return d.dumpSnapshotDB(j.file)
	default:
		if d.opts.json {
			return nil
		}
		return d.errorLine("Ignoring unknown file " + j.file.path)
	}
}

// writeReports prints, after all files, what Kafka prints last: index
// mismatches, then the time index errors, then non-consecutive offsets,
// each in the iteration order of the Scala map that holds it.
func (d *dumper) writeReports() error {
	bw := bufio.NewWriter(d.stderr)
	var line []byte
	for _, m := range []struct {
		reports     *scalaReportMap
		header      string // before the path; the path is left out when it ends in "\n"
		pre, mid    string // the pair's line: pre, a, mid, b
		newestFirst bool
	}{
		{d.indexMismatches, "Mismatches in :", "  Index offset: ", ", log offset: ", true},
		{d.timeMismatches, "Found timestamp mismatch in :", "  Index timestamp: ", ", log timestamp: ", false},
		{d.timeOutOfOrder, "Found out of order timestamp in :", "  Index timestamp: ", ", Previously indexed timestamp: ", false},
		{d.timeNotFound, "The following indexed offsets are not found in the log.\n", "Indexed offset: ", ", found log offset: ", false},
		{d.gaps, "Non-consecutive offsets in ", "  ", " is followed by ", true},
	} {
		for _, r := range m.reports.ordered() {
			bw.WriteString(m.header)
			if !strings.HasSuffix(m.header, "\n") {
				bw.WriteString(r.path)
				bw.WriteByte('\n')
			}
			err := r.pairs.each(m.newestFirst, func(a, b int64) {
				line = append(line[:0], m.pre...)
				line = strconv.AppendInt(line, a, 10)
				line = append(line, m.mid...)
				line = strconv.AppendInt(line, b, 10)
				bw.Write(append(line, '\n'))
			})
			if err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// closeReports drops what the reports spilled to disk.
func (d *dumper) closeReports() {
	for _, m := range []*scalaReportMap{d.indexMismatches, d.timeMismatches, d.timeOutOfOrder, d.timeNotFound, d.gaps} {
		m.close()
	}
}

// dumpProgress shows how far a dump has come, on stderr, while stderr is
// a terminal and stdout is not that terminal (there the output itself
// shows it, and piped or redirected stderr stays clean). A nil
// *dumpProgress shows nothing.
type dumpProgress struct {
	w     io.Writer
	now   func() time.Time
	next  time.Time // no update before then
	shown bool
}

// dumpProgressEvery is how often the line is redrawn at most.
const dumpProgressEvery = 250 * time.Millisecond

func newDumpProgress(stdout, stderr io.Writer) *dumpProgress {
	errInfo, ok := charDevice(stderr)
	if !ok {
		return nil
	}
	if outInfo, ok := charDevice(stdout); ok && os.SameFile(outInfo, errInfo) {
		return nil
	}
	return &dumpProgress{w: stderr, now: time.Now}
}

// charDevice returns w's file info when w is a character device, as a
// terminal is (golang.org/x/term is not a dependency of this module).
func charDevice(w io.Writer) (os.FileInfo, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return nil, false
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil, false
	}
	return info, true
}

// update redraws the line, at most every dumpProgressEvery: the file and how
// much of it is done.
func (p *dumpProgress) update(f javaFile, done, total int64) {
	if p == nil {
		return
	}
	now := p.now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(dumpProgressEvery)
	pct := int64(100)
	if total > 0 {
		pct = done * 100 / total
	}
	// Write errors are ignored: progress is a courtesy, and a failing
	// stderr shows up when a real message is written.
	_, _ = fmt.Fprintf(p.w, "\r%s: %d%% (%d of %d)\x1b[K", f.Name(), pct, done, total)
	p.shown = true
}

// clear erases the line before anything else is written to stderr.
func (p *dumpProgress) clear() {
	if p == nil || !p.shown {
		return
	}
	_, _ = io.WriteString(p.w, "\r\x1b[K")
	p.shown = false
	p.next = time.Time{}
}
