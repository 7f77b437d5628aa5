// Package kafkadump prints segment files exactly as Kafka's
// kafka-dump-log.sh does: DumpLogSegments of Kafka 3.x (the Scala tool),
// byte for byte on stdout and on stderr, with the same options. It is the
// renderer behind `logstore dump`; its tests compare it with the output of
// Kafka's own tool (../shared/testdata/kafka-golden) and keep golden files
// of what it prints beyond Kafka (testdata/golden).
//
// # API
//
//	err := kafkadump.Dump(os.Stdout, os.Stderr, files, kafkadump.DefaultOptions())
//
// Dump dumps the files in order. Options are Kafka's options after
// DumpLogSegmentsOptions has derived them (print data implies deep
// iteration); the zero Options is not Kafka's defaults, DefaultOptions is.
// AddFlags puts Kafka's flags on a pflag.FlagSet, with Kafka's names,
// defaults and help, parsed as Kafka's option parser parses them
// (Integer.valueOf for sizes, String.split for --files, a decoder flag
// implies --print-data-log), and Flags.Options turns them into files and
// Options.
//
// # What Kafka prints
//
// The kind of a file is the suffix after the last '.' of its name: .log
// (record batches v2, shallow or deep, with keys and values), .index,
// .timeindex (with Kafka's checks of both against the log, --verify-index-only
// and --index-sanity-check), .txnindex and .snapshot (Kafka's producer
// snapshot). Any other suffix gets "Ignoring unknown file" on stderr. For
// each file, stdout gets "Dumping <file>" and the content. A corrupt
// .snapshot gets Kafka's message on stderr at once, and the dump goes on.
// Index mismatches, time index errors and non-consecutive offsets are
// kept, as Kafka keeps them, and printed on stderr after all files, in
// that order.
//
// # Java and Scala, emulated
//
// Kafka's output depends on its runtime, which this package reproduces
// (java.go): a path prints as java.io.File holds it (repeated slashes
// collapsed, a trailing slash dropped) and is reported by
// File.getAbsolutePath (resolved against the JVM's user.dir, symbolic
// links resolved, "." and ".." kept); --files is split as String.split
// splits (trailing empty strings dropped); keys and values print as
// new String(bytes, UTF_8) decodes them (each malformed sequence one
// U+FFFD, where the JDK ends it); and the reports printed after all files
// come in the iteration order of the Scala 2.13 mutable.HashMap that
// holds them, keyed by absolute path (bucket by improved String.hashCode,
// the table grown as Scala grows it). A report's pairs spill to a
// temporary file beyond a bound, so memory stays flat however many there
// are.
//
// # Beyond Kafka
//
// A producer-snapshots.db (logstore's bbolt snapshots, opened read-only)
// is dumped too, oldest snapshot first, each producer with its whole
// window. A directory stands for its segment files, by offset, and for one
// offset .log, .index, .timeindex, .txnindex, .snapshot; then
// producer-snapshots.db; other files in it are left out. Options.KeyDecoder
// and ValueDecoder print keys and values as string (Kafka's
// StringDecoder), hex or base64. Options.JSON prints JSON Lines instead,
// one object per line with a "type" and the "file" as given, and every
// problem as an object of its own right after what it concerns; the line
// types and fields are listed in `logstore dump --help`. JSON strings are
// quoted by internal/cliout: '"', '\\' and the C0 controls escaped, DEL
// and non-ASCII as they are.
//
// # Errors
//
// Dump's error is for what stops the dump: a name Kafka's tool fails on
// or this package refuses (checked for every file before anything is
// printed; ErrNotSupported marks what Kafka's tool dumps and this one
// does not yet), a file that cannot be read, with the file and the byte
// position (the files after it are not dumped; where Kafka's tool prints
// a stack trace), and a failed write. A producer-snapshots.db that cannot
// be opened or read (empty, not a bbolt file, damaged, held by a running
// store) is reported where it is met, on stderr or as a snapshotError
// line, the files after it are dumped, and the error at the end wraps
// ErrUnreadableDB. Untrusted bytes never panic the dump nor make it
// allocate what a length field claims: files are read in pieces, except a
// .snapshot, which Kafka reads whole too.
package kafkadump
