package kafkaserver

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// testServer is a server on a loopback listener over a store in a
// temporary directory.
type testServer struct {
	t     testing.TB
	store *logstore.Store
	srv   *Server
	addr  string
	logs  *testutil.LockedBuffer
	done  chan error
}

func startServer(t testing.TB, opts logstore.Options, cfg Config) *testServer {
	t.Helper()
	store, err := logstore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, store, cfg)
}

func startServerOn(t testing.TB, store *logstore.Store, cfg Config) *testServer {
	t.Helper()
	logs := &testutil.LockedBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, ln := newListening(t, store, cfg)
	ts := &testServer{t: t, store: store, srv: srv, addr: ln.Addr().String(), logs: logs, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return ts
}

// newListening makes a server over store and a loopback listener for it
// to serve; when either fails it closes store and fails the test.
func newListening(t testing.TB, store *logstore.Store, cfg Config) (*Server, net.Listener) {
	t.Helper()
	srv, err := New(store, cfg)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, ln
}

// rawClient speaks frames to a server.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func (ts *testServer) dial() *rawClient {
	ts.t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { nc.Close() })
	return &rawClient{t: ts.t, nc: nc}
}

// frame is a request frame of req at its version, with correlation id
// corr.
func frame(req kmsg.Request, corr int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *rawClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	if _, err := c.nc.Write(frame(req, c.corr)); err != nil {
		c.t.Fatal(err)
	}
	return c.corr
}

// readResponse reads one response frame and returns its correlation id
// and body (after the header tag byte when flexible is set).
func (c *rawClient) readResponse(flexible bool) (int32, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 200<<20 {
		c.t.Fatalf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return 0, nil, err
	}
	corr := int32(binary.BigEndian.Uint32(body))
	body = body[4:]
	if flexible {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("flexible response without an empty tag section: % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	return corr, body, nil
}

// do sends req and decodes its response.
func (c *rawClient) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	return c.read(req, corr)
}

func (c *rawClient) read(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	resp := req.ResponseKind()
	got, body, err := c.readResponse(resp.IsFlexible() && req.Key() != apiVersionsKey)
	if err != nil {
		c.t.Fatalf("%s: reading the response: %v", apiName(req.Key()), err)
	}
	if got != corr {
		c.t.Fatalf("%s: response correlation id %d, want %d", apiName(req.Key()), got, corr)
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("%s: response does not decode: %v", apiName(req.Key()), err)
	}
	return resp
}

// expectClosed reads until the server closes the connection; a
// response before that fails the test.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if err == nil {
		c.t.Fatalf("read %d bytes; want the connection closed", n)
	}
}

// batchOf is a client batch of values; pid < 0 makes it
// non-idempotent.
func batchOf(pid int64, epoch int16, seq int32, values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	}
	for i, v := range values {
		if err := b.Append(1_700_000_000_000+int64(i), nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

func produceReq(version int16, acks int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version = version
	r.Acks = acks
	r.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func listOffsetsReq(topic string, partition int32, timestamp int64) *kmsg.ListOffsetsRequest {
	r := kmsg.NewPtrListOffsetsRequest()
	r.Version = 8
	r.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func fetchReq(version int16, topic string, partition int32, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version = version
	r.ReplicaID = -1
	r.MaxWaitMillis = maxWait
	r.MinBytes = minBytes
	r.MaxBytes = 50 << 20
	r.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func (ts *testServer) createTopic(name string, partitions int32) {
	ts.t.Helper()
	if _, err := ts.srv.cat.CreateTopic(name, partitions, nil, false); err != nil {
		ts.t.Fatal(err)
	}
}
