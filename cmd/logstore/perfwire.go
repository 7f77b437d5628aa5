package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/perf"
	"github.com/logstore/logstore/segment"
)

// `logstore perf produce|consume --bootstrap host:port`: the same
// workloads and reports, sent to a running broker with franz-go's kgo
// instead of appended in process (internal/perf's ProduceWire and
// ConsumeWire).

// Defaults and limits of perf over the wire.
const (
	defaultPerfLinger      = 10 * time.Millisecond // kgo's default
	maxPerfLinger          = time.Minute           // kgo's limit
	minPerfBatchBytes      = 512                   // kgo's limit
	defaultPerfWireTimeout = 10 * time.Second      // kafka-consumer-perf-test.sh's --timeout
)

// storeOnlyFlags are the flags that say how to open a store in process,
// which mean nothing with --bootstrap (the server's own flags decide).
var storeOnlyFlags = []string{"sync", "dir", "producer-expiry", "max-producers", "lock-timeout", "shallow"}

// wireOnlyFlags are the flags of a run over the wire alone.
var wireOnlyFlags = []string{"acks", "linger", "partitions", "timeout", "tls-ca-file"}

// wireTLS is --tls-ca-file: dial the broker with TLS, verifying its
// certificate against the CAs of the file (an SSL listener of serve).
type wireTLS struct{ caFile string }

func (w *wireTLS) register(f *pflag.FlagSet) {
	f.StringVar(&w.caFile, "tls-ca-file", "", "with --bootstrap: dial with TLS, verifying the broker's certificate against the PEM CAs of `FILE`")
}

// opts are the kgo options of the flag: none without it.
func (w *wireTLS) opts() ([]kgo.Opt, error) {
	if w.caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(w.caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate in it", w.caFile)
	}
	return []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})}, nil
}

// checkModeFlags refuses the flags of the other mode: with --bootstrap
// the store's, without it the wire's.
func checkModeFlags(f *pflag.FlagSet, wire bool) error {
	names, why := wireOnlyFlags, "needs --bootstrap (it is about a run over the wire)"
	if wire {
		names, why = storeOnlyFlags, "is not for a run with --bootstrap: the server's own flags decide it"
	}
	for _, name := range names {
		if f.Lookup(name) != nil && f.Changed(name) {
			return fmt.Errorf("--%s %s", name, why)
		}
	}
	return nil
}

// batchBytesAlias lets --batch-bytes name --batch-size (kgo calls it
// ProducerBatchMaxBytes).
func batchBytesAlias(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "batch-bytes" {
		name = "batch-size"
	}
	return pflag.NormalizedName(name)
}

// parseAcks reads --acks: all (or -1), 1 or 0.
func parseAcks(s string) (int16, error) {
	switch s {
	case "all", "-1":
		return -1, nil
	case "1":
		return 1, nil
	case "0":
		return 0, nil
	}
	return 0, fmt.Errorf("--acks %q: want all (or -1), 1 or 0", s)
}

// splitBootstrap reads --bootstrap: host:port[,host:port...].
func splitBootstrap(s string) ([]string, error) {
	var seeds []string
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if hp == "" || !strings.Contains(hp, ":") {
			return nil, fmt.Errorf("--bootstrap %q: want host:port, or several separated by commas", s)
		}
		seeds = append(seeds, hp)
	}
	return seeds, nil
}

// runPerfProduceWire checks the flags of a run over the wire, runs it
// and prints the report.
func runPerfProduceWire(ctx context.Context, o *perfProduceOptions) error {
	seeds, err := splitBootstrap(o.bootstrap)
	if err != nil {
		return err
	}
	maxSize := perf.MaxRecordSize()
	switch {
	case o.records <= 0 || o.records > perf.MaxWireRecords:
		return fmt.Errorf("--records %d: must be from 1 to %d with --bootstrap (the run keeps every record's latency for exact percentiles)", o.records, perf.MaxWireRecords)
	case o.recordSize <= 0 || o.recordSize > maxSize:
		return fmt.Errorf("--record-size %d: must be from 1 to %d (one record must fit in a batch of %d bytes)", o.recordSize, maxSize, segment.DefaultMaxBatchBytes)
	case o.batchSize < minPerfBatchBytes || o.batchSize > segment.DefaultMaxBatchBytes:
		return fmt.Errorf("--batch-size %d: must be from %d to %d with --bootstrap", o.batchSize, minPerfBatchBytes, segment.DefaultMaxBatchBytes)
	case o.producers <= 0 || o.producers > maxPerfProducers:
		return fmt.Errorf("--producers %d: must be from 1 to %d", o.producers, maxPerfProducers)
	case o.linger < 0 || o.linger > maxPerfLinger:
		return fmt.Errorf("--linger %s: must be from 0 to %s", o.linger, maxPerfLinger)
	case o.partitions <= 0:
		return fmt.Errorf("--partitions %d: must be above zero", o.partitions)
	}
	if !perf.FitsBatch(o.recordSize, o.batchSize) {
		return fmt.Errorf("--record-size %d: a record of that size does not fit in a batch of --batch-size %d bytes", o.recordSize, o.batchSize)
	}
	if err := checkPartitionFlags(o.topic, o.partition); err != nil {
		return err
	}
	acks, err := parseAcks(o.acks)
	if err != nil {
		return err
	}
	codec, err := jsonl.ParseCodec(o.compression)
	if err != nil {
		return fmt.Errorf("--compression: %w", err)
	}
	tlsOpts, err := o.tls.opts()
	if err != nil {
		return err
	}
	rep := &perf.ProduceReport{
		Producers: o.producers, RecordSize: o.recordSize, BatchSize: o.batchSize, Compression: codec.String(),
		Topic: o.topic, Partition: o.partition, Bootstrap: strings.Join(seeds, ","), Acks: perf.AcksName(acks),
		LingerMs: float64(o.linger) / float64(time.Millisecond),
	}
	err = perf.ProduceWire(ctx, perf.WireProduceConfig{
		Bootstrap: seeds, Topic: o.topic, Partition: o.partition, Partitions: o.partitions,
		Records: o.records, RecordSize: o.recordSize, Producers: o.producers,
		BatchBytes: int32(o.batchSize), Linger: o.linger, Acks: acks, Codec: codec,
		Opts: tlsOpts, Progress: o.stderr, ProgressEvery: o.progress,
	}, rep)
	if err := withInterruption(ctx, err); err != nil {
		return err
	}
	rep.Finish()
	return writePerfReport(o.stdout, o.json, rep, rep.Text)
}

// runPerfConsumeWire checks the flags of a run over the wire, runs it and
// prints the report.
func runPerfConsumeWire(ctx context.Context, o *perfConsumeOptions) error {
	seeds, err := splitBootstrap(o.bootstrap)
	if err != nil {
		return err
	}
	switch {
	case o.maxBytes <= 0 || o.maxBytes > maxPerfReadBytes:
		return fmt.Errorf("--max-bytes %d: must be from 1 to %d", o.maxBytes, maxPerfReadBytes)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout %s: must be above zero", o.timeout)
	case o.fromSet && o.from < 0:
		return fmt.Errorf("--from %d: must be 0 or more", o.from)
	}
	if err := (logstore.PartitionID{Topic: o.topic, Partition: o.partition}).Validate(); err != nil {
		return err
	}
	from := int64(-1)
	if o.fromSet {
		from = o.from
	}
	tlsOpts, err := o.tls.opts()
	if err != nil {
		return err
	}
	rep := &perf.ConsumeReport{Topic: o.topic, Partition: o.partition, Bootstrap: strings.Join(seeds, ",")}
	err = perf.ConsumeWire(ctx, perf.WireConsumeConfig{
		Bootstrap: seeds, Topic: o.topic, Partition: o.partition, From: from,
		FetchMaxBytes: int32(o.maxBytes), Timeout: o.timeout,
		Opts: tlsOpts, Progress: o.stderr, ProgressEvery: o.progress,
	}, rep)
	if err := withInterruption(ctx, err); err != nil {
		return err
	}
	return writePerfReport(o.stdout, o.json, rep, rep.Text)
}
