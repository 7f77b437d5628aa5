package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeMetricsListen runs serve in process with --metrics-listen: its
// ready line names the metrics URL; after an idempotent kgo producer's
// records, a scrape over HTTP counts the Produce requests, their ok
// outcomes and the fsyncs; when serve stops, so does the metrics
// listener.
func TestServeMetricsListen(t *testing.T) {
	srv := serveInProcess(t, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--sync", "always")
	m := regexp.MustCompile(`^logstore serve: listening on (\S+), store .+, sync always, metrics on (http://\S+/metrics)\n$`).FindStringSubmatch(srv.ready)
	if m == nil {
		t.Fatalf("ready line %q", srv.ready)
	}
	kafkaAddr, metricsURL := m[1], m[2]

	pctx, pcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer pcancel()
	const n = 20
	produceSync(pctx, t, kafkaAddr, "served", n, srv.stderr)

	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", metricsURL, resp.Status, err)
	}
	text := string(body)
	for _, want := range []string{
		fmt.Sprintf(`logstore_requests_total{api="Produce",code="0"} %d`, n),
		fmt.Sprintf(`logstore_produce_batches_total{outcome="ok"} %d`, n),
		`logstore_produce_batches_total{outcome="duplicate"} 0`,
		`logstore_partitions_open 1`,
		`logstore_partition_producers{partition="0",topic="served"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	fsyncs := regexp.MustCompile(`(?m)^logstore_fsync_duration_seconds_count (\d+)$`).FindStringSubmatch(text)
	if fsyncs == nil || fsyncs[1] == "0" {
		t.Errorf("fsync count %v, want > 0", fsyncs)
	}

	http.DefaultClient.CloseIdleConnections()
	if err := srv.stop(); err != nil {
		t.Fatalf("serve after its context ended: %v; stderr:\n%s", err, srv.stderr.String())
	}
	if _, err := http.Get(metricsURL); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("GET after serve stopped: %v, want connection refused", err)
	}
}

// TestServeMetricsListenRefused: a --metrics-listen that is no host:port
// is a usage error, and one that cannot be listened on stops serve with
// an error naming the flag.
func TestServeMetricsListenRefused(t *testing.T) {
	_, errOut, code := runCLI(t, "serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "nonsense")
	if code == 0 || !strings.Contains(errOut, "--metrics-listen") {
		t.Errorf("--metrics-listen nonsense: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:99999")
	if code == 0 || !strings.Contains(errOut, "--metrics-listen 127.0.0.1:99999") {
		t.Errorf("--metrics-listen on a bad port: exit %d, stderr %q", code, errOut)
	}
}
