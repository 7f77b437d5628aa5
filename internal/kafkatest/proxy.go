package kafkatest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Action is what a Proxy does with one request or response.
type Action int

const (
	// Forward passes the frame on unchanged.
	Forward Action = iota
	// DropAndClose, for a response: the server has written it (the proxy
	// read it whole), the client never gets it, and both sides of the
	// connection are closed at once.
	DropAndClose
	// DropSilently, for a response: the client never gets it and the
	// connection stays open. Every later response on that connection is
	// discarded too (a Kafka client matches responses in order, so
	// forwarding the next one would only make it close the connection),
	// until the client gives up on it and closes it.
	DropSilently
	// CloseBeforeForward, for a request: both sides are closed and the
	// request never reaches the server.
	CloseBeforeForward
)

func (a Action) String() string {
	switch a {
	case Forward:
		return "Forward"
	case DropAndClose:
		return "DropAndClose"
	case DropSilently:
		return "DropSilently"
	case CloseBeforeForward:
		return "CloseBeforeForward"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Exchange is one request, and once it came back its response, as a rule
// sees it. Its slices are valid only during the call to the rule.
type Exchange struct {
	Conn        int64 // the proxy's number of the connection, from 1
	Key         int16 // the request's API key
	Version     int16
	Correlation int32
	// N counts the requests of this key through the proxy, from 1: the
	// N-th Produce request has Key 0 and N n, and its response the same.
	N int64
	// Request is the request frame after its size field (header and
	// body); nil in a response rule when the request was over 1 MiB.
	Request []byte
	// Response is the response frame after its size field (correlation
	// id, header tags, body); nil in a request rule, and for a Fetch
	// response over 1 MiB, which is streamed through unread.
	Response []byte
}

// Rules decide what the proxy does. A nil rule forwards everything. The
// proxy calls its rules one at a time, so a rule may keep state without a
// lock of its own.
type Rules struct {
	// Request may answer Forward or CloseBeforeForward.
	Request func(*Exchange) Action
	// Response may answer Forward, DropAndClose or DropSilently.
	Response func(*Exchange) Action
}

// EveryNth is a rule that answers a for every n-th exchange of API key
// key (N divisible by n) and Forward otherwise.
func EveryNth(key int16, n int64, a Action) func(*Exchange) Action {
	return func(e *Exchange) Action {
		if e.Key == key && n > 0 && e.N%n == 0 {
			return a
		}
		return Forward
	}
}

// NthOnly is a rule that answers a for the n-th exchange of API key key
// only.
func NthOnly(key int16, n int64, a Action) func(*Exchange) Action {
	return func(e *Exchange) Action {
		if e.Key == key && e.N == n {
			return a
		}
		return Forward
	}
}

// Counts are what a Proxy saw and did.
type Counts struct {
	Conns      int64 // client connections accepted
	DialErrors int64 // client connections closed because the target did not answer
	Requests   int64 // requests forwarded to the server (counted as the write starts)
	Responses  int64 // responses forwarded to the client (counted as the write starts)

	ClosedBeforeForward int64 // requests never forwarded (CloseBeforeForward)
	DroppedAndClosed    int64 // responses dropped, connection closed (DropAndClose)
	DroppedSilently     int64 // responses dropped by a DropSilently rule
	Muted               int64 // later responses discarded on a connection a silent drop muted
	// ProduceDropped counts the Produce responses among the three above:
	// each is an answer the server wrote and the client never saw.
	ProduceDropped int64

	// ProduceErrors counts the partition answers of every Produce
	// response read from the server, forwarded or not, by error code
	// (0 included).
	ProduceErrors map[int16]int64
	// ProduceRepeats counts partition answers with error 0 whose base
	// offset the server had already given in an earlier answer for the
	// same partition (forwarded or dropped): the duplicates it recognised
	// and answered with the first copy's offsets. It is a lower bound of
	// the server's duplicates (a first answer the server never wrote, as
	// when it was killed, is not seen) and exact otherwise, as long as no
	// acknowledged offset is ever given out twice.
	ProduceRepeats int64
}

// ProxyConfig configures NewProxy.
type ProxyConfig struct {
	// Listen is where the proxy listens; "" is 127.0.0.1 on a free port.
	Listen string
	// Target is the broker's host:port; SetTarget changes it for the
	// connections that come after.
	Target string
	// MaxFrameBytes bounds a frame in either direction; a larger one
	// closes the connection. 0 is 100 MiB plus 64 KiB.
	MaxFrameBytes int32
	// MaxInFlight bounds the requests forwarded on one connection and
	// not yet answered; the proxy stops reading the client there. 0 is 64.
	MaxInFlight int
	// Logf, if set, receives a line for every connection closed on a
	// protocol problem.
	Logf func(format string, args ...any)
}

// streamAbove is the size above which a Fetch response is streamed
// through without being held, and above which a request's bytes are not
// kept for its response's rule.
const streamAbove = 1 << 20

// Proxy is a fault-injecting TCP proxy for the Kafka protocol in front of
// one broker address. It frames requests (client to server) and responses
// (server to client), matches them by correlation id in order, and applies
// Rules to each. Clients must dial the proxy, so the broker must advertise
// the proxy's address in Metadata (the proxy rewrites nothing).
type Proxy struct {
	cfg ProxyConfig
	ln  net.Listener

	mu       sync.Mutex // guards everything below
	target   string
	rules    Rules
	counts   Counts
	byKey    map[int16]int64
	answered map[topicPartition]map[int64]struct{}
	conns    map[*pconn]struct{}
	nextConn int64
	closed   bool

	ruleMu sync.Mutex // rules run one at a time
	wg     sync.WaitGroup
}

type topicPartition struct {
	topic     string
	partition int32
}

// NewProxy listens and starts forwarding connections to cfg.Target.
func NewProxy(cfg ProxyConfig) (*Proxy, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = 100<<20 + 64<<10
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: proxy: %w", err)
	}
	p := &Proxy{
		cfg:      cfg,
		ln:       ln,
		target:   cfg.Target,
		byKey:    make(map[int16]int64),
		answered: make(map[topicPartition]map[int64]struct{}),
		conns:    make(map[*pconn]struct{}),
	}
	p.counts.ProduceErrors = make(map[int16]int64)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port: what the broker must advertise.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes the broker address for new connections.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// SetRules replaces the rules; exchanges already decided keep their
// action.
func (p *Proxy) SetRules(r Rules) {
	p.ruleMu.Lock()
	p.rules = r
	p.ruleMu.Unlock()
}

// Counts returns a copy of the counters.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	c.ProduceErrors = make(map[int16]int64, len(p.counts.ProduceErrors))
	for k, v := range p.counts.ProduceErrors {
		c.ProduceErrors[k] = v
	}
	return c
}

// CloseConns closes every connection open now; the listener stays.
func (p *Proxy) CloseConns() {
	p.mu.Lock()
	conns := make([]*pconn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Close stops listening, closes every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CloseConns()
	p.wg.Wait()
	return err
}

func (p *Proxy) logf(format string, args ...any) {
	if p.cfg.Logf != nil {
		p.cfg.Logf(format, args...)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (EMFILE, say): wait a little.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.nextConn++
		p.counts.Conns++
		id, target := p.nextConn, p.target
		c := &pconn{p: p, id: id, client: client, pending: make(chan pending, p.cfg.MaxInFlight), done: make(chan struct{})}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.run(target)
	}
}

// pconn is one client connection and its connection to the server.
type pconn struct {
	p       *Proxy
	id      int64
	client  net.Conn
	server  net.Conn // set under mu before the pumps start
	pending chan pending
	done    chan struct{}
	muted   bool // owned by the response pump

	mu     sync.Mutex // guards closed and, after the dial, server
	closed bool
}

// pending is a forwarded request that waits for its response.
type pending struct {
	key, version int16
	corr         int32
	n            int64
	req          []byte // nil above streamAbove
}

func (c *pconn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

func (c *pconn) run(target string) {
	defer c.p.wg.Done()
	defer func() {
		c.close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	}()
	d := net.Dialer{Timeout: 2 * time.Second}
	server, err := d.Dial("tcp", target)
	if err != nil {
		c.p.mu.Lock()
		c.p.counts.DialErrors++
		c.p.mu.Unlock()
		return
	}
	c.mu.Lock()
	if c.closed { // Close or CloseConns ran during the dial
		c.mu.Unlock()
		server.Close()
		return
	}
	c.server = server
	c.mu.Unlock()
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); defer c.close(); c.requests() }()
	go func() { defer pumps.Done(); defer c.close(); c.responses() }()
	pumps.Wait()
}

// readFrame reads one size-prefixed frame whole.
func (c *pconn) readFrame(r io.Reader, min int32) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < min || size > c.p.cfg.MaxFrameBytes {
		return nil, fmt.Errorf("frame size %d outside [%d, %d]", size, min, c.p.cfg.MaxFrameBytes)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func writeFrame(w io.Writer, body []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	bufs := net.Buffers{hdr[:], body}
	_, err := bufs.WriteTo(w)
	return err
}

// requests pumps client to server.
func (c *pconn) requests() {
	for {
		buf, err := c.readFrame(c.client, 8)
		if err != nil {
			if !isClosed(err) {
				c.p.logf("kafkatest proxy: conn %d: request: %v", c.id, err)
			}
			return
		}
		key := int16(binary.BigEndian.Uint16(buf[0:]))
		version := int16(binary.BigEndian.Uint16(buf[2:]))
		corr := int32(binary.BigEndian.Uint32(buf[4:]))
		c.p.mu.Lock()
		c.p.byKey[key]++
		n := c.p.byKey[key]
		c.p.mu.Unlock()

		ex := &Exchange{Conn: c.id, Key: key, Version: version, Correlation: corr, N: n, Request: buf}
		if c.p.decide(ex, true) == CloseBeforeForward {
			c.p.mu.Lock()
			c.p.counts.ClosedBeforeForward++
			c.p.mu.Unlock()
			return
		}
		if expectsResponse(key, version, buf) {
			pr := pending{key: key, version: version, corr: corr, n: n}
			if len(buf) <= streamAbove {
				pr.req = buf
			}
			select {
			case c.pending <- pr:
			case <-c.done:
				return
			}
		}
		// Counted before the write, so a client that has its answer sees
		// the count.
		c.p.mu.Lock()
		c.p.counts.Requests++
		c.p.mu.Unlock()
		if err := writeFrame(c.server, buf); err != nil {
			return
		}
	}
}

// responses pumps server to client.
func (c *pconn) responses() {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c.server, hdr[:]); err != nil {
			if !isClosed(err) {
				c.p.logf("kafkatest proxy: conn %d: response: %v", c.id, err)
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(hdr[:4]))
		corr := int32(binary.BigEndian.Uint32(hdr[4:]))
		if size < 4 || size > c.p.cfg.MaxFrameBytes {
			c.p.logf("kafkatest proxy: conn %d: response size %d outside [4, %d]", c.id, size, c.p.cfg.MaxFrameBytes)
			return
		}
		var pr pending
		select {
		case pr = <-c.pending:
		default:
			c.p.logf("kafkatest proxy: conn %d: response %d to no request", c.id, corr)
			return
		}
		if corr != pr.corr {
			c.p.logf("kafkatest proxy: conn %d: response %d, expected %d (key %d)", c.id, corr, pr.corr, pr.key)
			return
		}
		var body []byte // the frame after its size, when read whole
		if pr.key != 1 || size <= streamAbove {
			body = make([]byte, size)
			copy(body, hdr[4:])
			if _, err := io.ReadFull(c.server, body[4:]); err != nil {
				return
			}
			if pr.key == 0 {
				c.p.noteProduce(pr.version, body)
			}
		}
		ex := &Exchange{Conn: c.id, Key: pr.key, Version: pr.version, Correlation: corr, N: pr.n, Request: pr.req, Response: body}
		act := Forward
		if c.muted {
			act = DropSilently
		} else {
			act = c.p.decide(ex, false)
		}
		if act != Forward {
			c.p.mu.Lock()
			switch {
			case c.muted:
				c.p.counts.Muted++
			case act == DropAndClose:
				c.p.counts.DroppedAndClosed++
			default:
				c.p.counts.DroppedSilently++
			}
			if pr.key == 0 {
				c.p.counts.ProduceDropped++
			}
			c.p.mu.Unlock()
			if act == DropAndClose {
				return
			}
			c.muted = true
			if body == nil {
				if _, err := io.CopyN(io.Discard, c.server, int64(size)-4); err != nil {
					return
				}
			}
			continue
		}
		c.p.mu.Lock()
		c.p.counts.Responses++
		c.p.mu.Unlock()
		var err error
		if body != nil {
			err = writeFrame(c.client, body)
		} else {
			if _, err = c.client.Write(hdr[:]); err == nil {
				_, err = io.CopyN(c.client, c.server, int64(size)-4)
			}
		}
		if err != nil {
			return
		}
	}
}

// decide runs the request or response rule. Request rules may only close
// before forwarding, response rules may only drop.
func (p *Proxy) decide(ex *Exchange, request bool) Action {
	p.ruleMu.Lock()
	defer p.ruleMu.Unlock()
	if request {
		if p.rules.Request == nil {
			return Forward
		}
		if a := p.rules.Request(ex); a == CloseBeforeForward {
			return a
		}
		return Forward
	}
	if p.rules.Response == nil {
		return Forward
	}
	switch a := p.rules.Response(ex); a {
	case DropAndClose, DropSilently:
		return a
	}
	return Forward
}

// expectsResponse says whether the server answers the request: every one
// but a Produce with acks 0. A Produce that does not decode is assumed to
// be answered (the server will close the connection on it anyway).
func expectsResponse(key, version int16, frame []byte) bool {
	if key != 0 {
		return true
	}
	req, err := ParseRequest(frame)
	if err != nil {
		return true
	}
	return req.(*kmsg.ProduceRequest).Acks != 0
}

// ParseRequest decodes a request frame after its size field, as a rule's
// Exchange.Request holds it.
func ParseRequest(frame []byte) (kmsg.Request, error) {
	if len(frame) < 8 {
		return nil, fmt.Errorf("kafkatest: request frame of %d bytes", len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("kafkatest: unknown API key %d", key)
	}
	req.SetVersion(version)
	r := kbin.Reader{Src: frame[8:]}
	r.NullableString() // client id: never compact, even in flexible headers
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("kafkatest: request header of key %d: truncated", key)
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("kafkatest: request of key %d v%d: %w", key, version, err)
	}
	return req, nil
}

// ParseResponse decodes a response frame after its size field, as a
// rule's Exchange.Response holds it, for a request of key and version.
func ParseResponse(key, version int16, frame []byte) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("kafkatest: response frame of %d bytes", len(frame))
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("kafkatest: unknown API key %d", key)
	}
	req.SetVersion(version)
	resp := req.ResponseKind()
	r := kbin.Reader{Src: frame[4:]}
	// ApiVersions answers with header v0 even when flexible, so old
	// clients can read it.
	if resp.IsFlexible() && key != 18 {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("kafkatest: response header of key %d: truncated", key)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("kafkatest: response of key %d v%d: %w", key, version, err)
	}
	return resp, nil
}

// noteProduce counts a Produce response's partition answers.
func (p *Proxy) noteProduce(version int16, frame []byte) {
	resp, err := ParseResponse(0, version, frame)
	if err != nil {
		p.logf("kafkatest proxy: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, pt := range t.Partitions {
			p.counts.ProduceErrors[pt.ErrorCode]++
			if pt.ErrorCode != 0 {
				continue
			}
			tp := topicPartition{t.Topic, pt.Partition}
			seen := p.answered[tp]
			if seen == nil {
				seen = make(map[int64]struct{})
				p.answered[tp] = seen
			}
			if _, ok := seen[pt.BaseOffset]; ok {
				p.counts.ProduceRepeats++
			}
			seen[pt.BaseOffset] = struct{}{}
		}
	}
}

// isClosed says whether err is one side going away, which is not worth a
// log line.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Advertise wraps ln so that its Addr reports addr: a broker that
// advertises its listener's address (kfake does, through its ListenFn
// option) then names the proxy in Metadata.
func Advertise(ln net.Listener, addr string) net.Listener {
	return &advertised{Listener: ln, addr: addr}
}

type advertised struct {
	net.Listener
	addr string
}

func (a *advertised) Addr() net.Addr {
	return advertisedAddr(a.addr)
}

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

// Limit lets rule act at most n times: after that it forwards.
func Limit(n int, rule func(*Exchange) Action) func(*Exchange) Action {
	return func(e *Exchange) Action {
		if n <= 0 {
			return Forward
		}
		a := rule(e)
		if a != Forward {
			n--
		}
		return a
	}
}
