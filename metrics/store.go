package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore"
)

// storeMetrics are the metrics the store's events feed.
type storeMetrics struct {
	fsyncSeconds    prometheus.Histogram
	fsyncBatches    prometheus.Histogram
	fsyncBytes      prometheus.Counter
	fsyncErrors     prometheus.Counter
	rolls           prometheus.Counter
	snapshotSeconds prometheus.Histogram
	snapshotErrors  prometheus.Counter
	openSeconds     prometheus.Histogram
	opens           *prometheus.CounterVec
	openClean       prometheus.Counter
	openRecovered   prometheus.Counter
	openFailed      prometheus.Counter
	scannedBatches  prometheus.Counter
	scannedBytes    prometheus.Counter
	truncatedBytes  prometheus.Counter
	replayed        prometheus.Counter
	snapsLoaded     prometheus.Counter
	snapsSkipped    prometheus.Counter
	evictions       prometheus.Counter
}

func (s *storeMetrics) init() {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	s.fsyncSeconds = histogram("logstore_fsync_duration_seconds", "Group-commit fsyncs of partition logs: how long the appends they covered waited for the disk.", fsyncBuckets)
	s.fsyncBatches = histogram("logstore_fsync_batches", "Batches each group-commit fsync made durable (batches per group commit).", batchBuckets)
	s.fsyncBytes = counter("logstore_fsync_bytes_total", "Bytes the group-commit fsyncs made durable.")
	s.fsyncErrors = counter("logstore_fsync_errors_total", "Failed fsyncs of partition logs (each poisons its partition).")
	s.rolls = counter("logstore_segment_rolls_total", "Segment rolls.")
	s.snapshotSeconds = histogram("logstore_snapshot_save_duration_seconds", "Producer-state snapshot saves (at each roll and clean close).", fsyncBuckets)
	s.snapshotErrors = counter("logstore_snapshot_save_errors_total", "Failed producer-state snapshot saves.")
	s.openSeconds = histogram("logstore_partition_open_duration_seconds", "Partition opens: log recovery, snapshot load and replay.", openBuckets)
	s.opens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_partition_opens_total",
		Help: "Partition opens by how the log was found: clean, recovered (scanned after a crash), failed.",
	}, []string{"recovery"})
	s.openClean = s.opens.WithLabelValues("clean")
	s.openRecovered = s.opens.WithLabelValues("recovered")
	s.openFailed = s.opens.WithLabelValues("failed")
	s.scannedBatches = counter("logstore_recovery_scanned_batches_total", "Batches the recovery scans after a crash found valid.")
	s.scannedBytes = counter("logstore_recovery_scanned_bytes_total", "Bytes of the batches the recovery scans after a crash found valid.")
	s.truncatedBytes = counter("logstore_recovery_truncated_bytes_total", "Bytes the recovery scans cut off torn log tails.")
	s.replayed = counter("logstore_recovery_replayed_batches_total", "Batches replayed into the producer state at open, after the snapshot loaded.")
	s.snapsLoaded = counter("logstore_recovery_snapshots_loaded_total", "Partition opens that loaded a producer-state snapshot.")
	s.snapsSkipped = counter("logstore_recovery_snapshots_skipped_total", "Corrupt producer-state snapshots skipped at open.")
	s.evictions = counter("logstore_partition_evictions_total", "Partitions closed, idle, to keep the bound of open partitions (max open partitions).")
}

func (s *storeMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(s.fsyncSeconds, s.fsyncBatches, s.fsyncBytes, s.fsyncErrors, s.rolls,
		s.snapshotSeconds, s.snapshotErrors, s.openSeconds, s.opens,
		s.scannedBatches, s.scannedBytes, s.truncatedBytes, s.replayed, s.snapsLoaded, s.snapsSkipped, s.evictions)
}

// StoreEvents returns the hooks to set as logstore.Options.Events, which
// feed the store's metrics. Nil for a nil *Metrics.
func (m *Metrics) StoreEvents() *logstore.Events {
	if m == nil {
		return nil
	}
	s := &m.store
	return &logstore.Events{
		Sync: func(e logstore.SyncEvent) {
			if e.Err != nil {
				s.fsyncErrors.Inc()
				return
			}
			s.fsyncSeconds.Observe(e.Duration.Seconds())
			s.fsyncBatches.Observe(float64(e.Batches))
			s.fsyncBytes.Add(float64(e.Bytes))
		},
		Roll: func(logstore.RollEvent) { s.rolls.Inc() },
		SnapshotSave: func(e logstore.SnapshotEvent) {
			if e.Err != nil {
				s.snapshotErrors.Inc()
				return
			}
			s.snapshotSeconds.Observe(e.Duration.Seconds())
		},
		PartitionOpen:  s.opened,
		PartitionEvict: func(logstore.PartitionID, error) { s.evictions.Inc() },
	}
}

func (s *storeMetrics) opened(e logstore.OpenEvent) {
	if e.Err != nil {
		s.openFailed.Inc()
		return
	}
	s.openSeconds.Observe(e.Duration.Seconds())
	r, st := e.Recovery, e.Startup
	if r.Clean {
		s.openClean.Inc()
	} else {
		s.openRecovered.Inc()
	}
	s.scannedBatches.Add(float64(r.ScannedBatches))
	s.scannedBytes.Add(float64(r.ScannedBytes))
	s.truncatedBytes.Add(float64(r.TruncatedBytes))
	s.replayed.Add(float64(st.ReplayedBatches))
	if st.SnapshotOffset >= 0 {
		s.snapsLoaded.Inc()
	}
	s.snapsSkipped.Add(float64(len(st.SkippedSnapshots)))
}

// WatchStore makes each scrape read the open partitions of store: how
// many, and each one's producers, log start and end offsets, and LSO
// lag. A later
// call replaces the store; nil stops.
func (m *Metrics) WatchStore(store *logstore.Store) {
	if m != nil {
		m.watched.Store(store)
	}
}

var (
	partitionsOpenDesc = prometheus.NewDesc("logstore_partitions_open", "Partitions open.", nil, nil)
	producersDesc      = prometheus.NewDesc("logstore_partition_producers", "Idempotent producers the partition remembers.", []string{"topic", "partition"}, nil)
	startOffsetDesc    = prometheus.NewDesc("logstore_partition_log_start_offset", "First offset still in the partition's log.", []string{"topic", "partition"}, nil)
	endOffsetDesc      = prometheus.NewDesc("logstore_partition_log_end_offset", "Offset the partition's next batch will get.", []string{"topic", "partition"}, nil)
	lsoLagDesc         = prometheus.NewDesc("logstore_partition_lso_lag_offsets", "High watermark minus last stable offset: the offsets a read_committed consumer cannot read yet because a transaction is open.", []string{"topic", "partition"}, nil)
)

// partitionCollector reads the watched store at scrape time.
type partitionCollector struct{ m *Metrics }

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- partitionsOpenDesc
	ch <- producersDesc
	ch <- startOffsetDesc
	ch <- endOffsetDesc
	ch <- lsoLagDesc
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	store := c.m.watched.Load()
	if store == nil {
		return
	}
	parts := store.OpenPartitions()
	ch <- prometheus.MustNewConstMetric(partitionsOpenDesc, prometheus.GaugeValue, float64(len(parts)))
	for _, p := range parts {
		id := p.ID()
		topic, part := id.Topic, strconv.FormatInt(int64(id.Partition), 10)
		ch <- prometheus.MustNewConstMetric(producersDesc, prometheus.GaugeValue, float64(p.Producers()), topic, part)
		ch <- prometheus.MustNewConstMetric(startOffsetDesc, prometheus.GaugeValue, float64(p.StartOffset()), topic, part)
		ch <- prometheus.MustNewConstMetric(endOffsetDesc, prometheus.GaugeValue, float64(p.EndOffset()), topic, part)
		// The LSO first: it is at most the high watermark of its
		// moment, which only grows.
		lso := p.LastStableOffset()
		ch <- prometheus.MustNewConstMetric(lsoLagDesc, prometheus.GaugeValue, float64(p.DurableEnd()-lso), topic, part)
	}
}
