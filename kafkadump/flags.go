package kafkadump

// kafka-dump-log.sh's command line: DumpLogSegmentsOptions' flags, parsed
// as Kafka parses them.

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// StringDecoderClass is Kafka's default --key-decoder-class and
// --value-decoder-class, the only one this package has.
const StringDecoderClass = "org.apache.kafka.tools.api.StringDecoder"

// refusedDecoders are Kafka's decoder flags: accepted by name so that the
// refusal is plain, not "unknown flag".
var refusedDecoders = []struct{ name, usage string }{
	{"offsets-decoder", "parse __consumer_offsets data (not supported yet)"},
	{"transaction-log-decoder", "parse __transaction_state data (not supported yet)"},
	{"cluster-metadata-decoder", "parse KRaft cluster metadata records (not supported yet)"},
	{"remote-log-metadata-decoder", "parse remote log metadata records (not supported yet)"},
	{"share-group-state-decoder", "parse __share_group_state data (not supported yet)"},
}

// Flags are kafka-dump-log.sh's flags on a pflag.FlagSet, with Kafka's
// names, defaults and help, plus --key-decoder, --value-decoder and
// --json. Parse them with the FlagSet, then call Options.
type Flags struct {
	fs                *pflag.FlagSet
	files             string // --files as given
	opts              Options
	keyDecoderClass   string
	valueDecoderClass string
	keyDecoderName    string // --key-decoder
	valueDecoderName  string // --value-decoder
}

// AddFlags adds kafka-dump-log.sh's flags to fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs, opts: DefaultOptions()}
	o := &f.opts
	fs.SortFlags = false
	fs.StringVar(&f.files, "files", "", "REQUIRED: The comma separated list of data and index log files to be dumped.")
	fs.BoolVar(&o.PrintDataLog, "print-data-log", false, "If set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")
	fs.BoolVar(&o.DeepIteration, "deep-iteration", false, "If set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")
	fs.BoolVar(&o.SkipRecordMetadata, "skip-record-metadata", false, "Whether to skip printing metadata for each record (no effect with --json).")
	fs.Var(javaIntFlag{&o.MaxBytes}, "max-bytes", "Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
	fs.Var(javaIntFlag{&o.MaxMessageSize}, "max-message-size", "Size of largest message (used by .index dumps only).")
	fs.BoolVar(&o.VerifyIndexOnly, "verify-index-only", false, "If set, just verify the index log without printing its content.")
	fs.BoolVar(&o.IndexSanityCheck, "index-sanity-check", false, "If set, just checks the index sanity without printing its content. This is the same check that is executed on broker startup to determine if an index needs rebuilding or not.")
	fs.StringVar(&f.keyDecoderClass, "key-decoder-class", StringDecoderClass, "Used to deserialize the keys; only "+StringDecoderClass+" is supported. Give the value with '='.")
	fs.Lookup("key-decoder-class").NoOptDefVal = StringDecoderClass
	fs.StringVar(&f.valueDecoderClass, "value-decoder-class", StringDecoderClass, "Used to deserialize the messages; only "+StringDecoderClass+" is supported. Give the value with '='.")
	fs.Lookup("value-decoder-class").NoOptDefVal = StringDecoderClass
	for _, d := range refusedDecoders {
		fs.Bool(d.name, false, d.usage)
	}
	fs.StringVar(&f.keyDecoderName, "key-decoder", "string", "How to print keys: string, hex or base64. Implies --print-data-log.")
	fs.StringVar(&f.valueDecoderName, "value-decoder", "string", "How to print values and header values: string, hex or base64. Implies --print-data-log.")
	fs.BoolVar(&o.JSON, "json", false, "Print JSON Lines on stdout instead of Kafka's text.")
	return f
}

// Options checks the parsed flags and derives the files and options as
// DumpLogSegmentsOptions does: a decoder implies print data, print data
// implies deep iteration, and --files is split on commas as Java's
// String.split does.
func (f *Flags) Options() (files []string, opts Options, err error) {
	fs := f.fs
	o := f.opts
	for _, d := range refusedDecoders {
		if fs.Changed(d.name) {
			return nil, o, fmt.Errorf("--%s is %w", d.name, ErrNotSupported)
		}
	}
	for _, c := range []struct{ name, value string }{
		{"key-decoder-class", f.keyDecoderClass},
		{"value-decoder-class", f.valueDecoderClass},
	} {
		if !fs.Changed(c.name) {
			continue
		}
		if c.value != StringDecoderClass {
			return nil, o, fmt.Errorf("--%s %s is %w: only %s is", c.name, c.value, ErrNotSupported, StringDecoderClass)
		}
		o.PrintDataLog = true
	}
	for _, c := range []struct {
		name, value, class string
		dst                *Decoder
	}{
		{"key-decoder", f.keyDecoderName, "key-decoder-class", &o.KeyDecoder},
		{"value-decoder", f.valueDecoderName, "value-decoder-class", &o.ValueDecoder},
	} {
		dec, ok := ParseDecoder(c.value)
		if !ok {
			return nil, o, fmt.Errorf("--%s %q: want string, hex or base64", c.name, c.value)
		}
		if fs.Changed(c.name) {
			if fs.Changed(c.class) && dec != DecodeString {
				return nil, o, fmt.Errorf("--%s %s and --%s: give one of them", c.name, c.value, c.class)
			}
			o.PrintDataLog = true
		}
		*c.dst = dec
	}
	if !fs.Changed("files") {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return nil, o, errors.New(`Missing required argument "[files]"`)
	}
	if o.MaxBytes < 0 {
		return nil, o, fmt.Errorf("--max-bytes must not be negative, got %d", o.MaxBytes)
	}
	o.DeepIteration = o.DeepIteration || o.PrintDataLog
	return javaSplit(f.files, ","), o, nil
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
