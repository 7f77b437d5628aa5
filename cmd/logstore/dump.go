package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
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
	verifyIndexOnly    bool // index dumps only; no effect on .log files
	indexSanityCheck   bool // index dumps only; no effect on .log files
	maxBytes           int
	maxMessageSize     int // index dumps only; accepted, no effect on .log files
	keyDecoderClass    string
	valueDecoderClass  string

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

func newDumpCommand() *cobra.Command {
	opts := &dumpOptions{maxBytes: defaultMaxBytes, maxMessageSize: defaultMaxMessageSize}
	cmd := &cobra.Command{
		Use:   "dump --files FILE[,FILE...]",
		Short: "Print segment files exactly as Kafka's kafka-dump-log.sh does",
		Long: `dump prints segment files as Kafka's kafka-dump-log.sh (DumpLogSegments,
Kafka 3.x) prints them, byte for byte on stdout and stderr, with the same
flags. This version dumps .log files with record batches v2 (magic 2).

Not supported yet, refused with an error: .index, .timeindex, .snapshot,
.txnindex and .checkpoint files, legacy message sets (magic 0 and 1), the
decoder flags other than the default StringDecoder, and, unless
--skip-record-metadata is given, control records that Kafka prints as
JSON (SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS).
Files with any other suffix are ignored, as Kafka ignores them.`,
		Example: `  logstore dump --files /var/lib/kafka/events-0/00000000000000000000.log
  logstore dump --print-data-log --files a.log,b.log`,
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
	f.BoolVar(&opts.skipRecordMetadata, "skip-record-metadata", false, "Whether to skip printing metadata for each record.")
	f.Var(javaIntFlag{&opts.maxBytes}, "max-bytes", "Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
	f.Var(javaIntFlag{&opts.maxMessageSize}, "max-message-size", "Size of largest message (used by index dumps only).")
	f.BoolVar(&opts.verifyIndexOnly, "verify-index-only", false, "If set, just verify the index log without printing its content (index dumps only).")
	f.BoolVar(&opts.indexSanityCheck, "index-sanity-check", false, "If set, just checks the index sanity without printing its content (index dumps only).")
	f.StringVar(&opts.keyDecoderClass, "key-decoder-class", stringDecoderClass, "Used to deserialize the keys; only "+stringDecoderClass+" is supported. Give the value with '='.")
	f.Lookup("key-decoder-class").NoOptDefVal = stringDecoderClass
	f.StringVar(&opts.valueDecoderClass, "value-decoder-class", stringDecoderClass, "Used to deserialize the messages; only "+stringDecoderClass+" is supported. Give the value with '='.")
	f.Lookup("value-decoder-class").NoOptDefVal = stringDecoderClass
	for _, d := range refusedDecoders {
		f.Bool(d.name, false, d.usage)
	}
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
// does: a decoder class implies print data, print data implies deep
// iteration, and --files is split on commas as Java's String.split does.
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
	kindLog     fileKind = iota // .log: the log dump
	kindUnknown                 // any other suffix: "Ignoring unknown file"
)

// classify decides, from the name alone, what to do with f. It returns an
// error for names Kafka's tool dumps and this one cannot yet, and for
// names Kafka's tool fails on; runDump checks every name before it prints
// anything, so a refused file never leaves partial output behind.
func classify(f javaFile) (fileKind, int64, error) {
	name := f.Name()
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		// Kafka's tool fails here too (substring(-1)).
		return 0, 0, fmt.Errorf("%q: the file name has no suffix such as .log", f.path)
	}
	switch suffix := name[dot:]; suffix {
	case ".log":
		// Kafka parses the starting offset from the name before the first '.'.
		start, err := strconv.ParseInt(name[:strings.IndexByte(name, '.')], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: the file name does not start with an offset: %w", f, err)
		}
		return kindLog, start, nil
	case ".index", ".timeindex", ".snapshot", ".txnindex":
		return 0, 0, fmt.Errorf("%s files are %w: %s", suffix, errNotSupported, f)
	case ".checkpoint":
		return 0, 0, fmt.Errorf(".checkpoint files (KRaft snapshots) are %w: %s", errNotSupported, f)
	default:
		return kindUnknown, 0, nil
	}
}

// runDump dumps every file of o.files in order, then prints the
// non-consecutive offset reports to stderr, as DumpLogSegments.main does.
func runDump(o *dumpOptions) error {
	type job struct {
		file  javaFile
		kind  fileKind
		start int64
	}
	jobs := make([]job, 0, len(o.files))
	for _, name := range o.files {
		f := newJavaFile(name)
		kind, start, err := classify(f)
		if err != nil {
			return err
		}
		jobs = append(jobs, job{f, kind, start})
	}

	out := bufio.NewWriterSize(o.stdout, 64<<10)
	d := newLogDumper(o, out)
	for _, j := range jobs {
		d.printf("Dumping %s\n", j.file)
		switch j.kind {
		case kindLog:
			if err := d.dumpLog(j.file, j.start); err != nil {
				if ferr := out.Flush(); ferr != nil {
					return errors.Join(err, fmt.Errorf("writing the output: %w", ferr))
				}
				return err
			}
		case kindUnknown:
			if err := out.Flush(); err != nil {
				return fmt.Errorf("writing the output: %w", err)
			}
			if _, err := fmt.Fprintf(o.stderr, "Ignoring unknown file %s\n", j.file); err != nil {
				return err
			}
		}
		if d.werr != nil {
			return fmt.Errorf("writing the output: %w", d.werr)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return writeGapReports(o.stderr, d.gaps)
}

// writeGapReports prints "Non-consecutive offsets in <path>" and its pairs,
// newest first, for every file that had gaps, in the order Kafka's map
// iterates.
func writeGapReports(w io.Writer, gaps *scalaGapMap) error {
	bw := bufio.NewWriter(w)
	for _, r := range gaps.ordered() {
		fmt.Fprintf(bw, "Non-consecutive offsets in %s\n", r.path)
		for i := len(r.pairs) - 1; i >= 0; i-- {
			fmt.Fprintf(bw, "  %d is followed by %d\n", r.pairs[i][0], r.pairs[i][1])
		}
	}
	return bw.Flush()
}
