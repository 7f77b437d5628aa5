package kafkaserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/tlsconf"
)

// conn is one client connection: a read goroutine (serve, readLoop)
// that decodes and handles one request after another, and a write
// goroutine (writeLoop) that writes the responses in request order. A
// handler may leave its response pending (a produce waiting for group
// commit, a long-poll fetch) while the reader goes on; the queue between
// them bounds how many requests are read and not yet answered.
type conn struct {
	s  *Server
	nc net.Conn
	// advertise is the host:port its clients are told to dial; "" is
	// its local address.
	advertise string
	ip        string // the client's address, for MaxConnectionsPerIP
	// held is the request budget the request being read holds, until
	// its pending takes it (reader only; reqbudget.go).
	held int64
	// sasl is its authentication (sasl.go; reader only); principal is
	// who it authenticated as: "User:NAME" by SASL, or its client
	// certificate's subject, "" when neither.
	sasl      saslState
	principal string
	accepted  time.Time
	br        *bufio.Reader
	queue     chan *pending

	stopOnce sync.Once
	stopping chan struct{} // closed by stopReading: Shutdown

	// ctx ends when the reader stops (the client went, a bad request,
	// Shutdown) or the server closes: long-poll fetches answer then.
	ctx    context.Context
	cancel context.CancelFunc
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{
		ctx:      ctx,
		cancel:   cancel,
		s:        s,
		nc:       nc,
		br:       bufio.NewReaderSize(nc, 16<<10),
		queue:    make(chan *pending, maxInFlight-1),
		stopping: make(chan struct{}),
	}
}

// pending is one request read and its response, complete when done is
// closed (or at once when done is nil).
type pending struct {
	key, version int16
	corr         int32
	start        time.Time
	// clientID is the request header's client id, kept for the group
	// APIs only (a member's client id).
	clientID string
	// resp is the response to write; noResponse is set for a produce
	// with acks=0, which is answered by nothing.
	resp       kmsg.Response
	noResponse bool
	// errCode is the request's first non-zero error code, for the
	// metrics and the logs.
	errCode int16
	done    chan struct{}
	// frame is the request's frame buffer, back to its pool once the
	// response is written, and charged what it took of the server's
	// request budget then given back (reqbudget.go).
	frame   []byte
	charged int64
	// sizeHint, when set, is about the size of the encoded response (a
	// fetch's record bytes and some more), for the writer's buffer.
	sizeHint int
	// release, when set, is called once the response is encoded: it
	// gives back the buffers the response pointed into (a fetch's
	// records, fetchbuf.go).
	release func()
	// closeAfter closes the connection once the response is written
	// (a failed authentication); rawToken, when not nil, is the answer
	// to a raw SASL token (a v0 handshake's framing), written as a size
	// and its bytes instead of resp.
	closeAfter bool
	rawToken   []byte
}

// complete reports whether p's response is ready to write.
func (p *pending) complete() bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *pending) setErr(code int16) {
	if p.errCode == 0 {
		p.errCode = code
	}
}

// stopReading makes the reader stop before its next request (Shutdown):
// the requests already read are still answered.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		close(c.stopping)
		c.nc.SetReadDeadline(time.Now())
	})
}

func (c *conn) isStopping() bool {
	select {
	case <-c.stopping:
		return true
	default:
		return false
	}
}

// serve runs the connection until the client goes, a request closes it,
// or the server stops.
func (c *conn) serve() {
	if tc, ok := c.nc.(*tls.Conn); ok {
		if !c.handshake(tc) {
			c.cancel()
			c.nc.Close()
			c.s.forget(c)
			return
		}
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			c.principal = "User:" + tlsconf.Principal(st)
		}
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	c.cancel()
	close(c.queue)
	<-writerDone
	c.nc.Close()
	c.s.forget(c)
}

// handshake completes tc's TLS handshake within TLSHandshakeTimeout;
// false (the failure logged) when it did not.
func (c *conn) handshake(tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(c.ctx, TLSHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if !c.isStopping() {
			c.s.log.Warn("kafka connection closed: TLS handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err.Error())
		}
		return false
	}
	return true
}

// errClose is a request the connection is closed for.
type errClose struct{ msg string }

func (e *errClose) Error() string { return e.msg }

func closeConn(format string, args ...any) error {
	return &errClose{msg: fmt.Sprintf(format, args...)}
}

func (c *conn) readLoop() {
	defer func() {
		if v := recover(); v != nil {
			c.s.log.Error("kafka connection closed after a panic", "remote", c.nc.RemoteAddr().String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	for {
		// The deadline first, then the check: a stopReading in between
		// has closed stopping, and one after it moves the deadline to now.
		deadline := time.Now().Add(c.s.cfg.IdleTimeout)
		if c.sasl.required && !c.sasl.done {
			deadline = c.accepted.Add(UnauthenticatedTimeout)
		}
		c.nc.SetReadDeadline(deadline)
		if c.isStopping() {
			return
		}
		frame, err := c.readFrame()
		if err != nil {
			if !c.isStopping() && !quietReadError(err) {
				c.s.log.Warn("kafka connection closed", "remote", c.nc.RemoteAddr().String(), "reason", err.Error())
			}
			return
		}
		var p *pending
		if c.sasl.raw {
			p = c.s.handleRawToken(c, frame)
		} else {
			p, err = c.s.handle(c, frame)
		}
		if err != nil {
			// The frame is left to the collector: a goroutine the
			// handler started may still hold a part of it.
			c.release(c.held)
			c.held = 0
			if !c.isStopping() || !errors.Is(err, net.ErrClosed) {
				c.s.log.Warn("kafka connection closed", "remote", c.nc.RemoteAddr().String(), "reason", err.Error())
			}
			return
		}
		p.frame, p.charged, c.held = frame, c.held, 0
		c.queue <- p
		if p.closeAfter {
			return
		}
	}
}

// quietReadError: the client closed (or reset) the connection, or
// Shutdown or the idle timeout stopped it.
func quietReadError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET)
}

// readFrame reads one request frame: int32 size, then size bytes, into a
// pooled buffer (framepool.go) that the caller hands back once the
// request's response is written. The size is checked against
// MaxRequestBytes and charged to the server's request budget (c.held)
// before anything is allocated, and the buffer grows with the bytes
// that actually come (first firstFrameChunk, then doubling), so a
// claimed size costs nothing until it is sent.
func (c *conn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	switch {
	case n < 0 || n > c.maxFrame():
		return nil, fmt.Errorf("request frame of %d bytes, the limit is %d", n, c.maxFrame())
	case n < minHeaderBytes && !c.sasl.raw:
		return nil, fmt.Errorf("request frame of %d bytes is shorter than a request header", n)
	}
	// The request is charged before its buffer is allocated, for the
	// most it may cost by its key (the first bytes after the size).
	key := int16(-1) // a raw SASL token of a byte or none has no key
	if n >= 2 {
		b, err := c.br.Peek(2)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("reading a request frame of %d bytes: %w", n, err)
		}
		key = int16(binary.BigEndian.Uint16(b))
	}
	if !c.charge(c.requestCharge(key, int64(n))) {
		return nil, net.ErrClosed
	}
	buf := getFrame(int(min(n, firstFrameChunk)))
	buf = buf[:min(int(n), cap(buf))]
	got := 0
	for {
		// A read as large as bufio's buffer goes straight into buf.
		k, err := io.ReadFull(c.br, buf[got:])
		got += k
		if err != nil {
			putFrame(buf)
			c.release(c.held)
			c.held = 0
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("connection closed inside a request frame of %d bytes: %w", n, io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		if got == int(n) {
			break
		}
		grown := getFrame(min(int(n), 2*got))
		grown = grown[:min(int(n), cap(grown))]
		copy(grown, buf[:got])
		putFrame(buf)
		buf = grown
	}
	c.s.bytesRead(4 + int(n))
	return buf, nil
}

// writeGatherBytes: responses already complete when one is written go
// out in the same write, up to about this many bytes, so pipelined
// requests (kgo keeps 5 produce requests in flight) cost fewer writes
// and fewer wake-ups of the client.
const writeGatherBytes = 64 << 10

func (c *conn) writeLoop() {
	var (
		failed, closed bool
		buf            []byte
		batch          []*pending
		next           *pending
	)
	cc := coalescer(c.nc) // a TLS connection's records, written together
	for !closed {
		p := next
		next = nil
		if p == nil {
			var ok bool
			if p, ok = <-c.queue; !ok {
				return
			}
		}
		if failed {
			c.release(p.charged)
			continue
		}
		if p.done != nil {
			<-p.done
		}
		buf = c.respond(buf[:0], p)
		batch = append(batch[:0], p)
	gather:
		for len(buf) < writeGatherBytes {
			select {
			case q, ok := <-c.queue:
				if !ok {
					closed = true
					break gather
				}
				if !q.complete() {
					next = q
					break gather
				}
				buf = c.respond(buf, q)
				batch = append(batch, q)
			default:
				break gather
			}
		}
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
			if cc != nil {
				cc.hold()
			}
			n, err := c.nc.Write(buf)
			if cc != nil {
				if ferr := cc.flush(); err == nil {
					err = ferr
				}
			}
			c.s.bytesWritten(n)
			if err != nil {
				failed = true
				if !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
					// Not the client's own close: a deadline, a stalled reader.
					c.s.log.Warn("kafka connection closed: writing a response failed", "remote", c.nc.RemoteAddr().String(), "api", apiName(p.key), "err", err.Error())
				}
				// The reader's next read fails; it then closes the queue.
				c.nc.Close()
			}
		}
		// Every request of the batch is answered and its handler done:
		// nothing refers to its frame any more.
		for i, q := range batch {
			putFrame(q.frame)
			c.release(q.charged)
			q.frame, q.charged = nil, 0
			batch[i] = nil
		}
		if cap(buf) > 1<<20 {
			// Do not keep a large fetch's buffer per idle connection;
			// the next large fetch takes one from the pool again.
			putFrame(buf)
			buf = nil
		}
	}
}

// respond completes p (its metrics) and appends its response frame to
// buf, unless it is answered by nothing.
func (c *conn) respond(buf []byte, p *pending) []byte {
	c.s.finished(p)
	if p.rawToken != nil {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(p.rawToken)))
		return append(buf, p.rawToken...)
	}
	if p.noResponse || p.resp == nil {
		return buf
	}
	if need := len(buf) + p.sizeHint; p.sizeHint > 0 && need > cap(buf) {
		// A large fetch: one pooled buffer of about its size, rather
		// than append's doublings, each a new allocation and a copy.
		grown := getFrame(need)[:len(buf)]
		copy(grown, buf)
		putFrame(buf)
		buf = grown
	}
	buf = appendResponse(buf, p)
	if p.release != nil {
		p.release()
		p.release = nil
	}
	return buf
}

// appendResponse frames p's response: [size][correlation id], a tag
// byte when the response is flexible (never for ApiVersions, whose
// response header is v0 for every version), then the body.
func appendResponse(dst []byte, p *pending) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(p.corr))
	if p.resp.IsFlexible() && p.key != apiVersionsKey {
		dst = append(dst, 0)
	}
	dst = p.resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
