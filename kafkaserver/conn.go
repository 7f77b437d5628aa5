package kafkaserver

import (
	"bufio"
	"bytes"
	"context"
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
)

// conn is one client connection: a read goroutine (serve, readLoop)
// that decodes and handles one request after another, and a write
// goroutine (writeLoop) that writes the responses in request order. A
// handler may leave its response pending (a produce waiting for group
// commit, a long-poll fetch) while the reader goes on; the queue between
// them bounds how many requests are read and not yet answered.
type conn struct {
	s     *Server
	nc    net.Conn
	br    *bufio.Reader
	queue chan *pending

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
	// resp is the response to write; noResponse is set for a produce
	// with acks=0, which is answered by nothing.
	resp       kmsg.Response
	noResponse bool
	// errCode is the request's first non-zero error code, for the
	// metrics and the logs.
	errCode int16
	done    chan struct{}
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
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
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
		p, err := c.s.handle(c, frame)
		if err != nil {
			c.s.log.Warn("kafka connection closed", "remote", c.nc.RemoteAddr().String(), "reason", err.Error())
			return
		}
		c.queue <- p
	}
}

// quietReadError: the client closed (or reset) the connection, or
// Shutdown or the idle timeout stopped it.
func quietReadError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET)
}

// readFrame reads one request frame: int32 size, then size bytes. The
// size is checked against MaxRequestBytes before anything is allocated,
// and the buffer grows with the bytes that actually come, so a claimed
// size costs nothing until it is sent.
func (c *conn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	switch {
	case n < 0 || n > c.s.cfg.MaxRequestBytes:
		return nil, fmt.Errorf("request frame of %d bytes, the limit is %d", n, c.s.cfg.MaxRequestBytes)
	case n < minHeaderBytes:
		return nil, fmt.Errorf("request frame of %d bytes is shorter than a request header", n)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&buf, c.br, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("connection closed inside a request frame of %d bytes: %w", n, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	c.s.bytesRead(4 + int(n))
	return buf.Bytes(), nil
}

func (c *conn) writeLoop() {
	var failed bool
	var buf []byte
	for p := range c.queue {
		if failed {
			continue
		}
		if p.done != nil {
			<-p.done
		}
		c.s.finished(p)
		if p.noResponse || p.resp == nil {
			continue
		}
		buf = appendResponse(buf[:0], p)
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
		n, err := c.nc.Write(buf)
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
		if cap(buf) > 1<<20 {
			buf = nil // do not keep a large fetch's buffer per idle connection
		}
	}
}

// appendResponse frames p's response: [size][correlation id], a tag
// byte when the response is flexible (never for ApiVersions, whose
// response header is v0 for every version), then the body.
func appendResponse(dst []byte, p *pending) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(p.corr))
	if p.resp.IsFlexible() && p.key != apiVersionsKey {
		dst = append(dst, 0)
	}
	dst = p.resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst, uint32(len(dst)-4))
	return dst
}
