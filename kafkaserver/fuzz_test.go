package kafkaserver

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzConn feeds arbitrary bytes to a connection: the server never
// panics (a handler panic would be logged and recovered, which the
// fuzzer would not see, so the log is checked), answers or closes, and
// allocates by the bytes received, not by the sizes they claim (frames
// are bounded at 1 MiB here).
func FuzzConn(f *testing.F) {
	store, err := logstore.Open(f.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	logs := &panicWatch{}
	srv, err := New(store, Config{MaxRequestBytes: 1 << 20, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.cat.CreateTopic("t", 2, nil, false); err != nil {
		f.Fatal(err)
	}
	// Partition 0 holds an aborted transaction and an open one, for the
	// read_committed fetches and DescribeProducers.
	part, err := store.ExistingPartition("t", 0)
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range [][]byte{txnBatchOf(7, 0, 0, "x"), batchOf(-1, 0, 0, "y"), txnBatchOf(8, 0, 0, "z")} {
		if _, err := part.Append(b); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := part.AppendMarker(7, 0, false, 0); err != nil {
		f.Fatal(err)
	}

	seeds := []kmsg.Request{}
	for _, v := range []int16{0, 3, 4} {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = v
		seeds = append(seeds, r)
	}
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 12
	seeds = append(seeds, m)
	seeds = append(seeds, produceReq(9, -1, "t", 0, batchOf(5, 0, 0, "a")), produceReq(3, 1, "t", 1, batchOf(-1, 0, 0, "b")))
	seeds = append(seeds, fetchReq(12, "t", 0, 0, 0, 0), fetchReq(4, "t", 1, 0, 0, 0))
	for _, v := range []int16{4, 12} {
		rc := fetchReq(v, "t", 0, 0, 0, 0)
		rc.IsolationLevel = 1
		lo := listOffsetsReq("t", 0, -1)
		lo.Version, lo.IsolationLevel = min(v, 8), 1
		seeds = append(seeds, rc, lo)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = "t", []int32{0, 1, 2}
	dp.Topics = append(dp.Topics, dpt)
	seeds = append(seeds, dp)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorKeys = []string{"g"}
	seeds = append(seeds, fc)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	seeds = append(seeds, ip)
	seeds = append(seeds, txnSeeds()...)
	seeds = append(seeds, groupSeeds()...)
	for _, r := range seeds {
		f.Add(frame(r, 1))
	}
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 5, 0, 0, 0, 1, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, data []byte) { fuzzConnInput(t, srv, logs, data) })
}

// fuzzConnInput sends data to a new connection of srv, reads what it
// answers until it closes, and fails t if the log says a handler
// panicked.
func fuzzConnInput(t *testing.T, srv *Server, logs *panicWatch, data []byte) {
	client, server := net.Pipe()
	c, err := srv.serveConn(server, ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Long-poll fetches answer at once: a pipelined input of fetches
	// that wait would otherwise hold the connection (and the fuzzer)
	// for their MaxWait.
	c.cancel()
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, client)
		close(drained)
	}()
	client.Write(data)
	client.Close()
	<-drained
	if msg := logs.panicked.Load(); msg != nil {
		t.Fatalf("the server panicked: %s", *msg)
	}
}

// panicWatch is a log sink that keeps only the first line about a
// panic, so a long fuzz run does not grow a log.
type panicWatch struct{ panicked atomic.Pointer[string] }

func (w *panicWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("panic")) {
		s := string(p)
		w.panicked.CompareAndSwap(nil, &s)
	}
	return len(p), nil
}
