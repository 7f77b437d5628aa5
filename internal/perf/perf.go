// Package perf measures a Partition as kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh measure a cluster: Produce appends
// generated records from idempotent producers and measures throughput and
// the acknowledgement latency of every batch (exact percentiles, nearest
// rank); Consume reads a partition to its end and measures throughput.
// Both can print a line of the last interval's figures as they go. It is
// the engine of `logstore perf`; the command parses flags, opens the
// store and prints the reports.
package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

const (
	// MB is a megabyte as Kafka's perf tools count it.
	MB = 1 << 20
	// MaxBatches bounds a Produce run, which keeps the latency of every
	// batch (8 bytes each) for exact percentiles.
	MaxBatches = 50_000_000
)

// ProduceConfig is the workload of a Produce run.
type ProduceConfig struct {
	Records    int64             // records to send, above zero
	RecordSize int               // value bytes of each record, 1 to MaxRecordSize
	PerBatch   int64             // records per batch, RecordsPerBatch of the batch size
	Producers  int               // producers sending at once, sharing the records
	Codec      recordbatch.Codec // of the batches

	// Progress gets a line of the last interval's figures every
	// ProgressEvery; nothing when it is nil or ProgressEvery is 0.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// ConsumeConfig is how a Consume run reads.
type ConsumeConfig struct {
	MaxBytes int  // asked of the partition per read
	Shallow  bool // parse batch headers only: no CRC check, no decompression, no record decoding

	// Progress gets a line of the last interval's figures every
	// ProgressEvery; nothing when it is nil or ProgressEvery is 0.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// recordBytes is the size in a batch of one record as Produce builds
// it: null key, the value, no headers, timestamp delta 0 (a batch's
// records share one timestamp), at offsetDelta.
func recordBytes(valueSize int, offsetDelta int64) int {
	body := 1 + 1 + varintLen(offsetDelta) + 1 + varintLen(int64(valueSize)) + valueSize + 1
	return varintLen(int64(body)) + body
}

// varintLen is the size of v as a zig-zag varint, the encoding of Kafka's
// record fields and of binary.PutVarint.
func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// RecordsPerBatch is how many records of valueSize bytes fit in a
// batch of batchSize bytes, uncompressed, and at least one.
func RecordsPerBatch(valueSize, batchSize int) int64 {
	size, n := recordbatch.HeaderSize+recordBytes(valueSize, 0), int64(1)
	for {
		next := size + recordBytes(valueSize, n)
		if next > batchSize {
			return n
		}
		size, n = next, n+1
	}
}

// FitsBatch says whether one record of valueSize bytes fits in a batch of
// batchSize bytes, uncompressed.
func FitsBatch(valueSize, batchSize int) bool {
	return recordbatch.HeaderSize+recordBytes(valueSize, 0) <= batchSize
}

// MaxRecordSize is the largest value a one-record batch can carry
// within the store's batch limit.
func MaxRecordSize() int {
	s := segment.DefaultMaxBatchBytes - recordbatch.HeaderSize
	for recordbatch.HeaderSize+recordBytes(s, 0) > segment.DefaultMaxBatchBytes {
		s--
	}
	return s
}

// ProduceReport is what Produce measured; its fields are the --json
// object.
type ProduceReport struct {
	Records         int64   `json:"records"`
	Batches         int64   `json:"batches"`
	Producers       int     `json:"producers"`
	RecordsPerBatch int64   `json:"recordsPerBatch"`
	RecordSize      int     `json:"recordSize"`
	BatchSize       int     `json:"batchSize"`
	Compression     string  `json:"compression"`
	Sync            string  `json:"sync"`
	Dir             string  `json:"dir"`
	TemporaryDir    bool    `json:"temporaryDir"`
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Bootstrap       string  `json:"bootstrap,omitempty"` // over the wire (ProduceWire): the broker
	Acks            string  `json:"acks,omitempty"`      // over the wire: all, 1 or 0
	LingerMs        float64 `json:"lingerMs,omitempty"`  // over the wire: kgo's linger
	ValueBytes      int64   `json:"valueBytes"`
	BatchBytes      int64   `json:"batchBytes"`
	ElapsedSeconds  float64 `json:"elapsedSeconds"`
	CloseSeconds    float64 `json:"closeSeconds"`
	RecordsPerSec   float64 `json:"recordsPerSec"`
	ValueMBPerSec   float64 `json:"valueMBPerSec"`
	BatchMBPerSec   float64 `json:"batchMBPerSec"`
	LatencyMs       Latency `json:"latencyMs"`
	latencies       samples // every batch's, for LatencyMs
	elapsed         time.Duration
}

// Latency is the acknowledgement latency of a batch in ms.
type Latency struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// producer is one producer's state and what it measured.
type producer struct {
	id         int64
	seq        int32
	bld        recordbatch.Builder
	buf        []byte
	records    int64
	batches    int64
	batchBytes int64
	latencies  samples
}

// Produce runs cfg.Producers producers on p and fills in rep's counts and
// latencies; Finish derives the rest. It stops at the first error, or
// when ctx is done.
func Produce(ctx context.Context, p *logstore.Partition, cfg ProduceConfig, rep *ProduceReport) error {
	firstID, err := firstProducerID(p, cfg.Producers)
	if err != nil {
		return err
	}
	value := randomValue(cfg.RecordSize)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		claimed atomic.Int64 // records handed out to producers
		win     window
		wg      sync.WaitGroup
	)
	stopProgress := startProgress(cfg.Progress, cfg.ProgressEvery, &win, func(w windowStats, d time.Duration) string {
		return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec of values), %.2f ms avg latency, %.2f ms max latency (per batch)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.records)*float64(cfg.RecordSize)/MB, d), w.avgMs(), ms(w.latMax))
	})
	producers := make([]producer, cfg.Producers)
	errs := make([]error, cfg.Producers)
	start := time.Now()
	for i := range producers {
		pr := &producers[i]
		pr.id = firstID + int64(i)
		wg.Go(func() {
			for runCtx.Err() == nil {
				first := claimed.Add(cfg.PerBatch) - cfg.PerBatch
				if first >= cfg.Records {
					return
				}
				n := min(cfg.PerBatch, cfg.Records-first)
				if errs[i] = pr.send(p, cfg.Codec, value, n, &win); errs[i] != nil {
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
		return fmt.Errorf("%w (%d of %d records were acknowledged before)", err, rep.Records, cfg.Records)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d records", rep.Records, cfg.Records)
	}
	return nil
}

// randomValue is a record value of size random letters A-Z, the same on
// every run, as Kafka's producer perf test sends them.
func randomValue(size int) []byte {
	value := make([]byte, size)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = 'A' + byte(rnd.IntN(26))
	}
	return value
}

// send builds a batch of n records, appends it and records the latency.
func (pr *producer) send(p *logstore.Partition, codec recordbatch.Codec, value []byte, n int64, win *window) error {
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

// firstProducerID is the first of n producer ids that the partition
// does not remember, so that every producer may start at sequence 0.
func firstProducerID(p *logstore.Partition, n int) (int64, error) {
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
func (r *ProduceReport) Finish() {
	r.ValueBytes = r.Records * int64(r.RecordSize)
	r.ElapsedSeconds = r.elapsed.Seconds()
	r.RecordsPerSec = perSecond(float64(r.Records), r.elapsed)
	r.ValueMBPerSec = perSecond(float64(r.ValueBytes)/MB, r.elapsed)
	r.BatchMBPerSec = perSecond(float64(r.BatchBytes)/MB, r.elapsed)
	l := r.latencies
	slices.Sort(l)
	r.LatencyMs = Latency{
		Avg:  l.avgMs(),
		P50:  ms(l.percentile(500)),
		P99:  ms(l.percentile(990)),
		P999: ms(l.percentile(999)),
		Max:  ms(l.percentile(1000)),
	}
}

func (r *ProduceReport) Text() string {
	if r.Bootstrap != "" {
		return r.wireText()
	}
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

// ConsumeReport is what Consume measured; its fields are the --json
// object.
type ConsumeReport struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Bootstrap      string  `json:"bootstrap,omitempty"` // over the wire (ConsumeWire): the broker
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

// Consume reads p from offset from to end, cfg.MaxBytes at a time, and
// fills in rep's counts and rates.
func Consume(ctx context.Context, p *logstore.Partition, from, end int64, cfg ConsumeConfig, rep *ConsumeReport) error {
	var win window
	stopProgress := startProgress(cfg.Progress, cfg.ProgressEvery, &win, func(w windowStats, d time.Duration) string {
		return fmt.Sprintf("%d records read, %.1f records/sec (%.2f MB/sec)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.bytes)/MB, d))
	})
	began := time.Now()
	err := consume(ctx, p, from, end, cfg, rep, &win)
	elapsed := time.Since(began)
	stopProgress()
	if err != nil {
		return err
	}
	rep.ElapsedSeconds = elapsed.Seconds()
	rep.MBPerSec = perSecond(float64(rep.Bytes)/MB, elapsed)
	rep.RecordsPerSec = perSecond(float64(rep.Records), elapsed)
	return nil
}

// consume reads p from off to end and counts into rep. The end of ctx
// (a signal, in the command) stops it between reads, with ctx's cause.
func consume(ctx context.Context, p *logstore.Partition, off, end int64, cfg ConsumeConfig, rep *ConsumeReport, win *window) error {
	var rr recordbatch.RecordReader
	for off < end {
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %d records, at offset %d of %d", context.Cause(ctx), rep.Records, off, end)
		}
		data, err := p.Read(off, cfg.MaxBytes)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("partition %s: reading at offset %d, below the log end %d, returned nothing", p.ID(), off, end)
		}
		rep.Bytes += int64(len(data))
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err == nil && !cfg.Shallow {
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
			case cfg.Shallow:
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

func (r *ConsumeReport) Text() string {
	mode := "every record decoded"
	if r.Bootstrap != "" {
		mode = "fetched from " + r.Bootstrap + " by a kgo consumer"
	}
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

// samples are latencies; percentile wants them sorted.
type samples []time.Duration

// percentile returns the perMille/10 percentile of sorted samples by
// nearest rank: the smallest sample that at least that share of samples
// do not exceed (1000 is the max). It is 0 for no samples.
func (s samples) percentile(perMille int64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	rank := (perMille*int64(len(s)) + 999) / 1000 // ceil, from 1
	return s[min(max(rank, 1), int64(len(s)))-1]
}

func (s samples) avgMs() float64 {
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

// window sums what happened since the last progress line.
type window struct {
	mu sync.Mutex
	w  windowStats
}

type windowStats struct {
	records, bytes, batches int64
	latSum, latMax          time.Duration
}

func (w windowStats) avgMs() float64 {
	if w.batches == 0 {
		return 0
	}
	return ms(w.latSum) / float64(w.batches)
}

func (pw *window) add(records, bytes int64, lat time.Duration) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.w.records += records
	pw.w.bytes += bytes
	pw.w.batches++
	pw.w.latSum += lat
	pw.w.latMax = max(pw.w.latMax, lat)
}

// take returns the sums and starts a new window.
func (pw *window) take() windowStats {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w := pw.w
	pw.w = windowStats{}
	return w
}

// startProgress prints line(window, its duration) on w every `every`
// until the returned stop is called; with no w or every 0 it prints
// nothing.
func startProgress(w io.Writer, every time.Duration, win *window, line func(windowStats, time.Duration) string) (stop func()) {
	if w == nil || every <= 0 {
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
