package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/txncoord"
	"github.com/logstore/logstore/users"
)

// DefaultMaxRequestBytes is Config.MaxRequestBytes when it is 0: Kafka's
// socket.request.max.bytes.
const DefaultMaxRequestBytes = 100 << 20

// DefaultMaxConnections is Config.MaxConnections when it is 0.
const DefaultMaxConnections = 10_000

// DefaultWriteTimeout is Config.WriteTimeout when it is 0.
const DefaultWriteTimeout = 30 * time.Second

// TLSHandshakeTimeout bounds a TLS connection's handshake: a client
// that connects and does not complete it is closed then.
const TLSHandshakeTimeout = 10 * time.Second

// DefaultIdleTimeout is Config.IdleTimeout when it is 0 (Kafka's
// connections.max.idle.ms).
const DefaultIdleTimeout = 10 * time.Minute

// DefaultRepeatLogInterval is Config.RepeatLogInterval when it is 0.
const DefaultRepeatLogInterval = 10 * time.Second

// maxInFlight bounds the requests one connection has read and not yet
// answered (kgo keeps up to 5 produce requests in flight).
const maxInFlight = 8

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = errors.New("kafkaserver: server closed")

// Config configures a Server. The zero value serves with the defaults.
type Config struct {
	// Advertise is the host:port Metadata gives clients to dial; "" is
	// the address of the listener the request came in on.
	Advertise string
	// MaxRequestBytes bounds a request frame; 0 is
	// DefaultMaxRequestBytes. A larger frame closes its connection.
	MaxRequestBytes int32
	// QueuedMaxRequestBytes bounds the request memory of all the
	// connections together (Kafka's queued.max.request.bytes, with
	// each frame charged for what its decoding may cost: see
	// reqbudget.go); readers wait while it is spent. 0 is
	// DefaultQueuedMaxRequestBytes.
	QueuedMaxRequestBytes int64
	// MaxConnections bounds the client connections open at once (Kafka's
	// max.connections), MaxConnectionsPerIP those from one address
	// (max.connections.per.ip): a connection beyond either is closed as
	// soon as it is accepted. 0 is DefaultMaxConnections, and no
	// bound per address; below 0 is no bound.
	MaxConnections      int
	MaxConnectionsPerIP int
	// Users authenticates the clients of SASL listeners
	// (ListenerConfig.SASL); nil refuses every authentication.
	Users *users.File
	// SASLMechanisms are the SASL mechanisms a client may choose, of
	// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; empty is
	// DefaultSASLMechanisms.
	SASLMechanisms []string
	// SuperUsers are the principals ("User:NAME", a SASL user; or
	// "User:CN=...", a client certificate's subject) that may manage
	// the users (AlterUserScramCredentials); Kafka's super.users.
	SuperUsers []string
	// Authorizer decides each request by the ACLs (see authz.go); nil
	// allows every request to every client, as Kafka does without
	// authorizer.class.name, and answers the ACL APIs with 54
	// SECURITY_DISABLED.
	Authorizer *acl.Authorizer
	// AuthFailureDelay is how long a failed authentication waits
	// before it is answered and its connection closed (Kafka's
	// connection.failed.authentication.delay.ms); 0 is
	// DefaultAuthFailureDelay.
	AuthFailureDelay time.Duration
	// AutoCreateTopics creates a topic that Metadata (when the request
	// allows it) or Produce names and that does not exist, with
	// DefaultPartitions partitions.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of an auto-created topic
	// and of CreateTopics with -1; 0 is 1.
	DefaultPartitions int32
	// WriteTimeout bounds the writing of one response: a client that
	// does not read its responses for that long is disconnected. 0 is
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection that sends no request (or stops
	// in the middle of one) for that long, as Kafka's
	// connections.max.idle.ms; 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives one line per closed-on-error connection and per
	// failure; nil is slog.Default(). A warning or error that repeats
	// (one message, one cause: a full disk, a descriptor limit) is
	// written once per RepeatLogInterval, with a count of those held
	// back (see repeatHandler).
	Logger *slog.Logger
	// RepeatLogInterval is how often one warning or error may be
	// written; 0 is DefaultRepeatLogInterval, below 0 every one is.
	RepeatLogInterval time.Duration
	// Metrics receives each request, produce outcome, byte and
	// connection (see package metrics), and New points its scrape-time
	// partition gauges at the store; nil records nothing. The store's
	// own metrics come from opening it with
	// logstore.Options{Events: Metrics.StoreEvents()}.
	Metrics *metrics.Metrics
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms
	// (see groupcoord.Config); 0 is 3 s, negative is none.
	GroupInitialRebalanceDelay time.Duration
	// OffsetsRetention is offsets.retention.minutes; 0 is 7 days.
	OffsetsRetention time.Duration
	// GroupMinSessionTimeout is group.min.session.timeout.ms; 0 is 6 s.
	GroupMinSessionTimeout time.Duration
	// TransactionMaxTimeout is the longest transaction timeout a
	// transactional producer may ask for in InitProducerId (Kafka's
	// transaction.max.timeout.ms); a longer one is refused with 50
	// INVALID_TRANSACTION_TIMEOUT. 0 is DefaultTransactionMaxTimeout.
	TransactionMaxTimeout time.Duration
	// TransactionCheckInterval is how often the transaction coordinator
	// looks for transactions open past their timeout, to abort them
	// (Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms);
	// 0 is the coordinator's default, 10 seconds. The same scan expires
	// idle transactional ids.
	TransactionCheckInterval time.Duration
	// TransactionalIDExpiration is how long a transactional id may stay
	// idle (no transaction ongoing or being decided, no state change)
	// before the coordinator forgets it (Kafka's
	// transactional.id.expiration.ms); it comes back, if it does, with
	// a new producer id. 0 is DefaultTransactionalIDExpiration, 7 days;
	// negative is never.
	TransactionalIDExpiration time.Duration
}

// Server serves one logstore.Store over the Kafka protocol. Create it
// with New; it is safe for concurrent use.
type Server struct {
	store *logstore.Store
	cfg   Config
	log   *slog.Logger
	// repeats is log's handler, flushed at close (its held counts).
	repeats *repeatHandler
	cat     topicCatalog
	txn     *txncoord.Coordinator // transactional ids (opened by New)
	// groups is the group coordinator (groups.db; see groups.go).
	groups *groupcoord.Coordinator
	// openWindow is how many partitions of a produce request are
	// opened together before their appends (produce.go).
	openWindow int

	// ctx ends at Shutdown or Close: long-poll fetches return early.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	perIP     map[string]int // conns by remote address, with MaxConnectionsPerIP
	shutting  bool
	connsDone chan struct{} // closed once conns is empty while shutting
	doneSent  bool
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	budget *requestBudget // request bytes in flight (reqbudget.go)

	longPolls atomic.Int64 // fetches waiting for data
	// txnCalls counts the coordinator calls running in goroutines of
	// their own (EndTxn, InitProducerId, TxnOffsetCommit; txnCall),
	// which closeState waits for.
	txnCalls sync.WaitGroup
}

// New returns a server of store. It opens the store's topic catalog and
// its transaction coordinator (package txncoord, transactions.db at the
// store root: it finishes the transactions a crash left decided before
// New returns); the server does not own the store: close it after
// Shutdown or Close.
func New(store *logstore.Store, cfg Config) (*Server, error) {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.QueuedMaxRequestBytes <= 0 {
		cfg.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if len(cfg.SASLMechanisms) == 0 {
		cfg.SASLMechanisms = DefaultSASLMechanisms
	}
	for _, m := range cfg.SASLMechanisms {
		if !slices.Contains(DefaultSASLMechanisms, m) {
			return nil, fmt.Errorf("kafkaserver: SASL mechanism %q: want one of %v", m, DefaultSASLMechanisms)
		}
	}
	if cfg.AuthFailureDelay <= 0 {
		cfg.AuthFailureDelay = DefaultAuthFailureDelay
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RepeatLogInterval == 0 {
		cfg.RepeatLogInterval = DefaultRepeatLogInterval
	}
	repeats := newRepeatHandler(cfg.Logger.Handler(), cfg.RepeatLogInterval, time.Now)
	if cfg.TransactionMaxTimeout <= 0 {
		cfg.TransactionMaxTimeout = DefaultTransactionMaxTimeout
	}
	cat, err := openCatalog(store)
	if err != nil {
		return nil, fmt.Errorf("kafkaserver: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		store:      store,
		cfg:        cfg,
		log:        slog.New(repeats),
		repeats:    repeats,
		cat:        cat,
		ctx:        ctx,
		cancel:     cancel,
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*conn]struct{}),
		connsDone:  make(chan struct{}),
		perIP:      make(map[string]int),
		budget:     newRequestBudget(cfg.QueuedMaxRequestBytes),
		openWindow: produceOpenWindow(store.Options().MaxOpenPartitions),
	}
	if s.groups, err = s.openGroups(); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("kafkaserver: %w", err), cat.Close())
	}
	if s.txn, err = s.openCoordinator(cat); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("kafkaserver: %w", err), s.groups.Close(), cat.Close())
	}
	cfg.Metrics.WatchStore(store)
	cfg.Metrics.WatchGroups(s.groupStats)
	cfg.Metrics.WatchGroupLag(s.groupLag)
	cfg.Metrics.WatchOpenTransactions(s.openTransactions)
	return s, nil
}

// Serve accepts connections on ln and serves each in goroutines of its
// own, until Shutdown or Close, when it returns ErrServerClosed. It
// closes ln when it returns. Metadata tells its clients to dial
// Config.Advertise.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, ListenerConfig{Advertise: s.cfg.Advertise})
}

// ListenerConfig is what one listener serves its clients with.
type ListenerConfig struct {
	// Advertise is the host:port that Metadata, FindCoordinator and
	// DescribeCluster give its clients; "" is the address each
	// connected to.
	Advertise string
	// SASL makes each connection authenticate (SaslHandshake,
	// SaslAuthenticate; see sasl.go) before any request but
	// ApiVersions: Kafka's SASL_PLAINTEXT, and SASL_SSL over a TLS
	// listener.
	SASL bool
}

// ServeListener is Serve with lc: one server serves several listeners,
// each with its own advertised address and authentication, as Kafka's
// listeners and advertised.listeners do. A TLS listener
// (NewTLSListener, or tls.NewListener) is served as any other; each of its connections
// completes its handshake within TLSHandshakeTimeout before a request
// is read.
func (s *Server) ServeListener(ln net.Listener, lc ListenerConfig) error {
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isShutting() {
				return ErrServerClosed
			}
			if transientAccept(err) {
				// A failure that passes (as net/http handles it): out
				// of descriptors or buffers, or a connection reset
				// before it was accepted. The listener goes on.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("kafka accept failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("kafkaserver: accept: %w", err)
		}
		backoff = 0
		if _, err := s.serveConn(nc, lc); errors.Is(err, ErrServerClosed) {
			return ErrServerClosed
		}
	}
}

// transientAccept says whether an accept error passes with time: a
// timeout, running out of file descriptors or kernel memory (the
// connections waiting stay queued), or a connection aborted before
// it was accepted.
func transientAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// serveConn serves nc, a connection of a listener of lc, in goroutines
// of its own. It closes nc instead, with ErrServerClosed
// when the server is shutting down, or with errTooManyConnections
// (counted, and logged once per interval) when nc is one more than
// MaxConnections or MaxConnectionsPerIP allow.
func (s *Server) serveConn(nc net.Conn, lc ListenerConfig) (*conn, error) {
	c := newConn(s, nc)
	c.advertise = lc.Advertise
	c.sasl.required = lc.SASL
	c.accepted = time.Now()
	c.ip = remoteIP(nc)
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		nc.Close()
		return nil, ErrServerClosed
	}
	if err := s.admitLocked(c.ip); err != nil {
		s.mu.Unlock()
		s.cfg.Metrics.ConnectionRefused()
		s.log.Warn("kafka connection refused", "remote", nc.RemoteAddr().String(), "reason", err.Error())
		nc.Close()
		return nil, err
	}
	s.conns[c] = struct{}{}
	s.perIP[c.ip]++
	s.wg.Add(1)
	s.mu.Unlock()
	s.cfg.Metrics.ConnectionOpened()
	go c.serve()
	return c, nil
}

// errTooManyConnections is the error of a connection refused by
// MaxConnections or MaxConnectionsPerIP.
var errTooManyConnections = errors.New("too many connections")

// admitLocked says whether one more connection from ip is within the
// limits.
func (s *Server) admitLocked(ip string) error {
	if m := s.cfg.MaxConnections; m > 0 && len(s.conns) >= m {
		return fmt.Errorf("%w: %d open, the limit is %d (max connections)", errTooManyConnections, len(s.conns), m)
	}
	if m := s.cfg.MaxConnectionsPerIP; m > 0 && s.perIP[ip] >= m {
		return fmt.Errorf("%w: %d open from %s, the limit is %d (max connections per ip)", errTooManyConnections, s.perIP[ip], ip, m)
	}
	return nil
}

// remoteIP is the address nc's client connects from, without its port.
func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// numConns is the number of connections being served.
func (s *Server) numConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) isShutting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutting
}

// forget drops c once both its goroutines have ended.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	s.checkDoneLocked()
	s.mu.Unlock()
	s.cfg.Metrics.ConnectionClosed()
	s.wg.Done()
}

// checkDoneLocked closes connsDone when shutting down and no connection
// is left. The caller holds mu.
func (s *Server) checkDoneLocked() {
	if s.shutting && len(s.conns) == 0 && !s.doneSent {
		s.doneSent = true
		close(s.connsDone)
	}
}

// beginShutdown stops accepting and stops every connection's reader.
// It returns the channel closed when the last connection has ended.
func (s *Server) beginShutdown() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shutting {
		s.shutting = true
		s.cancel()
		for ln := range s.listeners {
			ln.Close()
		}
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.checkDoneLocked()
	return s.connsDone
}

// Shutdown stops accepting connections, stops reading requests, answers
// the requests already read (long-poll fetches answer at once with what
// they have), closes every connection, then the transaction coordinator
// and the catalog. It does not close the store. When ctx ends first, it closes the connections still open
// and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	done := s.beginShutdown()
	select {
	case <-done:
	case <-ctx.Done():
		s.closeConns()
		s.wg.Wait()
		return errors.Join(ctx.Err(), s.closeState())
	}
	s.wg.Wait()
	return s.closeState()
}

// Close closes the listeners and every connection at once, without
// answering what is in flight, then the transaction coordinator and the
// catalog. It does not close the store.
func (s *Server) Close() error {
	s.beginShutdown()
	s.closeConns()
	s.wg.Wait()
	return s.closeState()
}

func (s *Server) closeConns() {
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
}

// closeState closes the transaction coordinator (its timeout scan
// stops; it may take producer ids from the catalog until then), then the
// group coordinator (groups.db), then the catalog, once. The
// connections have ended, so no request starts a coordinator call any
// more. A call still running (an EndTxn, InitProducerId or
// TxnOffsetCommit whose answer Close does not wait for; txnCall) is
// waited for first, so that its markers are written before the caller
// closes the store.
func (s *Server) closeState() error {
	s.closeOnce.Do(func() {
		s.txnCalls.Wait()
		s.cfg.Metrics.WatchOpenTransactions(nil)
		s.closeErr = errors.Join(s.txn.Close(), s.groups.Close(), s.cat.Close())
		s.repeats.flush()
	})
	return s.closeErr
}
