package kafkaserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/recordbatch"
)

// kcatTimeout bounds each kcat run, so that a server that stops answering
// fails the test instead of hanging it; it asserts nothing about speed.
const kcatTimeout = 2 * time.Minute

// kcatPath is kcat's path, or skips the test: CI installs it (.ci/run),
// elsewhere it may be absent.
func kcatPath(t *testing.T) string {
	t.Helper()
	path, err := kafkaclients.Kcat()
	if err != nil {
		t.Skipf("%v (.ci/run installs it): skipping the librdkafka client test", err)
	}
	return path
}

// kcatServer serves a new store in dir on a loopback port, with topics
// created on first use as kcat's producer expects. stop shuts the server
// down and closes the store (the cleanup calls it too, once).
func kcatServer(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	store, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testLogWriter{t}, nil))
	srv, err := kafkaserver.New(store, kafkaserver.Config{AutoCreateTopics: true, Logger: logger})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		store.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if err := <-served; !errors.Is(err, kafkaserver.ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
			if err := store.Close(); err != nil {
				t.Errorf("closing the store: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// testLogWriter writes the server's log lines to the test's log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// kcat runs kcat with args and stdin, and returns its stdout; a failure
// or anything on stderr but kcat's notices fails the test.
func kcat(t *testing.T, path, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || strings.Contains(errb.String(), "failed") || strings.Contains(errb.String(), "ERROR") {
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// TestKcatClient: kcat (librdkafka, not Go) produces idempotently to the
// server with keys, in two runs (the second lz4-compressed), and consumes
// the partition back: every record once, in order, at consecutive
// offsets from 0, with its key; in the store, the batches carry the two
// runs' producer ids, each with sequences from 0. kcat -L lists the one
// broker and the topic it leads.
func TestKcatClient(t *testing.T) {
	path := kcatPath(t)
	dir := t.TempDir()
	addr, stop := kcatServer(t, dir)
	const topic, n = "kcat", 500
	var first, second strings.Builder
	var want []string
	for i := range n {
		b := &first
		if i >= n/2 {
			b = &second
		}
		fmt.Fprintf(b, "key-%d:value-%d\n", i, i)
		want = append(want, fmt.Sprintf("%d|key-%d|value-%d", i, i, i))
	}
	produce := []string{"-P", "-b", addr, "-t", topic, "-p", "0", "-K:", "-X", "enable.idempotence=true"}
	kcat(t, path, first.String(), produce...)
	kcat(t, path, second.String(), append(produce, "-z", "lz4")...)

	got := strings.Split(strings.TrimSuffix(kcat(t, path, "", "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", `%o|%k|%s\n`), "\n"), "\n")
	if len(got) != n {
		t.Errorf("kcat consumed %d records, want %d", len(got), n)
	}
	for i := range min(len(got), n) {
		if got[i] != want[i] {
			t.Fatalf("record %d: kcat consumed %q, want %q", i, got[i], want[i])
		}
	}

	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	out := kcat(t, path, "", "-L", "-J", "-b", addr, "-t", topic)
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != addr || len(md.Topics) != 1 || md.Topics[0].Topic != topic ||
		md.Topics[0].Error != "" || len(md.Topics[0].Partitions) != 1 || md.Topics[0].Partitions[0].Leader != md.Brokers[0].ID {
		t.Errorf("kcat -L: want one broker at %s leading the one partition of %q:\n%s", addr, topic, out)
	}

	// The store, read directly once the server is gone: kcat's batches
	// carry a producer id (enable.idempotence) and, per producer,
	// sequences that run on from 0.
	stop()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := store.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int64]int32{}
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatalf("the batch holding offset %d: %v", off, err)
			}
			if !b.HasProducerID() || b.BaseSequence() != next[b.ProducerID()] {
				t.Errorf("batch at offset %d: producer id %d, sequence %d; want kcat's producer id, sequence %d",
					b.BaseOffset(), b.ProducerID(), b.BaseSequence(), next[b.ProducerID()])
			}
			next[b.ProducerID()] = b.LastSequence() + 1
			off, data = b.LastOffset()+1, data[b.Size():]
		}
	}
	if len(next) != 2 {
		t.Errorf("the partition holds batches of %d producers, want 2 (one per kcat run)", len(next))
	}
}
