package metrics_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/recordbatch"
)

// sample returns the value of the metric name with exactly labels (as
// "k=v" pairs) in g: a counter's or gauge's value, a histogram's sample
// count. It fails the test when there is none.
func sample(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, ok := find(t, g, name, labels...)
	if !ok {
		t.Fatalf("no sample %s%v", name, labels)
	}
	return v
}

// histSum returns the sum of the histogram name.
func histSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	for _, m := range family(t, g, name) {
		return m.GetHistogram().GetSampleSum()
	}
	t.Fatalf("no histogram %s", name)
	return 0
}

func family(t *testing.T, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func find(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	for _, m := range family(t, g, name) {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// producerBatch builds an idempotent client batch of n records.
func producerBatch(pid int64, epoch int16, seq int32, n int) []byte {
	b := recordbatch.NewBuilder(0)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	for i := range n {
		if err := b.Append(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "p%d-e%d-s%d-%d", pid, epoch, seq, i), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

func openStore(t *testing.T, dir string, m *metrics.Metrics) *logstore.Store {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{SegmentBytes: 1024, Events: m.StoreEvents()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m.WatchStore(s)
	return s
}

func countLogs(t *testing.T, dir string) int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(logs)
}

// TestStoreMetrics: appends that roll segments, on a real store, show in
// the fsync, group-commit, roll, snapshot and open metrics, and the
// scrape-time gauges read the open partitions; a reopen after a kill
// shows the recovery figures.
func TestStoreMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	dir := t.TempDir()
	s := openStore(t, dir, m)
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	const batches = 40
	var bytes int
	seq := map[int64]int32{}
	for i := range batches {
		pid := int64(1 + i%3)
		b := producerBatch(pid, 0, seq[pid], 3)
		seq[pid] += 3
		bytes += len(b)
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}

	pdir := filepath.Join(dir, "events-0")
	rolls := countLogs(t, pdir) - 1
	if rolls < 3 {
		t.Fatalf("%d rolls; the test needs several", rolls)
	}
	fsyncs := sample(t, reg, "logstore_fsync_duration_seconds")
	if fsyncs < 1 || fsyncs > batches {
		t.Fatalf("%v fsyncs for %d appends", fsyncs, batches)
	}
	if n := sample(t, reg, "logstore_fsync_batches"); n != fsyncs {
		t.Fatalf("%v group-commit sizes observed for %v fsyncs", n, fsyncs)
	}
	if sum := histSum(t, reg, "logstore_fsync_batches"); sum != batches {
		t.Fatalf("group commits covered %v batches, %d appended", sum, batches)
	}
	for name, want := range map[string]float64{
		"logstore_fsync_bytes_total":               float64(bytes),
		"logstore_fsync_errors_total":              0,
		"logstore_segment_rolls_total":             float64(rolls),
		"logstore_snapshot_save_duration_seconds":  float64(rolls),
		"logstore_snapshot_save_errors_total":      0,
		"logstore_partition_open_duration_seconds": 1,
		"logstore_partitions_open":                 1,
	} {
		if got := sample(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]float64{
		"logstore_partition_producers":        3,
		"logstore_partition_log_start_offset": 0,
		"logstore_partition_log_end_offset":   float64(p.EndOffset()),
	} {
		if got := sample(t, reg, name, "partition=0", "topic=events"); got != want {
			t.Errorf("%s{events-0} = %v, want %v", name, got, want)
		}
	}

	// A kill: a copy of the open store, with the last segment's batches
	// after the roll's snapshot and no clean mark.
	killed := t.TempDir()
	if err := os.CopyFS(killed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sample(t, reg, "logstore_snapshot_save_duration_seconds"); got != float64(rolls+1) {
		t.Errorf("%v snapshot saves after %d rolls and a close", got, rolls)
	}

	reg2 := prometheus.NewRegistry()
	m2 := metrics.New(reg2)
	s2 := openStore(t, killed, m2)
	if _, err := s2.Partition("events", 0); err != nil {
		t.Fatal(err)
	}
	scanned := sample(t, reg2, "logstore_recovery_scanned_batches_total")
	if got := sample(t, reg2, "logstore_partition_opens_total", "recovery=recovered"); got != 1 {
		t.Errorf("recovered opens %v, want 1", got)
	}
	if scanned < 1 || sample(t, reg2, "logstore_recovery_scanned_bytes_total") < scanned*61 {
		t.Errorf("recovery scanned %v batches, %v bytes", scanned, sample(t, reg2, "logstore_recovery_scanned_bytes_total"))
	}
	if got := sample(t, reg2, "logstore_recovery_replayed_batches_total"); got != scanned {
		t.Errorf("replayed %v batches after the roll's snapshot, scanned %v", got, scanned)
	}
	if got := sample(t, reg2, "logstore_recovery_snapshots_loaded_total"); got != 1 {
		t.Errorf("snapshots loaded %v, want 1", got)
	}
	if got := sample(t, reg2, "logstore_partition_producers", "partition=0", "topic=events"); got != 3 {
		t.Errorf("producers after recovery %v, want 3", got)
	}
	if problems, err := testutil.GatherAndLint(reg2); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// TestProduceOutcomes: each outcome of a real append, classified by
// OutcomeOf and counted by ProduceBatch, lands in its own series, and
// every series exists from the start.
func TestProduceOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	for o := metrics.OutcomeOK; o <= metrics.OutcomeUnknownTopic; o++ {
		if got := sample(t, reg, "logstore_produce_batches_total", "outcome="+o.String()); got != 0 {
			t.Fatalf("%s starts at %v", o, got)
		}
	}
	s, err := logstore.Open(t.TempDir(), logstore.Options{MaxMessageBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := producerBatch(9, 0, 0, 1)
	corrupt[len(corrupt)-1] ^= 0xff
	steps := []struct {
		batch []byte
		want  metrics.Outcome
	}{
		{producerBatch(1, 0, 0, 1), metrics.OutcomeOK},
		{producerBatch(1, 0, 0, 1), metrics.OutcomeDuplicate},
		{producerBatch(1, 0, 5, 1), metrics.OutcomeOutOfOrder},
		{producerBatch(2, 0, 7, 1), metrics.OutcomeUnknownProducer},
		{producerBatch(1, 1, 0, 1), metrics.OutcomeOK},
		{producerBatch(1, 0, 1, 1), metrics.OutcomeFenced},
		{corrupt, metrics.OutcomeInvalid},
		{producerBatch(3, 0, 0, 20), metrics.OutcomeTooLarge},
	}
	for i, st := range steps {
		res, err := p.Append(st.batch)
		got := metrics.OutcomeOf(res, err)
		if got != st.want {
			t.Fatalf("step %d: %s (%v), want %s", i, got, err, st.want)
		}
		m.ProduceBatch(got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = p.Append(producerBatch(1, 1, 1, 1))
	if got := metrics.OutcomeOf(logstore.AppendResult{}, err); got != metrics.OutcomeFailed {
		t.Fatalf("append to a closed partition: %s (%v), want failed", got, err)
	}
	m.ProduceBatch(metrics.OutcomeFailed)
	m.ProduceBatch(metrics.Outcome(200)) // ignored
	if got := metrics.OutcomeOf(logstore.AppendResult{}, errors.New("other")); got != metrics.OutcomeFailed {
		t.Fatalf("a plain error: %s", got)
	}
	if got := m.ProduceBatches(metrics.OutcomeOK); got != 2 {
		t.Errorf("ProduceBatches(ok) = %v, want 2", got)
	}
	if got := m.ProduceBatches(metrics.OutcomeDuplicate); got != 1 {
		t.Errorf("ProduceBatches(duplicate) = %v, want 1", got)
	}
	want := map[string]float64{"ok": 2, "duplicate": 1, "out_of_order": 1, "unknown_producer": 1, "fenced": 1, "invalid": 1, "too_large": 1, "failed": 1}
	for o, n := range want {
		if got := sample(t, reg, "logstore_produce_batches_total", "outcome="+o); got != n {
			t.Errorf("outcome %s: %v, want %v", o, got, n)
		}
	}
}

// TestRequests: requests are counted by API name and code, latencies by
// API; keys and codes outside the cached ranges are counted too.
func TestRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	for range 3 {
		m.Request(0, 0, 2*time.Millisecond)
	}
	m.Request(0, 59, time.Millisecond)
	m.Request(18, 0, 50*time.Microsecond)
	m.Request(1, -1, time.Second)
	m.Request(1, 1000, time.Second)
	m.Request(999, 35, 0)
	m.Request(-4, 35, 0)
	m.Request(22, 0, time.Millisecond)
	m.BytesIn(100)
	m.BytesIn(28)
	m.BytesOut(64)
	m.ConnectionOpened()
	m.ConnectionOpened()
	m.ConnectionClosed()
	for _, c := range []struct {
		api, code string
		want      float64
	}{
		{"Produce", "0", 3}, {"Produce", "59", 1}, {"ApiVersions", "0", 1},
		{"Fetch", "-1", 1}, {"Fetch", "1000", 1}, {"Unknown", "35", 2}, {"InitProducerId", "0", 1},
	} {
		if got := sample(t, reg, "logstore_requests_total", "api="+c.api, "code="+c.code); got != c.want {
			t.Errorf("requests{%s,%s} = %v, want %v", c.api, c.code, got, c.want)
		}
	}
	for api, want := range map[string]float64{"Produce": 4, "ApiVersions": 1, "Fetch": 2, "Unknown": 2} {
		if got := sample(t, reg, "logstore_request_duration_seconds", "api="+api); got != want {
			t.Errorf("latency{%s} count %v, want %v", api, got, want)
		}
	}
	for name, want := range map[string]float64{"logstore_received_bytes_total": 128, "logstore_sent_bytes_total": 64, "logstore_connections": 1} {
		if got := sample(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// TestNilMetrics: a nil *Metrics records nothing and never panics.
func TestNilMetrics(t *testing.T) {
	var m *metrics.Metrics
	m.Request(0, 0, time.Millisecond)
	m.ProduceBatch(metrics.OutcomeOK)
	m.BytesIn(1)
	m.BytesOut(1)
	m.ConnectionOpened()
	m.ConnectionClosed()
	m.WatchStore(nil)
	if n := m.ProduceBatches(metrics.OutcomeDuplicate); n != 0 {
		t.Fatalf("ProduceBatches of nil: %v", n)
	}
	m.TransactionalIDExpired()
	if n := m.TransactionalIDsExpired(); n != 0 {
		t.Fatalf("TransactionalIDsExpired of nil: %v", n)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("Handler of nil answered %d", rec.Code)
	}
	if ev := m.StoreEvents(); ev != nil {
		t.Fatalf("StoreEvents of nil: %v", ev)
	}
}

// TestHandler: Handler serves the registry in Prometheus's text format,
// the duplicates series included before any duplicate, and New(nil)
// brings the Go and process metrics.
func TestHandler(t *testing.T) {
	m := metrics.New(nil)
	m.Request(3, 0, time.Millisecond)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %v", resp.StatusCode, err)
	}
	for _, want := range []string{
		`logstore_produce_batches_total{outcome="duplicate"} 0`,
		`logstore_requests_total{api="Metadata",code="0"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestTransactionalIDsExpired: each expired id counts once, exported
// from the start at 0.
func TestTransactionalIDsExpired(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	if got := sample(t, reg, "logstore_transactional_ids_expired_total"); got != 0 {
		t.Fatalf("before any expiry: %v", got)
	}
	m.TransactionalIDExpired()
	m.TransactionalIDExpired()
	if got := sample(t, reg, "logstore_transactional_ids_expired_total"); got != 2 {
		t.Fatalf("after two expiries: %v", got)
	}
	if got := m.TransactionalIDsExpired(); got != 2 {
		t.Fatalf("TransactionalIDsExpired: %v", got)
	}
}
