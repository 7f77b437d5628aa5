package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Defaults and limits of `logstore perf`.
const (
	defaultPerfBatchSize = 16384   // Kafka's batch.size
	defaultPerfReadBytes = 1 << 20 // a fetch's worth, like read's chunks
	maxPerfReadBytes     = 1 << 30
	maxPerfProducers     = 1024
	// maxPerfBatches bounds a run because produce keeps the latency of
	// every batch (8 bytes each) for exact percentiles.
	maxPerfBatches = 50_000_000
	perfMB         = 1 << 20 // MB as Kafka's perf tools count it
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

Exit status: 0 when every record was acknowledged; 1 for bad flags, a
store that cannot be opened, an I/O error, or a batch the store refused
(OUT_OF_ORDER, FENCED, INVALID, DUPLICATE): the run stops at the first.`,
		Example: `  logstore perf produce --records 200000 --record-size 100
  logstore perf produce --records 1000000 --record-size 1000 --producers 4 --sync never --compression lz4
  logstore perf produce --records 100000 --record-size 100 --sync interval=200ms --dir perf-data --json`,
		Args: inspectNoArgs("give the workload with --records and --record-size"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.complete(); err != nil {
				return err
			}
			opts.stdout, opts.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if isTerminal(opts.stderr) {
				opts.progress = time.Second
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runPerfProduce(ctx, opts)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.Int64Var(&opts.records, "records", 0, "total records to send (required)")
	f.IntVar(&opts.recordSize, "record-size", 0, "value bytes of each record (required)")
	f.IntVar(&opts.batchSize, "batch-size", opts.batchSize, "target batch size in bytes, uncompressed, like Kafka's batch.size")
	f.IntVar(&opts.producers, "producers", opts.producers, "idempotent producers sending at once, sharing the records")
	f.StringVar(&opts.sync, "sync", opts.sync, "when appends are fsynced: always (before each acknowledgement), interval=DURATION (interval alone: every 1s), or never (only at close)")
	f.StringVar(&opts.compression, "compression", opts.compression, "codec of the batches: none, gzip, snappy, lz4 or zstd")
	f.StringVar(&opts.dir, "dir", "", "store directory `DIR` (default: a temporary one in the current directory, removed at the end)")
	f.StringVar(&opts.topic, "topic", opts.topic, "`TOPIC` to append to")
	f.Int32Var(&opts.partition, "partition", 0, "partition to append to")
	f.BoolVar(&opts.json, "json", false, "print the report as one JSON object")
	opts.store.addTo(cmd)
	return cmd
}

// complete checks the flags, before anything is allocated or created,
// and derives the batch shape and the store options.
func (o *perfProduceOptions) complete() error {
	maxSize := perfMaxRecordSize()
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
	if o.codec, err = parseCodecName(o.compression); err != nil {
		return fmt.Errorf("--compression: %w", err)
	}
	if o.storeOpts, err = perfStoreOptions(o.sync); err != nil {
		return err
	}
	if err := o.store.apply(&o.storeOpts); err != nil {
		return err
	}
	o.perBatch = perfRecordsPerBatch(o.recordSize, o.batchSize)
	o.batches = (o.records-1)/o.perBatch + 1
	if o.batches > maxPerfBatches {
		return fmt.Errorf("--records %d: that is %d batches of %d records, and a run may have at most %d (produce keeps every batch's latency for exact percentiles); lower --records or raise --batch-size",
			o.records, o.batches, o.perBatch, maxPerfBatches)
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

// perfRecordBytes is the size in a batch of one record as produce builds
// it: null key, the value, no headers, timestamp delta 0 (a batch's
// records share one timestamp), at offsetDelta.
func perfRecordBytes(valueSize int, offsetDelta int64) int {
	body := 1 + 1 + varintLen(offsetDelta) + 1 + varintLen(int64(valueSize)) + valueSize + 1
	return varintLen(int64(body)) + body
}

// varintLen is the size of v as a zig-zag varint, the encoding of Kafka's
// record fields and of binary.PutVarint.
func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// perfRecordsPerBatch is how many records of valueSize bytes fit in a
// batch of batchSize bytes, uncompressed, and at least one.
func perfRecordsPerBatch(valueSize, batchSize int) int64 {
	size, n := recordbatch.HeaderSize+perfRecordBytes(valueSize, 0), int64(1)
	for {
		next := size + perfRecordBytes(valueSize, n)
		if next > batchSize {
			return n
		}
		size, n = next, n+1
	}
}

// perfMaxRecordSize is the largest value a one-record batch can carry
// within the store's batch limit.
func perfMaxRecordSize() int {
	s := segment.DefaultMaxBatchBytes - recordbatch.HeaderSize
	for recordbatch.HeaderSize+perfRecordBytes(s, 0) > segment.DefaultMaxBatchBytes {
		s--
	}
	return s
}

// perfProduceReport is what produce measured; its fields are the --json
// object.
type perfProduceReport struct {
	Records         int64       `json:"records"`
	Batches         int64       `json:"batches"`
	Producers       int         `json:"producers"`
	RecordsPerBatch int64       `json:"recordsPerBatch"`
	RecordSize      int         `json:"recordSize"`
	BatchSize       int         `json:"batchSize"`
	Compression     string      `json:"compression"`
	Sync            string      `json:"sync"`
	Dir             string      `json:"dir"`
	TemporaryDir    bool        `json:"temporaryDir"`
	Topic           string      `json:"topic"`
	Partition       int32       `json:"partition"`
	ValueBytes      int64       `json:"valueBytes"`
	BatchBytes      int64       `json:"batchBytes"`
	ElapsedSeconds  float64     `json:"elapsedSeconds"`
	CloseSeconds    float64     `json:"closeSeconds"`
	RecordsPerSec   float64     `json:"recordsPerSec"`
	ValueMBPerSec   float64     `json:"valueMBPerSec"`
	BatchMBPerSec   float64     `json:"batchMBPerSec"`
	LatencyMs       perfLatency `json:"latencyMs"`
	latencies       perfSamples // every batch's, for LatencyMs
	elapsed         time.Duration
}

// perfLatency is the acknowledgement latency of a batch in ms.
type perfLatency struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// runPerfProduce opens the store (creating a temporary one without
// --dir), runs the producers and prints the report.
func runPerfProduce(ctx context.Context, o *perfProduceOptions) (err error) {
	rep := &perfProduceReport{
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
	runErr := produce(ctx, o, p, rep)
	closing := time.Now()
	closeErr := store.Close()
	rep.CloseSeconds = time.Since(closing).Seconds()
	if err := errors.Join(runErr, closeErr); err != nil {
		return err
	}
	rep.finish()
	return writePerfReport(o.stdout, o.json, rep, rep.text)
}

// perfProducer is one producer's state and what it measured.
type perfProducer struct {
	id         int64
	seq        int32
	bld        recordbatch.Builder
	buf        []byte
	records    int64
	batches    int64
	batchBytes int64
	latencies  perfSamples
}

// produce runs the producers on p and fills in rep's counts and
// latencies. It stops at the first error, or when ctx is done.
func produce(ctx context.Context, o *perfProduceOptions, p *logstore.Partition, rep *perfProduceReport) error {
	firstID, err := perfFirstProducerID(p, o.producers)
	if err != nil {
		return err
	}
	value := make([]byte, o.recordSize)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = 'A' + byte(rnd.IntN(26))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		claimed atomic.Int64 // records handed out to producers
		win     perfWindow
		wg      sync.WaitGroup
	)
	stopProgress := startProgress(o.stderr, o.progress, &win, func(w perfWindowStats, d time.Duration) string {
		return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec of values), %.2f ms avg latency, %.2f ms max latency (per batch)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.records)*float64(o.recordSize)/perfMB, d), w.avgMs(), ms(w.latMax))
	})
	producers := make([]perfProducer, o.producers)
	errs := make([]error, o.producers)
	start := time.Now()
	for i := range producers {
		pr := &producers[i]
		pr.id = firstID + int64(i)
		wg.Go(func() {
			for runCtx.Err() == nil {
				first := claimed.Add(o.perBatch) - o.perBatch
				if first >= o.records {
					return
				}
				n := min(o.perBatch, o.records-first)
				if errs[i] = pr.send(p, o.codec, value, n, &win); errs[i] != nil {
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	rep.elapsed = time.Since(start)
	stopProgress()
	for i := range producers {
		pr := &producers[i]
		rep.Records += pr.records
		rep.Batches += pr.batches
		rep.BatchBytes += pr.batchBytes
		rep.latencies = append(rep.latencies, pr.latencies...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (%d of %d records were acknowledged before)", err, rep.Records, o.records)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d records", rep.Records, o.records)
	}
	return nil
}

// send builds a batch of n records, appends it and records the latency.
func (pr *perfProducer) send(p *logstore.Partition, codec recordbatch.Codec, value []byte, n int64, win *perfWindow) error {
	pr.bld.Reset(0)
	pr.bld.Compression = codec
	pr.bld.ProducerID = pr.id
	pr.bld.ProducerEpoch = 0
	pr.bld.BaseSequence = pr.seq
	ts := time.Now().UnixMilli()
	for range n {
		if err := pr.bld.Append(ts, nil, value, nil); err != nil {
			return err
		}
	}
	var err error
	if pr.buf, err = pr.bld.AppendTo(pr.buf[:0]); err != nil {
		return err
	}
	start := time.Now()
	res, err := p.Append(pr.buf)
	lat := time.Since(start)
	switch {
	case err != nil:
		return fmt.Errorf("producer %d, batch of %d records at sequence %d: %w", pr.id, n, pr.seq, err)
	case res.Duplicate:
		return fmt.Errorf("producer %d, batch of %d records at sequence %d: the store answered DUPLICATE (offsets %d to %d) and wrote nothing",
			pr.id, n, pr.seq, res.BaseOffset, res.LastOffset)
	}
	pr.seq = recordbatch.IncrementSequence(pr.seq, int32(n))
	pr.records += n
	pr.batches++
	pr.batchBytes += int64(len(pr.buf))
	pr.latencies = append(pr.latencies, lat)
	win.add(n, int64(len(pr.buf)), lat)
	return nil
}

// perfFirstProducerID is the first of n producer ids that the partition
// does not remember, so that every producer may start at sequence 0.
func perfFirstProducerID(p *logstore.Partition, n int) (int64, error) {
	known := p.ProducerSnapshot().Producers // sorted by id
	if len(known) == 0 {
		return 0, nil
	}
	last := known[len(known)-1].ProducerID
	if last > 1<<63-1-int64(n) {
		return 0, fmt.Errorf("partition %s remembers producer id %d: no %d ids above it are free", p.ID(), last, n)
	}
	return last + 1, nil
}

// finish derives the rates and latency figures from the counts.
func (r *perfProduceReport) finish() {
	r.ValueBytes = r.Records * int64(r.RecordSize)
	r.ElapsedSeconds = r.elapsed.Seconds()
	r.RecordsPerSec = perSecond(float64(r.Records), r.elapsed)
	r.ValueMBPerSec = perSecond(float64(r.ValueBytes)/perfMB, r.elapsed)
	r.BatchMBPerSec = perSecond(float64(r.BatchBytes)/perfMB, r.elapsed)
	l := r.latencies
	slices.Sort(l)
	r.LatencyMs = perfLatency{
		Avg:  l.avgMs(),
		P50:  ms(l.percentile(500)),
		P99:  ms(l.percentile(990)),
		P999: ms(l.percentile(999)),
		Max:  ms(l.percentile(1000)),
	}
}

func (r *perfProduceReport) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "records      %d sent by %d producers in %d batches of up to %d records (%d-byte values, compression %s, sync %s)\n",
		r.Records, r.Producers, r.Batches, r.RecordsPerBatch, r.RecordSize, r.Compression, r.Sync)
	store := r.Dir
	if r.TemporaryDir {
		store += " (temporary, removed)"
	}
	fmt.Fprintf(&b, "store        %s, partition %s-%d\n", store, r.Topic, r.Partition)
	fmt.Fprintf(&b, "elapsed      %.3f s, first append to last acknowledgement (closing the store took %.3f s more)\n", r.ElapsedSeconds, r.CloseSeconds)
	fmt.Fprintf(&b, "throughput   %.1f records/s, %.2f MB/s of record values, %.2f MB/s of batch bytes (MB = 2^20 bytes)\n",
		r.RecordsPerSec, r.ValueMBPerSec, r.BatchMBPerSec)
	l := r.LatencyMs
	fmt.Fprintf(&b, "ack latency  avg %.3f ms, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (per batch, call to Append to its return)\n",
		l.Avg, l.P50, l.P99, l.P999, l.Max)
	return b.String()
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

	stdout   io.Writer
	stderr   io.Writer
	where    string        // the command path, for notices on stderr
	progress time.Duration // progress lines on stderr this often; 0 for none
}

func newPerfConsumeCommand() *cobra.Command {
	opts := &perfConsumeOptions{partitionFlags: newPartitionFlags(), maxBytes: defaultPerfReadBytes}
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

Exit status: 0 when the partition was read to its end; 1 for bad flags,
a store or partition that does not exist or cannot be opened, an offset
outside the log, or a batch that cannot be read.`,
		Example: `  logstore perf produce --records 200000 --record-size 100 --dir perf-data
  logstore perf consume --dir perf-data
  logstore perf consume --dir perf-data --shallow --max-bytes 4194304 --json`,
		Args: inspectNoArgs("name the partition with --dir, --topic and --partition"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.fromSet = cmd.Flags().Changed("from")
			opts.stdout, opts.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.where = cmd.CommandPath()
			if isTerminal(opts.stderr) {
				opts.progress = time.Second
			}
			return runPerfConsume(opts)
		},
	}
	cmd.Flags().SortFlags = false
	opts.addTo(cmd)
	f := cmd.Flags()
	f.Int64Var(&opts.from, "from", 0, "first offset to read (default the log start)")
	f.IntVar(&opts.maxBytes, "max-bytes", opts.maxBytes, "bytes to ask the partition for per read")
	f.BoolVar(&opts.shallow, "shallow", false, "parse batch headers only: no CRC check, no decompression, no record decoding")
	f.BoolVar(&opts.json, "json", false, "print the report as one JSON object")
	return cmd
}

// perfConsumeReport is what consume measured; its fields are the --json
// object.
type perfConsumeReport struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	From           int64   `json:"from"`
	End            int64   `json:"end"`
	Shallow        bool    `json:"shallow"`
	Bytes          int64   `json:"bytes"`
	Batches        int64   `json:"batches"`
	Records        int64   `json:"records"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	MBPerSec       float64 `json:"MBPerSec"`
	RecordsPerSec  float64 `json:"recordsPerSec"`
}

func runPerfConsume(o *perfConsumeOptions) (err error) {
	if o.maxBytes <= 0 || o.maxBytes > maxPerfReadBytes {
		return fmt.Errorf("--max-bytes %d: must be from 1 to %d", o.maxBytes, maxPerfReadBytes)
	}
	store, p, err := o.open(logstore.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	reportRecovery(o.stderr, o.where, p)

	off, err := startingOffset(p, "--from", o.from, o.fromSet)
	if err != nil {
		return err
	}
	end := p.EndOffset()
	rep := &perfConsumeReport{Topic: o.topic, Partition: o.partition, From: off, End: end, Shallow: o.shallow}
	var win perfWindow
	stopProgress := startProgress(o.stderr, o.progress, &win, func(w perfWindowStats, d time.Duration) string {
		return fmt.Sprintf("%d records read, %.1f records/sec (%.2f MB/sec)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.bytes)/perfMB, d))
	})
	began := time.Now()
	err = consume(p, off, end, o, rep, &win)
	elapsed := time.Since(began)
	stopProgress()
	if err != nil {
		return err
	}
	rep.ElapsedSeconds = elapsed.Seconds()
	rep.MBPerSec = perSecond(float64(rep.Bytes)/perfMB, elapsed)
	rep.RecordsPerSec = perSecond(float64(rep.Records), elapsed)
	return writePerfReport(o.stdout, o.json, rep, rep.text)
}

// consume reads p from off to end and counts into rep.
func consume(p *logstore.Partition, off, end int64, o *perfConsumeOptions, rep *perfConsumeReport, win *perfWindow) error {
	var rr recordbatch.RecordReader
	for off < end {
		data, err := p.Read(off, o.maxBytes)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("partition %s: reading at offset %d, below the log end %d, returned nothing", p.ID(), off, end)
		}
		rep.Bytes += int64(len(data))
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err == nil && !o.shallow {
				err = b.Validate()
			}
			if err != nil {
				return fmt.Errorf("partition %s: the batch holding offset %d: %w", p.ID(), off, err)
			}
			data = data[b.Size():]
			off = b.LastOffset() + 1
			rep.Batches++
			n := int64(0)
			switch {
			case b.Attributes().Control():
			case o.shallow:
				n = int64(b.NumRecords())
			default:
				if err := rr.Reset(b, 0); err != nil {
					return fmt.Errorf("partition %s: the batch at offsets %d to %d: %w", p.ID(), b.BaseOffset(), b.LastOffset(), err)
				}
				for rr.Next() {
					n++
				}
				if err := rr.Err(); err != nil {
					return fmt.Errorf("partition %s: the batch at offsets %d to %d: %w", p.ID(), b.BaseOffset(), b.LastOffset(), err)
				}
			}
			rep.Records += n
			win.add(n, int64(b.Size()), 0)
		}
	}
	return nil
}

func (r *perfConsumeReport) text() string {
	mode := "every record decoded"
	if r.Shallow {
		mode = "batch headers only"
	}
	return fmt.Sprintf("read         %d bytes, %d batches, %d records of partition %s-%d, offsets %d to %d (%s)\n"+
		"elapsed      %.3f s\n"+
		"throughput   %.2f MB/s, %.1f records/s (MB = 2^20 bytes)\n",
		r.Bytes, r.Batches, r.Records, r.Topic, r.Partition, r.From, r.End-1, mode,
		r.ElapsedSeconds, r.MBPerSec, r.RecordsPerSec)
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

// perfSamples are latencies; percentile wants them sorted.
type perfSamples []time.Duration

// percentile returns the perMille/10 percentile of sorted samples by
// nearest rank: the smallest sample that at least that share of samples
// do not exceed (1000 is the max). It is 0 for no samples.
func (s perfSamples) percentile(perMille int64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	rank := (perMille*int64(len(s)) + 999) / 1000 // ceil, from 1
	return s[min(max(rank, 1), int64(len(s)))-1]
}

func (s perfSamples) avgMs() float64 {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return ms(sum) / float64(len(s))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perSecond is n per d, 0 when d is not above zero.
func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// perfWindow sums what happened since the last progress line.
type perfWindow struct {
	mu sync.Mutex
	w  perfWindowStats
}

type perfWindowStats struct {
	records, bytes, batches int64
	latSum, latMax          time.Duration
}

func (w perfWindowStats) avgMs() float64 {
	if w.batches == 0 {
		return 0
	}
	return ms(w.latSum) / float64(w.batches)
}

func (pw *perfWindow) add(records, bytes int64, lat time.Duration) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.w.records += records
	pw.w.bytes += bytes
	pw.w.batches++
	pw.w.latSum += lat
	pw.w.latMax = max(pw.w.latMax, lat)
}

// take returns the sums and starts a new window.
func (pw *perfWindow) take() perfWindowStats {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w := pw.w
	pw.w = perfWindowStats{}
	return w
}

// startProgress prints line(window, its duration) on w every `every`
// until the returned stop is called; with every 0 it prints nothing.
func startProgress(w io.Writer, every time.Duration, win *perfWindow, line func(perfWindowStats, time.Duration) string) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				fmt.Fprintln(w, line(win.take(), now.Sub(last)))
				last = now
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// isTerminal reports whether w is a character device, as a terminal is
// (so is /dev/null, where progress lines do no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
