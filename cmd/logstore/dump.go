package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/kafkadump"
)

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
on. A producer-snapshots.db that cannot be opened or read (empty, not a
bbolt file, damaged, or held by a running store) is reported at once on
stderr in a line that names it (with --json, as a snapshotError line
with the "error" alone), the files after it are dumped, and the exit
status is 1. Where Kafka's tool fails with a stack trace this prints one
line; it never creates a missing index as Kafka's does before failing;
and a missing .txnindex, which Kafka's tool dumps as empty, is an error.

Not supported yet, refused with an error: .checkpoint files (KRaft
snapshots), legacy message sets (magic 0 and 1), decoder classes other
than the default StringDecoder, and, unless --skip-record-metadata or
--json is given, control records that Kafka prints as JSON
(SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS).`

func newDumpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dump --files FILE[,FILE...]",
		Short: "Print segment files exactly as Kafka's kafka-dump-log.sh does",
		Long:  dumpLong,
		Example: `  logstore dump --files /var/lib/kafka/events-0/00000000000000000000.log
  logstore dump --print-data-log --files a.log,b.log
  logstore dump --files events-0/00000000000000000000.index,events-0/00000000000000000000.timeindex
  logstore dump --json --deep-iteration --value-decoder hex --files logstore-data/events-0`,
		Args: noPositionalArgs,
	}
	flags := kafkadump.AddFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		files, opts, err := flags.Options()
		if err != nil {
			return err
		}
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		opts.Progress = cliout.ProgressWriter(stdout, stderr)
		return kafkadump.Dump(stdout, stderr, files, opts)
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
