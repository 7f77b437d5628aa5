package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/perf"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Defaults and limits of `logstore perf`.
const (
	defaultPerfBatchSize = 16384   // Kafka's batch.size
	defaultPerfReadBytes = 1 << 20 // a fetch's worth, like read's chunks
	maxPerfReadBytes     = 1 << 30
	maxPerfProducers     = 1024
)

func newPerfCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure append and read throughput and latency, like Kafka's perf-test tools",
		Long: `perf measures the store as kafka-producer-perf-test.sh and
kafka-consumer-perf-test.sh measure a cluster: produce appends a number
of generated records and reports throughput and acknowledgement latency;
consume reads a partition to its end and reports throughput.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPerfProduceCommand(), newPerfConsumeCommand())
	return cmd
}

// --- produce ---

// perfProduceOptions holds the flags of `logstore perf produce` and what
// complete derives from them.
type perfProduceOptions struct {
	records     int64
	recordSize  int
	batchSize   int
	producers   int
	sync        string
	compression string
	dir         string
	topic       string
	partition   int32
	json        bool

	// Over the wire (perfwire.go).
	bootstrap  string
	acks       string
	linger     time.Duration
	partitions int32
	tls        wireTLS

	// Derived by complete.
	codec     recordbatch.Codec
	storeOpts logstore.Options
	store     storeFlags
	perBatch  int64 // records per batch
	batches   int64 // batches the run will append

	stdout   io.Writer
	stderr   io.Writer
	progress time.Duration // progress lines on stderr this often; 0 for none
}

func newPerfProduceCommand() *cobra.Command {
	opts := &perfProduceOptions{
		batchSize:   defaultPerfBatchSize,
		producers:   1,
		sync:        "always",
		compression: recordbatch.CodecNone.String(),
		topic:       defaultAppendTopic,
		acks:        "all",
		linger:      defaultPerfLinger,
		partitions:  1,
	}
	cmd := &cobra.Command{
		Use:   "produce --records N --record-size S [flags]",
		Short: "Append generated records and report throughput and acknowledgement latency",
		Long: `produce appends --records records of --record-size bytes each to one
partition and reports what it measured. Values are random letters A-Z,
as Kafka's producer perf test sends them; keys are null, timestamps the
time the batch is built.

--producers goroutines share the records; each is an idempotent producer
with its own producer id (above every id the partition remembers) and
epoch 0, and its own sequence from 0. A producer takes as many records
as fit in --batch-size bytes (uncompressed: header and records, like
Kafka's batch.size), at least one, builds the batch, and calls Append;
the next batch is built once Append returns. Building is the client's
cost: it counts in the elapsed time but not in the latency.

The report gives: records sent, batches, elapsed time (first append to
last acknowledgement; closing the store, which syncs whatever --sync
left unsynced, is timed apart), records/s, MB/s of record values
(records x --record-size) and MB/s of batch bytes (as written: headers,
records, compressed), with MB = 2^20 bytes as Kafka's tools count it,
and the acknowledgement latency of each batch (from the call to Append
to its return) as avg, p50, p99, p99.9 and max, exact (nearest rank over
every batch). --json prints the report as one JSON object.

When stderr is a terminal, a line every second gives the last second's
records, records/s, MB/s of values and avg and max latency.

Without --dir the store is a new directory logstore-perf-* in the
current directory (on the disk append's ./logstore-data would use, not
on a tmpfs /tmp), removed at the end; $` + envStoreDir + ` is not used, so
produce writes into an existing store only when --dir names it. Give
--dir to keep the data, e.g. for perf consume.

With --bootstrap HOST:PORT, produce sends the same records to a running
broker (logstore serve, or any Kafka broker) instead of appending in
process, as kafka-producer-perf-test.sh does: each of --producers is its
own franz-go kgo client, idempotent with --acks all (the default; with
--acks 1 or 0 not idempotent, as kgo requires), batching up to
--batch-size bytes (--batch-bytes is the same flag; kgo's
ProducerBatchMaxBytes) and waiting up to --linger for a batch to fill,
compressing with --compression. Every record goes to --partition of
--topic; when the broker does not know the topic, produce creates it
with --partitions partitions. Up to 5 requests are in flight per client,
and kgo buffers up to 50000 records, so the latency is that of each
record, from the Produce call to its acknowledgement (exact percentiles
over every record). Batches and batch bytes are those kgo reports
written (none with --acks 0). --sync, --dir and the store's flags are
refused with --bootstrap: the server's own flags decide them.

Exit status: 0 when every record was acknowledged; 1 for bad flags, a
store that cannot be opened, an I/O error, or a batch the store refused
(OUT_OF_ORDER, FENCED, INVALID, DUPLICATE): the run stops at the first;
130 or 143 when SIGINT or SIGTERM stopped it: the producers stop after
the batches in flight, the store is closed cleanly and no report is
printed (a second signal exits at once).`,
		Example: `  logstore perf produce --records 200000 --record-size 100
  logstore perf produce --records 1000000 --record-size 1000 --producers 4 --sync never --compression lz4
  logstore perf produce --records 100000 --record-size 100 --sync interval=200ms --dir perf-data --json
  logstore perf produce --bootstrap 127.0.0.1:9092 --topic perf --records 1000000 --record-size 100 --producers 8 --batch-bytes 16384`,
		Args: inspectNoArgs("give the workload with --records and --record-size"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			wire := opts.bootstrap != ""
			if err := checkModeFlags(cmd.Flags(), wire); err != nil {
				return err
			}
			if !wire {
				if err := opts.complete(); err != nil {
					return err
				}
			}
			opts.stdout, opts.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if cliout.IsTerminal(opts.stderr) {
				opts.progress = time.Second
			}
			stop := shutdown.Catch(cmd.Context())
			defer stop.Stop()
			if wire {
				return runPerfProduceWire(stop.Context(), opts)
			}
			return runPerfProduce(stop.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.Int64Var(&opts.records, "records", 0, "total records to send (required)")
	f.IntVar(&opts.recordSize, "record-size", 0, "value bytes of each record (required)")
	f.IntVar(&opts.batchSize, "batch-size", opts.batchSize, "target batch size in bytes, uncompressed, like Kafka's batch.size (--batch-bytes is the same flag)")
	f.IntVar(&opts.producers, "producers", opts.producers, "idempotent producers sending at once, sharing the records")
	f.StringVar(&opts.sync, "sync", opts.sync, "when appends are fsynced: always (before each acknowledgement), interval=DURATION (interval alone: every 1s), or never (only at close)")
	f.StringVar(&opts.compression, "compression", opts.compression, "codec of the batches: none, gzip, snappy, lz4 or zstd")
	f.StringVar(&opts.dir, "dir", "", "store directory `DIR` (default: a temporary one in the current directory, removed at the end)")
	f.StringVar(&opts.topic, "topic", opts.topic, "`TOPIC` to append to")
	f.Int32Var(&opts.partition, "partition", 0, "partition to append to")
	f.BoolVar(&opts.json, "json", false, "print the report as one JSON object")
	opts.store.addTo(cmd)
	f.StringVar(&opts.bootstrap, "bootstrap", "", "send to the broker at `HOST:PORT` (several: comma-separated) with kgo clients, instead of appending in process")
	f.StringVar(&opts.acks, "acks", opts.acks, "with --bootstrap: all (idempotent producers), 1 or 0 (not idempotent: kgo's idempotence needs acks=all)")
	f.DurationVar(&opts.linger, "linger", opts.linger, "with --bootstrap: how long kgo waits for more records before sending a batch, like Kafka's linger.ms")
	f.Int32Var(&opts.partitions, "partitions", opts.partitions, "with --bootstrap: partitions of the topic when the broker does not know it and produce creates it")
	opts.tls.register(f)
	f.SetNormalizeFunc(batchBytesAlias)
	return cmd
}

// complete checks the flags, before anything is allocated or created,
// and derives the batch shape and the store options.
func (o *perfProduceOptions) complete() error {
	maxSize := perf.MaxRecordSize()
	switch {
	case o.records <= 0:
		return fmt.Errorf("--records %d: must be above zero", o.records)
	case o.recordSize <= 0 || o.recordSize > maxSize:
		return fmt.Errorf("--record-size %d: must be from 1 to %d (one record must fit in a batch of %d bytes, the store's limit)", o.recordSize, maxSize, segment.DefaultMaxBatchBytes)
	case o.batchSize <= 0 || o.batchSize > segment.DefaultMaxBatchBytes:
		return fmt.Errorf("--batch-size %d: must be from 1 to %d, the store's largest batch", o.batchSize, segment.DefaultMaxBatchBytes)
	case o.producers <= 0 || o.producers > maxPerfProducers:
		return fmt.Errorf("--producers %d: must be from 1 to %d", o.producers, maxPerfProducers)
	}
	id := logstore.PartitionID{Topic: o.topic, Partition: o.partition}
	if err := id.Validate(); err != nil {
		return err
	}
	var err error
	if o.codec, err = jsonl.ParseCodec(o.compression); err != nil {
		return fmt.Errorf("--compression: %w", err)
	}
	if o.storeOpts, err = perfStoreOptions(o.sync); err != nil {
		return err
	}
	if err := o.store.apply(&o.storeOpts); err != nil {
		return err
	}
	o.perBatch = perf.RecordsPerBatch(o.recordSize, o.batchSize)
	o.batches = (o.records-1)/o.perBatch + 1
	if o.batches > perf.MaxBatches {
		return fmt.Errorf("--records %d: that is %d batches of %d records, and a run may have at most %d (produce keeps every batch's latency for exact percentiles); lower --records or raise --batch-size",
			o.records, o.batches, o.perBatch, perf.MaxBatches)
	}
	return nil
}

// perfStoreOptions maps --sync to the store's options with append's
// parsing; interval=DURATION is append's --sync interval --sync-interval
// DURATION.
func perfStoreOptions(sync string) (logstore.Options, error) {
	a := appendOptions{sync: sync, syncInterval: defaultSyncInterval, segmentBytes: segment.DefaultSegmentBytes}
	if mode, arg, ok := strings.Cut(sync, "="); ok {
		d, err := time.ParseDuration(arg)
		if mode != "interval" || err != nil || d <= 0 {
			return logstore.Options{}, fmt.Errorf("--sync %q: want always, never, or interval=DURATION with a duration above zero, e.g. interval=200ms", sync)
		}
		a.sync, a.syncInterval = mode, d
	}
	return a.storeOptions(false)
}

// runPerfProduce opens the store (creating a temporary one without
// --dir), runs the producers and prints the report.
func runPerfProduce(ctx context.Context, o *perfProduceOptions) (err error) {
	rep := &perf.ProduceReport{
		Producers: o.producers, RecordsPerBatch: o.perBatch, RecordSize: o.recordSize, BatchSize: o.batchSize,
		Compression: o.codec.String(), Sync: o.storeOpts.Sync.String(), Dir: o.dir, Topic: o.topic, Partition: o.partition,
	}
	if rep.Dir == "" {
		if rep.Dir, err = os.MkdirTemp(".", "logstore-perf-"); err != nil {
			return fmt.Errorf("creating a temporary store directory (give --dir to choose one): %w", err)
		}
		rep.TemporaryDir = true
		defer func() {
			if rerr := os.RemoveAll(rep.Dir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("removing the temporary store: %w", rerr))
			}
		}()
	}
	store, err := logstore.Open(rep.Dir, o.storeOpts)
	if err != nil {
		return err
	}
	p, err := store.Partition(o.topic, o.partition)
	if err != nil {
		return errors.Join(err, store.Close())
	}
	runErr := withInterruption(ctx, perf.Produce(ctx, p, perf.ProduceConfig{
		Records: o.records, RecordSize: o.recordSize, PerBatch: o.perBatch, Producers: o.producers, Codec: o.codec,
		Progress: o.stderr, ProgressEvery: o.progress,
	}, rep))
	closing := time.Now()
	closeErr := store.Close()
	rep.CloseSeconds = time.Since(closing).Seconds()
	if err := errors.Join(runErr, closeErr); err != nil {
		return err
	}
	rep.Finish()
	return writePerfReport(o.stdout, o.json, rep, rep.Text)
}

// --- consume ---

// perfConsumeOptions holds the flags of `logstore perf consume`.
type perfConsumeOptions struct {
	partitionFlags
	from     int64
	fromSet  bool
	maxBytes int
	shallow  bool
	json     bool

	// Over the wire (perfwire.go).
	bootstrap string
	timeout   time.Duration
	tls       wireTLS

	commandOutput
	progress time.Duration // progress lines on stderr this often; 0 for none
}

func newPerfConsumeCommand() *cobra.Command {
	opts := &perfConsumeOptions{partitionFlags: newPartitionFlags(), maxBytes: defaultPerfReadBytes, timeout: defaultPerfWireTimeout}
	cmd := &cobra.Command{
		Use:   "consume [--dir DIR] [--topic TOPIC] [--partition N] [--from OFFSET] [--max-bytes B] [--shallow] [--json]",
		Short: "Read a partition to its end and report throughput",
		Long: `consume reads a partition from --from (default: the log start) to its end
with Partition.Read, --max-bytes at a time (at least one whole batch),
and reports bytes, batches, records, elapsed time, MB/s and records/s
(MB = 2^20 bytes). Reads are of whole batches, starting with the one that
holds --from, and every record of a batch read is counted; records of
control batches (transaction markers) are not.

By default each batch is handled as a consumer handles it: its CRC is
checked, it is decompressed, and every record is decoded. With --shallow
only the batch headers are parsed (records counted from the header),
which measures the store's read path alone. A partition just written is
likely to be read from the page cache.

When stderr is a terminal, a line every second gives the last second's
records, records/s and MB/s. --json prints the report as one JSON object.

consume opens the store as read does: it never creates a store or a
partition, it takes the store's lock (waiting up to --lock-timeout), and
opening the partition recovers it as every open does (what was changed
is said on stderr).

With --bootstrap HOST:PORT, consume reads --topic's --partition from a
running broker with one franz-go kgo consumer (no group), as
kafka-consumer-perf-test.sh does: from --from (default the log start) to
the end the broker gave when the run began (the high watermark), with
--max-bytes as kgo's FetchMaxBytes and FetchMaxPartitionBytes. Bytes and
batches are those of the batches kgo fetched, as they came over the
wire; records are counted as kgo hands them over, every record decoded.
A run that waits --timeout for the next record fails. --dir, --shallow,
--lock-timeout and the store's flags are refused with --bootstrap.

Exit status: 0 when the partition was read to its end; 1 for bad flags,
a store or partition that does not exist or cannot be opened, an offset
outside the log, or a batch that cannot be read; 130 or 143 when SIGINT
or SIGTERM stopped it (between reads; the store is closed cleanly; a
second signal exits at once).`,
		Example: `  logstore perf produce --records 200000 --record-size 100 --dir perf-data
  logstore perf consume --dir perf-data
  logstore perf consume --dir perf-data --shallow --max-bytes 4194304 --json
  logstore perf consume --bootstrap 127.0.0.1:9092 --topic perf`,
		Args: inspectNoArgs("name the partition with --dir, --topic and --partition"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.fromSet = cmd.Flags().Changed("from")
			opts.bind(cmd)
			if cliout.IsTerminal(opts.stderr) {
				opts.progress = time.Second
			}
			wire := opts.bootstrap != ""
			if err := checkModeFlags(cmd.Flags(), wire); err != nil {
				return err
			}
			stop := shutdown.Catch(cmd.Context())
			defer stop.Stop()
			if wire {
				return runPerfConsumeWire(stop.Context(), opts)
			}
			return runPerfConsume(stop.Context(), opts)
		},
	}
	cmd.Flags().SortFlags = false
	opts.addTo(cmd)
	f := cmd.Flags()
	f.Int64Var(&opts.from, "from", 0, "first offset to read (default the log start)")
	f.IntVar(&opts.maxBytes, "max-bytes", opts.maxBytes, "bytes to ask the partition for per read")
	f.BoolVar(&opts.shallow, "shallow", false, "parse batch headers only: no CRC check, no decompression, no record decoding")
	f.BoolVar(&opts.json, "json", false, "print the report as one JSON object")
	f.StringVar(&opts.bootstrap, "bootstrap", "", "read from the broker at `HOST:PORT` (several: comma-separated) with a kgo consumer, instead of the store in process")
	f.DurationVar(&opts.timeout, "timeout", opts.timeout, "with --bootstrap: the longest wait for the next record before giving up")
	opts.tls.register(f)
	return cmd
}

func runPerfConsume(ctx context.Context, o *perfConsumeOptions) (err error) {
	if o.maxBytes <= 0 || o.maxBytes > maxPerfReadBytes {
		return fmt.Errorf("--max-bytes %d: must be from 1 to %d", o.maxBytes, maxPerfReadBytes)
	}
	store, p, err := o.open(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	o.reportRecovery(p)

	off, err := startingOffset(p, "--from", o.from, o.fromSet)
	if err != nil {
		return err
	}
	end := p.EndOffset()
	rep := &perf.ConsumeReport{Topic: o.topic, Partition: o.partition, From: off, End: end, Shallow: o.shallow}
	cfg := perf.ConsumeConfig{MaxBytes: o.maxBytes, Shallow: o.shallow, Progress: o.stderr, ProgressEvery: o.progress}
	if err := perf.Consume(ctx, p, off, end, cfg, rep); err != nil {
		return err
	}
	return writePerfReport(o.stdout, o.json, rep, rep.Text)
}

// --- shared ---

// writePerfReport prints rep as JSON, or as text.
func writePerfReport(w io.Writer, asJSON bool, rep any, text func() string) error {
	var out []byte
	if asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		out = append(b, '\n')
	} else {
		out = []byte(text())
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
