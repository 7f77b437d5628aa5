package kafkaserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// TestKgoGracefulRestart: the server and its store are shut down and
// opened again on the same address while a kgo idempotent producer is
// sending; the producer goes on (its retries answered from the producer
// state the store saved and loaded), and every record is in the log
// once, at the offset kgo acknowledged, in order.
func TestKgoGracefulRestart(t *testing.T) {
	dir := t.TempDir()
	addr := "127.0.0.1:0"
	type running struct {
		store *logstore.Store
		srv   *Server
		done  chan error
	}
	start := func() running {
		t.Helper()
		store, err := logstore.Open(dir, logstore.Options{SegmentBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(store, Config{AutoCreateTopics: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		r := running{store, srv, make(chan error, 1)}
		go func() { r.done <- srv.Serve(ln) }()
		return r
	}
	stop := func(r running) {
		t.Helper()
		if err := r.srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-r.done
		if err := r.store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r := start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("restart"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.StopProducerOnDataLossDetected(), kgo.AllowAutoTopicCreation(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 300
	results := make(chan *kgo.Record, n)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}, func(rec *kgo.Record, err error) {
			if err != nil {
				t.Errorf("record %s: %v", rec.Value, err)
			}
			results <- rec
		})
		if i == n/3 || i == 2*n/3 {
			stop(r)
			r = start()
		}
	}
	offsets := make(map[string]int64, n)
	for range n {
		rec := <-results
		offsets[string(rec.Value)] = rec.Offset
	}
	stop(r)

	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := store.Partition("restart", 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.EndOffset(); end != n {
		t.Fatalf("log end %d after %d records", end, n)
	}
	for i := range n {
		if off := offsets[fmt.Sprintf("v%03d", i)]; off != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, off)
		}
	}
}
