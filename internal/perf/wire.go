package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/recordbatch"
)

// MaxWireRecords bounds a ProduceWire run, which keeps the latency of
// every record (8 bytes each) for exact percentiles.
const MaxWireRecords = 50_000_000

// setupTimeout bounds each request ProduceWire and ConsumeWire send before
// they start measuring (metadata, topic creation, offsets), so a broker
// that does not answer ends the run with an error instead of a hang.
const setupTimeout = 30 * time.Second

// WireProduceConfig is the workload of a ProduceWire run: what
// kafka-producer-perf-test.sh would send, from franz-go's kgo clients.
type WireProduceConfig struct {
	Bootstrap  []string // seed brokers, host:port
	Topic      string
	Partition  int32 // every record goes to this partition
	Partitions int32 // of the topic when the run has to create it

	Records    int64             // records to send, above zero
	RecordSize int               // value bytes of each record, above zero
	Producers  int               // kgo clients sending at once, sharing the records
	BatchBytes int32             // kgo's ProducerBatchMaxBytes, Kafka's batch.size
	Linger     time.Duration     // kgo's ProducerLinger, Kafka's linger.ms
	Acks       int16             // -1 (all; idempotent), 1 or 0 (not idempotent: kgo's idempotence needs acks=all)
	Codec      recordbatch.Codec // of the batches

	// Opts are more options for every client (a logger, a dialer).
	Opts []kgo.Opt

	// Progress gets a line of the last interval's figures every
	// ProgressEvery; nothing when it is nil or ProgressEvery is 0.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// WireConsumeConfig is how a ConsumeWire run reads: one kgo consumer,
// reading one partition directly (no group), as
// kafka-consumer-perf-test.sh reads a topic.
type WireConsumeConfig struct {
	Bootstrap []string
	Topic     string
	Partition int32
	From      int64 // first offset; below zero: the log start

	FetchMaxBytes int32         // kgo's FetchMaxBytes and FetchMaxPartitionBytes
	Timeout       time.Duration // longest wait for the next record before giving up

	Opts          []kgo.Opt
	Progress      io.Writer
	ProgressEvery time.Duration
}

// AcksName is Kafka's name of an acks setting.
func AcksName(acks int16) string {
	if acks == -1 {
		return "all"
	}
	return fmt.Sprint(acks)
}

// kgoCodec is codec as kgo names it.
func kgoCodec(c recordbatch.Codec) (kgo.CompressionCodec, error) {
	switch c {
	case recordbatch.CodecNone:
		return kgo.NoCompression(), nil
	case recordbatch.CodecGzip:
		return kgo.GzipCompression(), nil
	case recordbatch.CodecSnappy:
		return kgo.SnappyCompression(), nil
	case recordbatch.CodecLZ4:
		return kgo.Lz4Compression(), nil
	case recordbatch.CodecZstd:
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %s: kgo has no such codec", c)
}

// timedRecord is a record and the time Produce was called for it. It is
// its own record's Context (the run's, embedded), which is how the
// promise finds the start time: one allocation per record. It is not
// pooled: kgo may still read a record's Context (waiting for an unknown
// topic) in a goroutine whose end does not order before the promise's
// return, so a reused one raced with that read.
type timedRecord struct {
	context.Context
	start time.Time
	rec   kgo.Record
}

// batchCounter counts the batches a client wrote or read, and their bytes
// as they travel (header included), through kgo's hooks.
type batchCounter struct {
	batches, bytes atomic.Int64
}

func (c *batchCounter) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	c.batches.Add(1)
	c.bytes.Add(int64(m.CompressedBytes + recordbatch.HeaderSize))
}

func (c *batchCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.batches.Add(1)
	c.bytes.Add(int64(m.CompressedBytes + recordbatch.HeaderSize))
}

// wireProducer is one kgo client's state and what it measured.
type wireProducer struct {
	cl        *kgo.Client
	counter   batchCounter
	mu        sync.Mutex
	records   int64
	latencies samples
	err       error // the first record that failed
}

// ProduceWire sends cfg.Records records to a broker from cfg.Producers
// kgo clients and fills in rep's counts and latencies (one latency per
// record: Produce called to its promise, as kafka-producer-perf-test.sh
// measures from send to callback); Finish derives the rest. The topic is
// created when the broker does not know it. It stops at the first record
// that fails, or when ctx is done.
func ProduceWire(ctx context.Context, cfg WireProduceConfig, rep *ProduceReport) error {
	codec, err := kgoCodec(cfg.Codec)
	if err != nil {
		return err
	}
	if err := ensureTopic(ctx, cfg.Bootstrap, cfg.Opts, cfg.Topic, cfg.Partition, cfg.Partitions); err != nil {
		return err
	}
	value := randomValue(cfg.RecordSize)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	producers := make([]*wireProducer, cfg.Producers)
	for i := range producers {
		pr := &wireProducer{}
		opts := []kgo.Opt{
			kgo.SeedBrokers(cfg.Bootstrap...),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchMaxBytes(cfg.BatchBytes),
			kgo.ProducerLinger(cfg.Linger),
			kgo.ProducerBatchCompression(codec),
			kgo.WithHooks(&pr.counter),
		}
		switch cfg.Acks {
		case -1:
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.StopProducerOnDataLossDetected())
		case 1:
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		case 0:
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		default:
			return fmt.Errorf("acks %d: want -1 (all), 0 or 1", cfg.Acks)
		}
		if pr.cl, err = kgo.NewClient(append(opts, cfg.Opts...)...); err != nil {
			for _, p := range producers[:i] {
				p.cl.Close()
			}
			return fmt.Errorf("producer %d: %w", i, err)
		}
		producers[i] = pr
	}
	defer func() {
		for _, pr := range producers {
			pr.cl.Close()
		}
	}()

	var (
		claimed atomic.Int64 // records handed out to producers
		win     window
		wg      sync.WaitGroup
	)
	valueMB := float64(cfg.RecordSize) / MB
	stopProgress := startProgress(cfg.Progress, cfg.ProgressEvery, &win, func(w windowStats, d time.Duration) string {
		return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec of values), %.2f ms avg latency, %.2f ms max latency (per record)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.records)*valueMB, d), w.avgMs(), ms(w.latMax))
	})
	// chunk is how many records a producer claims at a time: few enough
	// that the producers end together, enough that they rarely meet on
	// the counter.
	chunk := min(max(cfg.Records/int64(16*cfg.Producers), 1), 1000)
	start := time.Now()
	for _, pr := range producers {
		promise := func(r *kgo.Record, err error) {
			tr := r.Context.(*timedRecord)
			lat := time.Since(tr.start)
			pr.mu.Lock()
			if err != nil {
				if pr.err == nil {
					pr.err = fmt.Errorf("record at partition %s-%d: %w", cfg.Topic, cfg.Partition, err)
				}
				pr.mu.Unlock()
				cancel()
				return
			}
			pr.records++
			pr.latencies = append(pr.latencies, lat)
			pr.mu.Unlock()
			win.add(1, int64(cfg.RecordSize), lat)
		}
		wg.Go(func() {
			defer pr.cl.Flush(context.WithoutCancel(runCtx)) // every promise called
			for runCtx.Err() == nil {
				first := claimed.Add(chunk) - chunk
				if first >= cfg.Records {
					return
				}
				for range min(chunk, cfg.Records-first) {
					tr := &timedRecord{Context: runCtx}
					tr.rec = kgo.Record{Topic: cfg.Topic, Partition: cfg.Partition, Value: value, Context: tr}
					tr.start = time.Now()
					pr.cl.Produce(runCtx, &tr.rec, promise)
				}
			}
		})
	}
	wg.Wait()
	rep.elapsed = time.Since(start)
	stopProgress()
	var errs []error
	for _, pr := range producers {
		rep.Records += pr.records
		rep.Batches += pr.counter.batches.Load()
		rep.BatchBytes += pr.counter.bytes.Load()
		rep.latencies = append(rep.latencies, pr.latencies...)
		if pr.err != nil && !errors.Is(pr.err, context.Canceled) {
			errs = append(errs, pr.err)
		}
	}
	if rep.Batches > 0 {
		rep.RecordsPerBatch = (rep.Records + rep.Batches - 1) / rep.Batches
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w (%d of %d records were acknowledged)", err, rep.Records, cfg.Records)
	}
	if ctx.Err() != nil || rep.Records != cfg.Records {
		return fmt.Errorf("interrupted after %d of %d records", rep.Records, cfg.Records)
	}
	return nil
}

// ensureTopic checks that the broker has topic with partition, and
// creates the topic (partitions of it, at least partition+1, replication
// factor the broker's default) when the broker does not know it.
func ensureTopic(ctx context.Context, bootstrap []string, opts []kgo.Opt, topic string, partition, partitions int32) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap...)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	n, err := topicPartitions(ctx, cl, topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32(setupTimeout / time.Millisecond)
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = topic
		t.NumPartitions = max(partitions, partition+1)
		t.ReplicationFactor = -1
		req.Topics = append(req.Topics, t)
		resp, cerr := req.RequestWith(ctx, cl)
		if cerr != nil {
			return fmt.Errorf("creating topic %q at %s: %w", topic, strings.Join(bootstrap, ","), cerr)
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("creating topic %q at %s: the broker answered for %d topics", topic, strings.Join(bootstrap, ","), len(resp.Topics))
		}
		if cerr := kerr.ErrorForCode(resp.Topics[0].ErrorCode); cerr != nil && !errors.Is(cerr, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %q at %s: %w", topic, strings.Join(bootstrap, ","), cerr)
		}
		n, err = topicPartitions(ctx, cl, topic)
	}
	if err != nil {
		return err
	}
	if partition < 0 || partition >= n {
		return fmt.Errorf("topic %q has %d partitions: there is no partition %d", topic, n, partition)
	}
	return nil
}

// topicPartitions asks the broker how many partitions topic has.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("metadata of topic %q: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return 0, fmt.Errorf("metadata of topic %q: %w", topic, err)
		}
		return int32(len(rt.Partitions)), nil
	}
	return 0, fmt.Errorf("metadata of topic %q: %w", topic, kerr.UnknownTopicOrPartition)
}

// listOffset asks the broker for an offset of a partition: ts -2 is the
// log start, -1 the end (the high watermark).
func listOffset(ctx context.Context, cl *kgo.Client, topic string, partition int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = partition
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("offsets of partition %s-%d: %w", topic, partition, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic != topic || rp.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return 0, fmt.Errorf("offsets of partition %s-%d: %w", topic, partition, err)
			}
			return rp.Offset, nil
		}
	}
	return 0, fmt.Errorf("offsets of partition %s-%d: the broker did not answer for it", topic, partition)
}

// ConsumeWire reads a partition from cfg.From (or its start) to the end
// the broker gave when the run began, with one kgo consumer, and fills in
// rep's counts and rates. Bytes and batches are those of the batches kgo
// fetched (header included, compressed as sent), records those handed to
// the application (not transaction markers).
func ConsumeWire(ctx context.Context, cfg WireConsumeConfig, rep *ConsumeReport) error {
	seeds := kgo.SeedBrokers(cfg.Bootstrap...)
	admin, err := kgo.NewClient(append([]kgo.Opt{seeds}, cfg.Opts...)...)
	if err != nil {
		return err
	}
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	logStart, err := listOffset(setup, admin, cfg.Topic, cfg.Partition, -2)
	var end int64
	if err == nil {
		end, err = listOffset(setup, admin, cfg.Topic, cfg.Partition, -1)
	}
	cancel()
	admin.Close()
	if err != nil {
		return err
	}
	from := cfg.From
	if from < 0 {
		from = logStart
	}
	if from < logStart || from > end {
		return fmt.Errorf("offset %d is outside partition %s-%d, which holds offsets %d to %d", from, cfg.Topic, cfg.Partition, logStart, end-1)
	}
	rep.From, rep.End = from, end

	var counter batchCounter
	cl, err := kgo.NewClient(append([]kgo.Opt{seeds,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {cfg.Partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(cfg.FetchMaxBytes),
		kgo.WithHooks(&counter),
	}, cfg.Opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var win window
	stopProgress := startProgress(cfg.Progress, cfg.ProgressEvery, &win, func(w windowStats, d time.Duration) string {
		return fmt.Sprintf("%d records read, %.1f records/sec (%.2f MB/sec of values)",
			w.records, perSecond(float64(w.records), d), perSecond(float64(w.bytes)/MB, d))
	})
	began := time.Now()
	next := from
	for next < end {
		pollCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		fetches := cl.PollFetches(pollCtx)
		timedOut := pollCtx.Err() != nil
		cancel()
		var fetchErr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = err
			}
		})
		if fetchErr != nil {
			stopProgress()
			return fmt.Errorf("partition %s-%d, fetching at offset %d: %w", cfg.Topic, cfg.Partition, next, fetchErr)
		}
		var records, values int64
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset < end {
				records++
				values += int64(len(r.Value))
				next = r.Offset + 1
			}
		})
		rep.Records += records
		win.add(records, values, 0)
		if records == 0 && timedOut {
			stopProgress()
			if ctx.Err() != nil {
				return fmt.Errorf("%w after %d records, at offset %d of %d", context.Cause(ctx), rep.Records, next, end)
			}
			return fmt.Errorf("partition %s-%d: no record came for %s at offset %d (the end is %d)", cfg.Topic, cfg.Partition, cfg.Timeout, next, end)
		}
	}
	elapsed := time.Since(began)
	stopProgress()
	rep.Batches = counter.batches.Load()
	rep.Bytes = counter.bytes.Load()
	rep.ElapsedSeconds = elapsed.Seconds()
	rep.MBPerSec = perSecond(float64(rep.Bytes)/MB, elapsed)
	rep.RecordsPerSec = perSecond(float64(rep.Records), elapsed)
	return nil
}

// wireText is Text for a ProduceWire run.
func (r *ProduceReport) wireText() string {
	var b strings.Builder
	idem := "idempotent"
	if r.Acks != "all" {
		idem = "not idempotent"
	}
	fmt.Fprintf(&b, "records      %d sent by %d kgo clients (%s, acks=%s) in %d batches of %d records on average (%d-byte values, compression %s, batches up to %d bytes, linger %g ms)\n",
		r.Records, r.Producers, idem, r.Acks, r.Batches, r.RecordsPerBatch, r.RecordSize, r.Compression, r.BatchSize, r.LingerMs)
	fmt.Fprintf(&b, "broker       %s, partition %s-%d\n", r.Bootstrap, r.Topic, r.Partition)
	fmt.Fprintf(&b, "elapsed      %.3f s, first Produce to last acknowledgement\n", r.ElapsedSeconds)
	fmt.Fprintf(&b, "throughput   %.1f records/s, %.2f MB/s of record values, %.2f MB/s of batch bytes (MB = 2^20 bytes)\n",
		r.RecordsPerSec, r.ValueMBPerSec, r.BatchMBPerSec)
	l := r.LatencyMs
	fmt.Fprintf(&b, "ack latency  avg %.3f ms, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (per record, Produce to its acknowledgement)\n",
		l.Avg, l.P50, l.P99, l.P999, l.Max)
	return b.String()
}
