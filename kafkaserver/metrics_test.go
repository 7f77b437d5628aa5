package kafkaserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
)

// scrape GETs url and parses the Prometheus text it answers.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return fams
}

// value is the value of name's series with exactly labels ("k=v", sorted
// by name): a counter's or a gauge's value, a histogram's sample count;
// -1 when there is no such series.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// TestMetricsOverTheWire: a kgo producer (idempotent, acks=all) and a
// raw client that provokes every produce outcome, against a server with
// metrics over a store that reports its events; /metrics, scraped over
// HTTP, counts the requests by API and code, the produce outcomes (the
// duplicate among them), the bytes, the fsyncs and rolls, and the
// producers per partition.
func TestMetricsOverTheWire(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	store, err := logstore.Open(t.TempDir(), logstore.Options{SegmentBytes: 4096, MaxMessageBytes: 2048, Events: m.StoreEvents()})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, store, Config{Metrics: m})
	ts.createTopic("metered", 3)
	ep, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ep.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	url := "http://" + ep.Addr().String() + "/metrics"

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(ts.addr),
		kgo.DefaultProduceTopic("metered"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.StopProducerOnDataLossDetected(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		t.Fatal(err)
	}
	const n = 90
	for i := range n {
		r := &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "value-%03d-%s", i, strings.Repeat("x", 200))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.Close()

	// One of each other outcome, from a raw client.
	c := ts.dial()
	const v = 9
	producePart(t, c, v, -1, "metered", 0, batchOf(7, 0, 0, "a")) // ok
	producePart(t, c, v, -1, "metered", 0, batchOf(7, 0, 0, "a")) // duplicate
	producePart(t, c, v, -1, "metered", 0, batchOf(7, 0, 9, "x")) // out_of_order
	producePart(t, c, v, -1, "metered", 0, batchOf(8, 0, 5, "x")) // unknown_producer
	producePart(t, c, v, -1, "metered", 0, batchOf(7, 1, 0, "b")) // ok
	producePart(t, c, v, -1, "metered", 0, batchOf(7, 0, 1, "x")) // fenced
	producePart(t, c, v, -1, "metered", 0, nil)                   // invalid
	producePart(t, c, v, -1, "nope", 0, batchOf(-1, 0, 0, "x"))   // unknown_topic
	big := strings.Repeat("y", 3000)
	producePart(t, c, v, -1, "metered", 0, batchOf(-1, 0, 0, big)) // too_large

	if got := m.ProduceBatches(metrics.OutcomeDuplicate); got != 1 {
		t.Errorf("ProduceBatches(duplicate) = %v, want 1", got)
	}
	fams := scrape(t, url)
	for outcome, want := range map[string]float64{
		"ok": n + 2, "duplicate": 1, "out_of_order": 1, "unknown_producer": 1, "fenced": 1,
		"invalid": 1, "unknown_topic": 1, "too_large": 1, "failed": 0, "open_transaction": 0,
	} {
		if got := value(fams, "logstore_produce_batches_total", "outcome="+outcome); got != want {
			t.Errorf("produce outcome %s: %v, want %v", outcome, got, want)
		}
	}
	// kgo's produce requests all succeeded; the raw client's carry their
	// first partition error.
	if got := value(fams, "logstore_requests_total", "api=Produce", "code=0"); got != n+3 {
		t.Errorf("Produce requests answered 0: %v, want %d", got, n+3)
	}
	for code, want := range map[int16]float64{errOutOfOrderSequence: 1, errUnknownProducerID: 1, errInvalidProducerEpoch: 1, errInvalidRecord: 1, errUnknownTopicOrPartition: 1, errMessageTooLarge: 1} {
		if got := value(fams, "logstore_requests_total", "api=Produce", fmt.Sprint("code=", code)); got != want {
			t.Errorf("Produce requests answered %d: %v, want %v", code, got, want)
		}
	}
	for _, api := range []string{"ApiVersions", "Metadata", "InitProducerId"} {
		if got := value(fams, "logstore_requests_total", "api="+api, "code=0"); got < 1 {
			t.Errorf("%s requests: %v, want at least 1", api, got)
		}
		if got := value(fams, "logstore_request_duration_seconds", "api="+api); got < 1 {
			t.Errorf("%s latency count: %v", api, got)
		}
	}
	if got := value(fams, "logstore_request_duration_seconds", "api=Produce"); got != n+9 {
		t.Errorf("Produce latency count %v, want %d", got, n+9)
	}
	if in, out := value(fams, "logstore_received_bytes_total"), value(fams, "logstore_sent_bytes_total"); in < n*200 || out < n*50 {
		t.Errorf("bytes in %v, out %v", in, out)
	}
	if got := value(fams, "logstore_connections"); got < 1 {
		t.Errorf("connections %v with the raw client connected", got)
	}
	fsyncs := value(fams, "logstore_fsync_duration_seconds")
	if fsyncs < 1 || value(fams, "logstore_fsync_batches") != fsyncs {
		t.Errorf("fsyncs %v, group commit sizes %v", fsyncs, value(fams, "logstore_fsync_batches"))
	}
	if got := value(fams, "logstore_segment_rolls_total"); got < 1 {
		t.Errorf("segment rolls %v; 90 records of 200 bytes in 4 KiB segments roll", got)
	}
	if got := value(fams, "logstore_partition_opens_total", "recovery=clean") + value(fams, "logstore_partition_opens_total", "recovery=recovered"); got != 3 {
		t.Errorf("partition opens %v, want 3", got)
	}
	if got := value(fams, "logstore_partitions_open"); got != 3 {
		t.Errorf("partitions open %v, want 3", got)
	}
	// Partition 0: kgo's producer and the raw producer 7 (8 was refused).
	if got := value(fams, "logstore_partition_producers", "partition=0", "topic=metered"); got != 2 {
		t.Errorf("producers of metered-0: %v, want 2", got)
	}
	if got := value(fams, "logstore_partition_producers", "partition=1", "topic=metered"); got != 1 {
		t.Errorf("producers of metered-1: %v, want 1", got)
	}
	if got := value(fams, "logstore_partition_log_end_offset", "partition=2", "topic=metered"); got != n/3 {
		t.Errorf("end offset of metered-2: %v, want %d", got, n/3)
	}
}

// TestNoMetrics: a server without metrics serves (every hook is a no-op
// on a nil *metrics.Metrics).
func TestNoMetrics(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	if got := producePart(t, c, 9, -1, "t", 0, batchOf(1, 0, 0, "a")); got.ErrorCode != 0 {
		t.Fatalf("produce without metrics: code %d", got.ErrorCode)
	}
}
