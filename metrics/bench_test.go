package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore/metrics"
)

// BenchmarkRequest is the cost the server pays per request: a latency
// observation and a counter, by API and code.
func BenchmarkRequest(b *testing.B) {
	m := metrics.New(prometheus.NewRegistry())
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Request(int16(i&1), 0, 1500*time.Microsecond)
	}
}

// BenchmarkRequestParallel is BenchmarkRequest from every core at once,
// on the same series (the worst case: one hot API).
func BenchmarkRequestParallel(b *testing.B) {
	m := metrics.New(prometheus.NewRegistry())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(0, 0, 1500*time.Microsecond)
		}
	})
}

// BenchmarkProduceBatch is the cost per produced batch.
func BenchmarkProduceBatch(b *testing.B) {
	m := metrics.New(prometheus.NewRegistry())
	b.ReportAllocs()
	for b.Loop() {
		m.ProduceBatch(metrics.OutcomeOK)
		m.BytesIn(16 << 10)
	}
}

// BenchmarkRequestByLabels is what Request would cost looking its series
// up by label values each time (client_golang's plain way), for
// comparison with BenchmarkRequest's cached series.
func BenchmarkRequestByLabels(b *testing.B) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total"}, []string{"api", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "request_duration_seconds"}, []string{"api"})
	reg.MustRegister(requests, latency)
	apis := []string{"Produce", "Fetch"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		api := apis[i&1]
		latency.WithLabelValues(api).Observe(0.0015)
		requests.WithLabelValues(api, "0").Inc()
	}
}
