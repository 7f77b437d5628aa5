package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore/metrics"
)

// TestListen: the endpoint serves /metrics over HTTP, 404 elsewhere, and
// after Shutdown the port is closed.
func TestListen(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	m.ProduceBatch(metrics.OutcomeDuplicate)
	e, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + e.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	code, body := get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, `logstore_produce_batches_total{outcome="duplicate"} 1`) {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Fatalf("GET /: %d, want 404", code)
	}
	http.DefaultClient.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/metrics"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("GET after Shutdown: %v, want connection refused", err)
	}
}

// TestListenBadAddress: an address that cannot be listened on is an
// error, not a panic or a goroutine left behind.
func TestListenBadAddress(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	if _, err := m.Listen("127.0.0.1:notaport"); err == nil {
		t.Fatal("Listen on a bad address succeeded")
	}
}
