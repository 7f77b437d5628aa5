package kafkaserver

import (
	"crypto/tls"
	"net"
	"sync"
)

// NewTLSListener is tls.NewListener for a Kafka listener: each
// connection's TLS records are written through a coalescing writer, so
// that a response of many records (a fetch of a megabyte is 64 of
// them) goes out in a few write calls, not one per 16 KiB record, as a
// plaintext response goes out in one. The connection's writer holds
// the records of a response and writes them when it is done (see
// writeLoop); the handshake and alerts are written at once.
func NewTLSListener(inner net.Listener, config *tls.Config) net.Listener {
	return &tlsListener{Listener: inner, config: config}
}

type tlsListener struct {
	net.Listener
	config *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(&coalescingConn{Conn: c}, l.config), nil
}

// coalesceBytes is the most a coalescingConn holds before it writes.
const coalesceBytes = 256 << 10

var coalescePool = sync.Pool{New: func() any { b := make([]byte, 0, coalesceBytes+16<<10+512); return &b }}

// coalescingConn is the connection under a tls.Conn: between hold and
// flush its writes are gathered (up to coalesceBytes at a time, in a
// pooled buffer), else they go through at once. Its mutex serializes
// the writer's flush with a write the reader's side of the tls.Conn
// may make meanwhile (a TLS 1.3 key update answer).
type coalescingConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	buf     *[]byte
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding {
		return c.Conn.Write(p)
	}
	if c.buf == nil {
		c.buf = coalescePool.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= coalesceBytes {
		if err := c.writeHeldLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// hold starts gathering writes.
func (c *coalescingConn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// flush writes what was gathered and stops gathering.
func (c *coalescingConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	err := c.writeHeldLocked()
	if c.buf != nil {
		coalescePool.Put(c.buf)
		c.buf = nil
	}
	return err
}

func (c *coalescingConn) writeHeldLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}

// coalescer is nc's coalescing writer, when nc is a connection of a
// NewTLSListener; nil else.
func coalescer(nc net.Conn) *coalescingConn {
	if tc, ok := nc.(*tls.Conn); ok {
		cc, _ := tc.NetConn().(*coalescingConn)
		return cc
	}
	return nil
}
