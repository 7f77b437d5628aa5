package kafkatest_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafkatest"
)

// fakeBroker answers every request frame with its correlation id and the
// bytes "ok", a Produce with acks != 0 with a ProduceResponse whose base
// offset is the request's first record offset field (so a test chooses
// it), and a Produce with acks 0 with nothing. It records the
// correlation ids it handled.
type fakeBroker struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	seen []int32
	eofs int // connections the client side closed
}

func newFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() { defer b.wg.Done(); b.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); b.wg.Wait() })
	return b
}

func (b *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	for {
		frame, err := readFrame(c)
		if err != nil {
			b.mu.Lock()
			b.eofs++
			b.mu.Unlock()
			return
		}
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		b.mu.Lock()
		b.seen = append(b.seen, corr)
		b.mu.Unlock()
		out := binary.BigEndian.AppendUint32(nil, uint32(corr))
		req, err := kafkatest.ParseRequest(frame)
		if err != nil {
			return
		}
		if pr, ok := req.(*kmsg.ProduceRequest); ok {
			if pr.Acks == 0 {
				continue
			}
			resp := pr.ResponseKind().(*kmsg.ProduceResponse)
			for _, t := range pr.Topics {
				rt := kmsg.NewProduceResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewProduceResponseTopicPartition()
					rp.Partition = p.Partition
					rp.BaseOffset = int64(binary.BigEndian.Uint64(p.Records))
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			out = resp.AppendTo(out)
		} else {
			out = append(out, "ok"...)
		}
		if _, err := c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(out)))); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (b *fakeBroker) handled() []int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int32(nil), b.seen...)
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// frame encodes req as a request frame (v3 Produce and v0 others are not
// flexible: no header tags).
func frame(req kmsg.Request, corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = binary.BigEndian.AppendUint16(body, 0xffff) // null client id
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func produce(acks int16, baseOffset int64) kmsg.Request {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 3
	req.Acks = acks
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "t"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = binary.BigEndian.AppendUint64(nil, uint64(baseOffset)) // not a batch: the fake reads the offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func apiVersions() kmsg.Request {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return req
}

func newProxy(t *testing.T, target string) *kafkatest.Proxy {
	p, err := kafkatest.NewProxy(kafkatest.ProxyConfig{Target: target, MaxFrameBytes: 1 << 16, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *kafkatest.Proxy) net.Conn {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, frames ...[]byte) {
	t.Helper()
	for _, f := range frames {
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
	}
}

func wantCorr(t *testing.T, c net.Conn, corr int32) {
	t.Helper()
	f, err := readFrame(c)
	if err != nil {
		t.Fatalf("reading the response to %d: %v", corr, err)
	}
	if got := int32(binary.BigEndian.Uint32(f)); got != corr {
		t.Fatalf("response to %d, want %d", got, corr)
	}
}

func wantClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if f, err := readFrame(c); !errors.Is(err, io.EOF) {
		t.Fatalf("read %d bytes, err %v: want the connection closed", len(f), err)
	}
}

// eventually waits (boundedly) for cond, for counters that the proxy's
// goroutines update after the bytes moved.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func TestProxyForwardsAndCountsRepeats(t *testing.T) {
	b := newFakeBroker(t)
	p := newProxy(t, b.ln.Addr().String())
	c := dial(t, p)
	// acks 0 gets no answer: the next response must still match.
	send(t, c, frame(produce(-1, 0), 1), frame(produce(0, 5), 2), frame(apiVersions(), 3), frame(produce(1, 0), 4), frame(produce(1, 9), 5))
	wantCorr(t, c, 1)
	wantCorr(t, c, 3)
	wantCorr(t, c, 4)
	wantCorr(t, c, 5)
	got := p.Counts()
	if got.Requests != 5 || got.Responses != 4 || got.ProduceErrors[0] != 3 || got.ProduceRepeats != 1 {
		t.Fatalf("counts %+v: want 5 requests, 4 responses, 3 produce answers, 1 repeat (offset 0 twice)", got)
	}
}

func TestProxyDropAndClose(t *testing.T) {
	b := newFakeBroker(t)
	p := newProxy(t, b.ln.Addr().String())
	p.SetRules(kafkatest.Rules{Response: kafkatest.NthOnly(0, 2, kafkatest.DropAndClose)})
	c := dial(t, p)
	send(t, c, frame(produce(-1, 0), 1), frame(produce(-1, 1), 2))
	wantCorr(t, c, 1)
	wantClosed(t, c)
	if h := b.handled(); len(h) != 2 {
		t.Fatalf("the broker handled %v, want both requests", h)
	}
	got := p.Counts()
	if got.DroppedAndClosed != 1 || got.ProduceDropped != 1 || got.ProduceErrors[0] != 2 {
		t.Fatalf("counts %+v", got)
	}
}

func TestProxyDropSilentlyMutesTheConnection(t *testing.T) {
	b := newFakeBroker(t)
	p := newProxy(t, b.ln.Addr().String())
	p.SetRules(kafkatest.Rules{Response: kafkatest.NthOnly(0, 2, kafkatest.DropSilently)})
	c := dial(t, p)
	send(t, c, frame(produce(-1, 0), 1), frame(produce(-1, 1), 2), frame(apiVersions(), 3))
	wantCorr(t, c, 1)
	eventually(t, "the third response muted", func() bool { return p.Counts().Muted == 1 })
	got := p.Counts()
	if got.DroppedSilently != 1 || got.DroppedAndClosed != 0 {
		t.Fatalf("counts %+v", got)
	}
	// The connection is still open: the client closing it closes the
	// server's side too.
	c.Close()
	eventually(t, "the broker's side closed", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.eofs == 1 })
}

func TestProxyCloseBeforeForward(t *testing.T) {
	b := newFakeBroker(t)
	p := newProxy(t, b.ln.Addr().String())
	p.SetRules(kafkatest.Rules{Request: kafkatest.NthOnly(18, 2, kafkatest.CloseBeforeForward)})
	c := dial(t, p)
	send(t, c, frame(apiVersions(), 1))
	wantCorr(t, c, 1)
	send(t, c, frame(apiVersions(), 2))
	wantClosed(t, c)
	eventually(t, "the broker's side closed", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.eofs == 1 })
	if h := b.handled(); len(h) != 1 || h[0] != 1 {
		t.Fatalf("the broker handled %v, want only request 1", h)
	}
	if got := p.Counts(); got.ClosedBeforeForward != 1 {
		t.Fatalf("counts %+v", got)
	}
}

func TestProxyRefusesOversizedFrames(t *testing.T) {
	b := newFakeBroker(t)
	p := newProxy(t, b.ln.Addr().String())
	c := dial(t, p)
	send(t, c, binary.BigEndian.AppendUint32(nil, 1<<16+1))
	wantClosed(t, c)
	c2 := dial(t, p)
	send(t, c2, binary.BigEndian.AppendUint32(nil, 3)) // shorter than a request header
	wantClosed(t, c2)
	if h := b.handled(); len(h) != 0 {
		t.Fatalf("the broker handled %v", h)
	}
}

func TestProxyDialErrorClosesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := newProxy(t, dead)
	c := dial(t, p)
	wantClosed(t, c)
	if got := p.Counts(); got.DialErrors != 1 {
		t.Fatalf("counts %+v", got)
	}
}

// TestProxyCloseLeavesNoGoroutine: Close ends the accept loop and every
// connection's pumps, also of a connection muted by a silent drop and of
// one whose client never sent anything.
func TestProxyCloseLeavesNoGoroutine(t *testing.T) {
	b := newFakeBroker(t)
	before := runtime.NumGoroutine()
	p, err := kafkatest.NewProxy(kafkatest.ProxyConfig{Target: b.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 1, kafkatest.DropSilently)})
	idle := dial(t, p)
	muted := dial(t, p)
	send(t, muted, frame(produce(-1, 0), 1))
	eventually(t, "the response dropped", func() bool { return p.Counts().DroppedSilently == 1 })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wantClosed(t, idle)
	wantClosed(t, muted)
	eventually(t, "the broker's sides closed", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.eofs == 2 })
	eventually(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
}
