package main

import (
	"bufio"
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

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestServeMetricsListen runs serve in process with --metrics-listen: its
// ready line names the metrics URL; after an idempotent kgo producer's
// records, a scrape over HTTP counts the Produce requests, their ok
// outcomes and the fsyncs; when serve stops, so does the metrics
// listener.
func TestServeMetricsListen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	cmd := newServeCommand()
	cmd.SetArgs([]string{"--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--sync", "always"})
	cmd.SetOut(pw)
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	ready, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v; stderr:\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, br)
	m := regexp.MustCompile(`^logstore serve: listening on (\S+), store .+, sync always, metrics on (http://\S+/metrics)\n$`).FindStringSubmatch(ready)
	if m == nil {
		t.Fatalf("ready line %q", ready)
	}
	kafkaAddr, metricsURL := m[1], m[2]

	pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
	defer pcancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic("served"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.StopProducerOnDataLossDetected(), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(pctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v\nstderr:\n%s", i, err, stderr.String())
		}
	}
	cl.Close()

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
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve after its context ended: %v; stderr:\n%s", err, stderr.String())
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
