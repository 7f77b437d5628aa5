package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/appender"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Defaults of `logstore append`.
const (
	defaultAppendDir         = "./logstore-data"
	defaultAppendTopic       = "events"
	defaultAppendLockTimeout = 30 * time.Second
	defaultSyncInterval      = time.Second
	envStoreDir              = "LOGSTORE_DIR"
)

// errRefused marks a run in which the store refused at least one batch
// (OUT_OF_ORDER, FENCED or INVALID): exit status 3.
var errRefused = errors.New("refused")

// appendOptions holds the flags of `logstore append` and what complete
// derives from them.
type appendOptions struct {
	partitionFlags // --dir, --topic, --partition, --lock-timeout, the store's flags
	producerID     int64
	producerEpoch  int16
	baseSequence   int32
	key            string
	headers        []string
	timestamp      int64
	compression    string
	transactional  bool
	input          string
	fromLog        string
	json           bool
	segmentBytes   int64
	sync           string
	syncInterval   time.Duration
	values         []string // the arguments: one record value each

	// Derived by complete.
	storeOpts logstore.Options
	defaults  jsonl.Defaults
	batch     *jsonl.Batch // the batch of flags and arguments, when neither --input nor --from-log

	stdin  io.Reader
	stdout io.Writer
}

func newAppendCommand() *cobra.Command {
	opts := &appendOptions{
		partitionFlags: newPartitionFlags(),
		producerID:     recordbatch.NoProducerID,
		producerEpoch:  recordbatch.NoProducerEpoch,
		baseSequence:   recordbatch.NoSequence,
		compression:    recordbatch.CodecNone.String(),
		segmentBytes:   segment.DefaultSegmentBytes,
		sync:           "always",
		syncInterval:   defaultSyncInterval,
	}
	cmd := &cobra.Command{
		Use:   "append [flags] VALUE... | --input FILE | --from-log FILE.log",
		Short: "Append record batches to a store and print the store's answer to each",
		Long: `append sends record batches to a partition of the store in --dir, as a
producer sends them, and prints one reply line per batch as soon as the
store has acknowledged it (written, and fsynced under --sync always):

  OK base=<first offset> last=<last offset>
  DUPLICATE base=<first copy's first offset> last=<its last offset>
  OUT_OF_ORDER <the sequence expected and the one that came>
  FENCED <the epochs>
  INVALID <why the batch was refused>

With --json each reply is a JSON object on a line of its own instead:
{"outcome":"OK","base":0,"last":1} or {"outcome":"FENCED","reason":"..."},
with "line" (--input) or "batch" and "position" (--from-log) first.

Three ways to give batches:

Arguments: one batch whose records have the arguments as values; --key and
every --header apply to each record, --timestamp (ms since the epoch,
default now, -1 for none) is each record's timestamp. Without
--producer-id the batch has no producer (-1) and is not checked for
sequence.

--input FILE (- for stdin): JSON Lines, one batch per line:

  {"topic":"events","partition":0,"producerId":31,"producerEpoch":0,
   "baseSequence":0,"compression":"none","transactional":false,
   "records":[{"key":"k","value":"v","timestamp":1700000000000,
               "headers":[{"key":"h","value":"x"}]}]}

  Only "records" is required, with at least one record. topic, partition
  and compression default to the flags, producerId, producerEpoch and
  baseSequence to -1, transactional to false, a record's timestamp to
  --timestamp or now. A missing or null key or value is null, as is a null
  header value; header keys are required. "key", "value" and header
  "value" are UTF-8 text; for binary data give "keyBase64" or
  "valueBase64" instead (standard base64, with padding), e.g.
  {"valueBase64":"AP8Q"} is the three bytes 00 ff 10; a header key may
  be "keyBase64" too. A line may also be one record object, with no
  batch field: a line of read --json is appended as it is (its "offset"
  and "timestampType" are not kept). Unknown fields are refused. A line that cannot become a batch (invalid JSON, no records,
  an unknown codec, a producer id without a base sequence, ...) gets
  "INVALID line N: <reason>", and the lines after it are still sent; so
  does a line whose partition cannot be opened (e.g. a directory name
  longer than the filesystem allows, or a file where the partition's
  directory should be).
  Blank lines are skipped. The store stays locked until the input ends.

--from-log FILE.log: every batch of a segment file (Kafka's or this
store's), in order, sent unchanged: producer fields, attributes and
records as they are; only the base offset is assigned afresh, so offset
gaps close up. Control batches (COMMIT and ABORT markers) are refused as
INVALID, since a producer may not send them, so a segment with
transactions exits with 3 even when all its data was taken. Batches with
a producer id go through the producer checks like any other: a producer
the store has not seen must start at sequence 0, so one that the segment
catches mid-stream gets OUT_OF_ORDER. An INVALID reply names the batch:
"INVALID batch N at position P: <reason>". A file that ends inside a
batch, or stops looking like a segment, ends the run with status 1 after
the replies to the batches before.

Exit status: 0 when every batch was OK or DUPLICATE; 3 when the store
refused any (OUT_OF_ORDER, FENCED, INVALID); 1 on any other error (bad
flags, unreadable input, a store that cannot be opened or is still locked
after --lock-timeout, an I/O error), with a message on stderr. Several
append processes may run at once on one store: each waits for the
store's lock.

SIGINT or SIGTERM stops the run cleanly: no more input is read, the
batch in flight is answered, the store is closed (fsynced, whatever
--sync says, with a snapshot and a clean shutdown mark, so the next
open does not scan the log), and the exit status is 130 (SIGINT) or 143
(SIGTERM), whatever the replies were. stderr then says where the input
stopped, so that a producer knows where to resume:

  logstore append: interrupted by SIGTERM: lines 1 to 17 were answered;
  the input from line 18 on was not sent; the store was closed cleanly

(for --from-log: "batches 1 to N were answered; FILE from batch N+1 at
position P on was not sent"). A signal while waiting for the store's
lock ends the wait at once. A second signal exits at once, with the
first one's status, without closing the store: nothing acknowledged is
lost, and the next open recovers the store as after a crash.`,
		Example: `  logstore append hello world
  logstore append --topic orders --partition 2 --key user-7 --header source=web '{"total":12}'
  logstore append --producer-id 31 --producer-epoch 0 --base-sequence 0 a b c
  logstore append --input batches.jsonl --json
  producer | logstore append --input -
  logstore append --dir copy --topic foo --from-log /var/lib/kafka/foo-0/00000000000000000000.log`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(cmd, args); err != nil {
				return err
			}
			opts.stdout = cmd.OutOrStdout()
			if opts.input == "-" {
				opts.stdin = cmd.InOrStdin()
			}
			stop := shutdown.Catch(cmd.Context())
			defer stop.Stop()
			return runAppend(stop.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	addDirFlag(f, &opts.dir)
	f.StringVar(&opts.topic, "topic", opts.topic, "`TOPIC` to append to")
	f.Int32Var(&opts.partition, "partition", 0, "partition to append to")
	f.Int64Var(&opts.producerID, "producer-id", opts.producerID, "producer id of the batch; -1 for none")
	f.Int16Var(&opts.producerEpoch, "producer-epoch", opts.producerEpoch, "producer epoch of the batch")
	f.Int32Var(&opts.baseSequence, "base-sequence", opts.baseSequence, "sequence number of the batch's first record; required with --producer-id")
	f.StringVar(&opts.key, "key", "", "key of every record (default null)")
	f.StringArrayVar(&opts.headers, "header", nil, "record header `KEY=VALUE` on every record; repeatable")
	f.Int64Var(&opts.timestamp, "timestamp", 0, "record timestamp in ms since the epoch, -1 for none (default now)")
	f.StringVar(&opts.compression, "compression", opts.compression, "codec of the batch: none, gzip, snappy, lz4 or zstd")
	f.BoolVar(&opts.transactional, "transactional", false, "mark the batch transactional")
	f.StringVar(&opts.input, "input", "", "read batches as JSON Lines from `FILE`, - for stdin")
	f.StringVar(&opts.fromLog, "from-log", "", "re-send every batch of the segment file `FILE.log`")
	f.BoolVar(&opts.json, "json", false, "print replies as JSON Lines")
	f.Int64Var(&opts.segmentBytes, "segment-bytes", opts.segmentBytes, "roll to a new segment file at this size (small values allowed)")
	f.StringVar(&opts.sync, "sync", opts.sync, "when appends are fsynced: always (before each reply), interval, or never (only at exit)")
	f.DurationVar(&opts.syncInterval, "sync-interval", opts.syncInterval, "fsync period of --sync interval")
	addLockTimeoutFlag(f, &opts.lockTimeout)
	opts.store.addTo(cmd)
	return cmd
}

// batchFlags are the flags that describe the one batch of the arguments;
// --input and --from-log carry their own.
var batchFlags = []string{"producer-id", "producer-epoch", "base-sequence", "key", "header", "transactional"}

// complete checks the flags and arguments and derives the store options
// and, for a batch of arguments, the batch.
func (o *appendOptions) complete(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	if o.input != "" && o.fromLog != "" {
		return errors.New("--input and --from-log cannot be used together")
	}
	if o.input != "" || o.fromLog != "" {
		from := "--input"
		if o.fromLog != "" {
			from = "--from-log"
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: with %s the records come from the file", args[0], from)
		}
		for _, name := range batchFlags {
			if f.Changed(name) {
				return fmt.Errorf("--%s describes the batch of the arguments; with %s each batch carries its own", name, from)
			}
		}
		if o.fromLog != "" {
			for _, name := range []string{"compression", "timestamp"} {
				if f.Changed(name) {
					return fmt.Errorf("--%s cannot be used with --from-log: its batches are sent unchanged", name)
				}
			}
		}
	} else if len(args) == 0 {
		return errors.New("no records: give the record values as arguments, or batches with --input FILE or --from-log FILE.log")
	}
	if o.dir == "" {
		return errors.New("--dir is empty")
	}
	if err := checkPartitionFlags(o.topic, o.partition); err != nil {
		return err
	}
	o.values = args

	codec, err := jsonl.ParseCodec(o.compression)
	if err != nil {
		return fmt.Errorf("--compression: %w", err)
	}
	ts := time.Now().UnixMilli()
	if f.Changed("timestamp") {
		if err := jsonl.CheckTimestamp(o.timestamp); err != nil {
			return fmt.Errorf("--timestamp: %w", err)
		}
		ts = o.timestamp
	}
	o.defaults = jsonl.Defaults{Topic: o.topic, Partition: o.partition, Codec: codec, Timestamp: ts}

	if o.storeOpts, err = o.storeOptions(f.Changed("sync-interval")); err != nil {
		return err
	}
	if err := o.store.apply(&o.storeOpts); err != nil {
		return err
	}
	if o.input != "" || o.fromLog != "" {
		return nil
	}
	return o.completeBatch(f.Changed("key"), ts, codec)
}

// storeOptions derives the store's options from --sync, --sync-interval,
// --lock-timeout and --segment-bytes.
func (o *appendOptions) storeOptions(intervalSet bool) (logstore.Options, error) {
	var opts logstore.Options
	switch o.sync {
	case "always":
		opts.Sync = logstore.SyncAlways
	case "never":
		opts.Sync = logstore.SyncNever
	case "interval":
		if o.syncInterval <= 0 {
			return opts, fmt.Errorf("--sync-interval %s: must be above zero", o.syncInterval)
		}
		opts.Sync = logstore.SyncInterval(o.syncInterval)
	default:
		return opts, fmt.Errorf("--sync %q: want always, interval or never", o.sync)
	}
	if intervalSet && o.sync != "interval" {
		return opts, fmt.Errorf("--sync-interval applies only with --sync interval, not --sync %s", o.sync)
	}
	opts.LockTimeout = storeDuration(o.lockTimeout)
	if o.segmentBytes < recordbatch.HeaderSize || o.segmentBytes > math.MaxInt32 {
		return opts, fmt.Errorf("--segment-bytes %d: must be from %d to %d", o.segmentBytes, recordbatch.HeaderSize, math.MaxInt32)
	}
	opts.SegmentBytes = o.segmentBytes
	return opts, nil
}

// completeBatch builds the batch spec of the flags and arguments.
func (o *appendOptions) completeBatch(keySet bool, ts int64, codec recordbatch.Codec) error {
	var key []byte
	if keySet {
		key = []byte(o.key)
	}
	var headers []recordbatch.RecordHeader
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok {
			return fmt.Errorf("--header %q: want KEY=VALUE", h)
		}
		headers = append(headers, recordbatch.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	s := &jsonl.Batch{
		Topic:         o.topic,
		Partition:     o.partition,
		ProducerID:    o.producerID,
		ProducerEpoch: o.producerEpoch,
		BaseSequence:  o.baseSequence,
		Codec:         codec,
		Transactional: o.transactional,
	}
	for _, v := range o.values {
		s.Records = append(s.Records, jsonl.Record{Timestamp: ts, Key: key, Value: []byte(v), Headers: headers})
	}
	o.batch = s
	return nil
}

// runAppend opens the input, then the store, sends every batch and prints
// the replies. It returns an error wrapping errRefused when the store
// refused any batch and nothing else failed. A signal (ctx's cause a
// *shutdown.Interrupted) stops the wait for the store's lock or for the
// next batch: the batch in flight is answered, the store closed, and the
// error wraps the interruption and says what was not sent.
func runAppend(ctx context.Context, o *appendOptions) error {
	var src appender.Source
	switch {
	case o.input == "-":
		src = appender.Lines(o.stdin, "stdin", o.defaults)
	case o.input != "":
		file, err := os.Open(o.input)
		if err != nil {
			return fmt.Errorf("--input: %w", err)
		}
		defer file.Close()
		src = appender.Lines(file, o.input, o.defaults)
	case o.fromLog != "":
		file, err := os.Open(o.fromLog)
		if err != nil {
			return fmt.Errorf("--from-log: %w", err)
		}
		defer file.Close()
		src = appender.Log(file, o.fromLog, o.topic, o.partition)
	default:
		src = appender.Args(o.batch)
	}

	a := appender.New(o.stdout, o.json)
	store, err := openStoreUntil(ctx, o.dir, o.storeOpts)
	if err != nil {
		if stop := interruption(ctx); stop != nil {
			return fmt.Errorf("%w: %s", stop, a.Unsent(src))
		}
		return err
	}
	sendErr := a.SendAll(ctx, store, src)
	// Close syncs what --sync left unsynced: a failure there is an I/O
	// error (status 1), whatever the replies said.
	closeErr := store.Close()
	if stop := interruption(ctx); stop != nil {
		unsent := a.Unsent(src)
		if closeErr == nil {
			unsent += "; the store was closed cleanly"
		}
		return errors.Join(fmt.Errorf("%w: %s", stop, unsent), sendErr, closeErr)
	}
	if closeErr != nil {
		return errors.Join(sendErr, closeErr)
	}
	total, refused := a.Counts()
	switch {
	case sendErr != nil:
		return sendErr
	case refused > 0 && total == 1:
		return fmt.Errorf("the batch was %w", errRefused)
	case refused > 0:
		return fmt.Errorf("%d of %d batches %w", refused, total, errRefused)
	}
	return nil
}
