package kafkaserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// dropListener serves connections that lose every nth Produce response:
// the server appended the batch, and the client sees its connection
// close instead of the answer.
type dropListener struct {
	net.Listener
	n        int64
	produces atomic.Int64
	dropped  atomic.Int64
}

func (l *dropListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: nc, l: l, keys: make(map[int32]int16)}, nil
}

// dropConn learns each request's API key from the frames the server
// reads, and drops the response of every nth Produce.
type dropConn struct {
	net.Conn
	l    *dropListener
	mu   sync.Mutex
	in   []byte // request bytes not yet framed
	keys map[int32]int16
}

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in = append(c.in, p[:n]...)
	for len(c.in) >= 12 {
		size := int(binary.BigEndian.Uint32(c.in))
		c.keys[int32(binary.BigEndian.Uint32(c.in[8:]))] = int16(binary.BigEndian.Uint16(c.in[4:]))
		if len(c.in) < 4+size {
			break
		}
		c.in = c.in[4+size:]
	}
	c.mu.Unlock()
	return n, err
}

func (c *dropConn) Write(p []byte) (int, error) {
	if len(p) >= 8 {
		c.mu.Lock()
		key := c.keys[int32(binary.BigEndian.Uint32(p[4:]))]
		c.mu.Unlock()
		if key == 0 && c.l.produces.Add(1)%c.l.n == 0 {
			c.l.dropped.Add(1)
			c.Conn.Close()
			return 0, net.ErrClosed
		}
	}
	return c.Conn.Write(p)
}

// TestKgoLostAnswers: with every 5th Produce answer lost after the
// append (the connection closed instead), kgo's idempotent retries are
// answered as duplicates with the first copy's offsets: every record is
// in the log once, at the offset kgo acknowledged, in order.
func TestKgoLostAnswers(t *testing.T) {
	store, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, store, Config{})
	ts.createTopic("lost", 1)
	// A second listener, losing answers, over the same server.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &dropListener{Listener: inner, n: 5}
	go ts.srv.Serve(ln)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(inner.Addr().String()), kgo.DefaultProduceTopic("lost"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.StopProducerOnDataLossDetected(),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 60
	for i := range n {
		r := &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
		}
	}
	if ln.dropped.Load() == 0 {
		t.Fatal("no answer was lost: the test tested nothing")
	}
	p, err := store.Partition("lost", 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.EndOffset(); end != n {
		t.Fatalf("log end %d after %d records (%d answers lost)", end, n, ln.dropped.Load())
	}
	if dups := strings.Count(ts.logs.String(), "duplicate answered"); dups == 0 {
		t.Fatalf("%d answers lost and no duplicate answered", ln.dropped.Load())
	}
}
