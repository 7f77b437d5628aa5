package kafkadump

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

	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// Defaults of kafka-dump-log.sh (DumpLogSegments in Kafka 3.x).
const (
	DefaultMaxBytes       = math.MaxInt32   // --max-bytes, Integer.MAX_VALUE
	DefaultMaxMessageSize = 5 * 1024 * 1024 // --max-message-size
)

// ErrNotSupported marks input that Kafka's tool handles and this package
// does not yet; the message says what.
var ErrNotSupported = errors.New("not supported yet")

// Options are kafka-dump-log.sh's options, as DumpLogSegmentsOptions
// derives them from its flags (AddFlags and Flags.Options do that for a
// command line). The zero Options is not Kafka's defaults: start from
// DefaultOptions.
type Options struct {
	PrintDataLog       bool // print keys and values; implies DeepIteration
	DeepIteration      bool // a line per record, not only per batch
	SkipRecordMetadata bool // no record metadata, only keys and values (text only)
	VerifyIndexOnly    bool // .index and .timeindex: check, print no entries
	IndexSanityCheck   bool // .index and .timeindex: the broker's startup check only
	MaxBytes           int  // .log: dump only the batches within the first MaxBytes bytes
	MaxMessageSize     int  // .index: how far a batch is looked for from an entry's position

	// KeyDecoder and ValueDecoder say how keys, and values and header
	// values, are printed. Kafka's StringDecoder is DecodeString.
	KeyDecoder, ValueDecoder Decoder

	// JSON prints JSON Lines instead of Kafka's text (see the package doc).
	JSON bool

	// Progress, when not nil, receives a line that shows how far the dump
	// has come, redrawn in place and cleared before anything else is
	// written to stderr: give it stderr when that is a terminal, or nil.
	Progress io.Writer
}

// DefaultOptions are kafka-dump-log.sh's defaults.
func DefaultOptions() Options {
	return Options{MaxBytes: DefaultMaxBytes, MaxMessageSize: DefaultMaxMessageSize}
}

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
// names Kafka's tool fails on; Dump checks every name before it prints
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
		return dumpJob{}, fmt.Errorf(".checkpoint files (KRaft snapshots) are %w: %s", ErrNotSupported, f)
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

// Dump dumps files, in order, as kafka-dump-log.sh does: each file's
// content on stdout, what Kafka prints on stderr at once on stderr, and,
// after all files, the reports Kafka keeps for the end, as
// DumpLogSegments.main does. A directory in files stands for the segment
// files in it (see the package doc). The error is for what stops the
// dump: a name Kafka's tool fails on or this package refuses (before
// anything is printed), a file that cannot be read (the files after it
// are not dumped), or a failed write. A producer-snapshots.db that cannot
// be opened or read is reported when it is met, the files after it are
// dumped, and the error at the end names it.
func Dump(stdout, stderr io.Writer, files []string, opts Options) error {
	jobs, err := planDumpJobs(files)
	if err != nil {
		return err
	}
	opts.DeepIteration = opts.DeepIteration || opts.PrintDataLog
	d := newDumper(&opts, stdout, stderr)
	defer d.closeReports()
	defer d.prog.Clear()
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
	if !opts.JSON {
		d.prog.Clear()
		if err := d.writeReports(); err != nil {
			return err
		}
	}
	return d.unreadable()
}

// dumper prints files. Its buffers are reused from file to file and batch
// to batch, so memory stays in proportion to the largest batch, not to
// the files.
type dumper struct {
	opts   *Options
	out    *bufio.Writer
	werr   error // first write error on stdout; bufio.Writer keeps it too
	stderr io.Writer
	prog   *cliout.Progress // nil unless progress is shown

	// unreadableDBs are the producer-snapshots.db files that could not be
	// dumped; the dump went on after them.
	unreadableDBs []javaFile

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

func newDumper(o *Options, stdout, stderr io.Writer) *dumper {
	return &dumper{
		opts:            o,
		out:             bufio.NewWriterSize(stdout, 64<<10),
		stderr:          stderr,
		prog:            cliout.NewProgress(o.Progress),
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
	d.prog.Clear()
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
	if d.opts.JSON {
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
		if d.opts.JSON {
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

// progress redraws the progress line: the file and how much of it is
// done.
func (d *dumper) progress(f javaFile, done, total int64) {
	if d.prog == nil {
		return
	}
	pct := int64(100)
	if total > 0 {
		pct = done * 100 / total
	}
	d.prog.Printf("%s: %d%% (%d of %d)", f.Name(), pct, done, total)
}
