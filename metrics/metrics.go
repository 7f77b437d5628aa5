package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// Metrics holds the metrics of a server and its store, registered with
// one registry. Its methods are safe for concurrent use, and do nothing
// on a nil *Metrics.
type Metrics struct {
	gatherer prometheus.Gatherer

	requests *prometheus.CounterVec   // api, code
	latency  *prometheus.HistogramVec // api
	// apis caches, per API key (the last slot for keys outside
	// [0, kmsg.MaxKey]), the latency histogram and the request counters
	// by code, so Request neither hashes labels nor allocates.
	apis   [kmsg.MaxKey + 2]atomic.Pointer[apiMetrics]
	apisMu sync.Mutex // serialises the creation of an apiMetrics

	produce                   [numOutcomes]prometheus.Counter
	received                  prometheus.Counter
	sent                      prometheus.Counter
	conns                     prometheus.Gauge
	connsRefused, budgetWaits prometheus.Counter
	sasl                      *prometheus.CounterVec

	store   storeMetrics
	groups  groupMetrics
	txn     txnMetrics
	configs configMetrics
	// watched is the store the scrape-time collector reads, nil until
	// WatchStore.
	watched atomic.Pointer[logstore.Store]
}

// apiMetrics are the metrics of one API key.
type apiMetrics struct {
	name    string
	latency prometheus.Observer
	// codes holds the request counter of each error code from minCode
	// to maxCode, created on first use; other codes take the slow path.
	codes [maxCode - minCode + 1]atomic.Pointer[counter]
}

type counter struct{ prometheus.Counter }

// The error codes whose counters Request caches: Kafka's run from -1
// (UNKNOWN_SERVER_ERROR) up, about 130 of them today.
const (
	minCode = -1
	maxCode = 254
)

// Buckets, in seconds: request latencies from 100 µs to 3.3 s (a long
// poll and a produce's fsync included), fsyncs and snapshot saves from
// 50 µs to 1.6 s, partition opens from 1 ms to 33 s; batches per group
// commit from 1 to 2048.
var (
	requestBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)
	fsyncBuckets   = prometheus.ExponentialBuckets(0.00005, 2, 16)
	openBuckets    = prometheus.ExponentialBuckets(0.001, 2, 16)
	batchBuckets   = prometheus.ExponentialBuckets(1, 2, 12)
)

// New creates the metrics and registers them with reg. A nil reg means a
// new registry of their own, with the Go runtime's and the process's
// metrics beside them. Handler serves reg when it is also a
// prometheus.Gatherer (a *prometheus.Registry is), and else
// prometheus.DefaultGatherer. New panics, as prometheus.MustRegister
// does, if reg already holds metrics of the same names: that is a
// program's bug, not a condition to handle.
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	m := &Metrics{gatherer: prometheus.DefaultGatherer}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_requests_total",
		Help: "Kafka requests answered, by API and error code (0: none).",
	}, []string{"api", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "logstore_request_duration_seconds",
		Help:    "Time from a Kafka request being read to its response being ready, by API.",
		Buckets: requestBuckets,
	}, []string{"api"})
	produce := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_produce_batches_total",
		Help: "Produced record batches by outcome: ok, duplicate, unknown_producer, out_of_order, fenced, invalid, too_large, open_transaction, failed, unknown_topic.",
	}, []string{"outcome"})
	for o := range numOutcomes {
		m.produce[o] = produce.WithLabelValues(o.String())
	}
	m.received = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_received_bytes_total",
		Help: "Bytes of Kafka request frames read, size prefixes included.",
	})
	m.sent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_sent_bytes_total",
		Help: "Bytes of Kafka response frames written, size prefixes included.",
	})
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "logstore_connections",
		Help: "Kafka client connections open.",
	})
	m.connsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_connections_refused_total",
		Help: "Kafka client connections closed as soon as accepted, over max connections or max connections per ip.",
	})
	m.budgetWaits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_request_budget_waits_total",
		Help: "Request frames whose reading waited for the server's budget of request bytes in flight (queued max request bytes).",
	})
	m.sasl = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_sasl_authentications_total",
		Help: "SASL authentications by mechanism and result (ok, failed).",
	}, []string{"mechanism", "result"})
	m.store.init()
	m.groups.init()
	reg.MustRegister(m.requests, m.latency, produce, m.received, m.sent, m.conns, m.connsRefused, m.budgetWaits, m.sasl, partitionCollector{m})
	m.store.register(reg)
	m.groups.register(reg, m)
	m.txn.register(reg)
	m.configs.register(reg)
	return m
}

// Handler serves the metrics in Prometheus's text (or negotiated)
// format, for /metrics; for a nil *Metrics, a handler that answers 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Request counts one request of API key (Kafka's ApiKey) answered with
// error code code, which took d from its frame being read to its
// response being ready. For a request whose errors are per partition
// (Produce, Fetch, ListOffsets, ...), code is the first non-zero one,
// or 0. It takes no lock and allocates nothing once the key and the
// code have been seen.
func (m *Metrics) Request(key int16, code int16, d time.Duration) {
	if m == nil {
		return
	}
	a := m.api(key)
	a.latency.Observe(d.Seconds())
	m.requestCounter(a, code).Inc()
}

// api returns the metrics of key, creating them on first use.
func (m *Metrics) api(key int16) *apiMetrics {
	i := len(m.apis) - 1
	if key >= 0 && int(key) < i {
		i = int(key)
	}
	if a := m.apis[i].Load(); a != nil {
		return a
	}
	m.apisMu.Lock()
	defer m.apisMu.Unlock()
	if a := m.apis[i].Load(); a != nil {
		return a
	}
	name := "Unknown"
	if i < len(m.apis)-1 {
		name = apiName(key)
	}
	a := &apiMetrics{name: name, latency: m.latency.WithLabelValues(name)}
	m.apis[i].Store(a)
	return a
}

// kafkaNames are Kafka's own names (its ApiMessageType's, as its
// request metrics show them) where kmsg spells an acronym in Go's way.
var kafkaNames = map[string]string{
	"LeaderAndISR":                 "LeaderAndIsr",
	"SASLHandshake":                "SaslHandshake",
	"InitProducerID":               "InitProducerId",
	"DescribeACLs":                 "DescribeAcls",
	"CreateACLs":                   "CreateAcls",
	"DeleteACLs":                   "DeleteAcls",
	"SASLAuthenticate":             "SaslAuthenticate",
	"DescribeUserSCRAMCredentials": "DescribeUserScramCredentials",
	"AlterUserSCRAMCredentials":    "AlterUserScramCredentials",
	"AllocateProducerIDs":          "AllocateProducerIds",
}

// apiName is the name of API key as Kafka spells it, "Unknown" for a key
// kmsg does not know.
func apiName(key int16) string {
	name := kmsg.NameForKey(key)
	if k, ok := kafkaNames[name]; ok {
		return k
	}
	return name
}

// requestCounter returns the request counter of a's API and code.
func (m *Metrics) requestCounter(a *apiMetrics, code int16) prometheus.Counter {
	if code < minCode || code > maxCode {
		return m.requests.WithLabelValues(a.name, strconv.Itoa(int(code)))
	}
	slot := &a.codes[code-minCode]
	if c := slot.Load(); c != nil {
		return c.Counter
	}
	// Two goroutines may both get here: WithLabelValues gives both the
	// same child.
	c := &counter{m.requests.WithLabelValues(a.name, strconv.Itoa(int(code)))}
	slot.Store(c)
	return c.Counter
}

// ProduceBatch counts one produced batch with outcome o (see OutcomeOf).
func (m *Metrics) ProduceBatch(o Outcome) {
	if m == nil || o >= numOutcomes {
		return
	}
	m.produce[o].Inc()
}

// ProduceBatches returns how many batches ProduceBatch has counted with
// outcome o so far: what logstore_produce_batches_total{outcome} shows,
// for a program or a test that checks it without scraping (the
// end-to-end tests assert duplicates this way).
func (m *Metrics) ProduceBatches(o Outcome) float64 {
	if m == nil || o >= numOutcomes {
		return 0
	}
	var d dto.Metric
	if err := m.produce[o].Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}

// BytesIn counts n bytes of request frames read from a client.
func (m *Metrics) BytesIn(n int) {
	if m != nil {
		m.received.Add(float64(n))
	}
}

// BytesOut counts n bytes of response frames written to a client.
func (m *Metrics) BytesOut(n int) {
	if m != nil {
		m.sent.Add(float64(n))
	}
}

// ConnectionOpened counts a client connection accepted;
// ConnectionClosed one closed.
func (m *Metrics) ConnectionOpened() {
	if m != nil {
		m.conns.Inc()
	}
}

// ConnectionRefused counts a connection closed as soon as it was
// accepted, over a connection limit.
func (m *Metrics) ConnectionRefused() {
	if m != nil {
		m.connsRefused.Inc()
	}
}

// SASLAuthentication counts an authentication of mechanism, ok or
// failed.
func (m *Metrics) SASLAuthentication(mechanism string, ok bool) {
	if m != nil {
		result := "failed"
		if ok {
			result = "ok"
		}
		m.sasl.WithLabelValues(mechanism, result).Inc()
	}
}

// RequestBudgetWait counts a reader that waited for the request budget.
func (m *Metrics) RequestBudgetWait() {
	if m != nil {
		m.budgetWaits.Inc()
	}
}

// ConnectionClosed: see ConnectionOpened.
func (m *Metrics) ConnectionClosed() {
	if m != nil {
		m.conns.Dec()
	}
}
