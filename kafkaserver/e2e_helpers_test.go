package kafkaserver_test

// The end-to-end harness of issue 13's wire tests: a server (in process,
// or `logstore serve` as a child process) over a store in a temporary
// directory, kgo's idempotent producer through a fault-injecting proxy
// (package internal/kafkatest), and after every run the two checks: a kgo
// consumer reading every partition from the start, and a scan of the
// store's files once the server is closed.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/metrics"
)

// e2eRecords is the workload's size: short mode shrinks it.
func e2eRecords() int {
	if testing.Short() {
		return 600
	}
	return 2000
}

// freeAddr returns a loopback host:port that was free a moment ago, for a
// server that must come back on the same port after a restart. It is
// taken below the kernel's ephemeral range (32768 and up on Linux; the
// file that says so is read when present), so that no outgoing
// connection of the test (a client, the proxy) is given that port as its
// own while the server is down.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(1024+rand.IntN(low-1024)))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// listenOn listens on addr, waiting a little (boundedly) for a port that
// the previous server of a restart has not released yet.
func listenOn(addr string) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// lockedBuffer is a log sink the server's goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// inProcess is a kafkaserver.Server over a store in dir, on a fixed
// address, that can be stopped (Shutdown, then the store closed) and
// started again on the same port.
type inProcess struct {
	t    *testing.T
	dir  string
	addr string
	opts logstore.Options
	cfg  kafkaserver.Config
	logs *lockedBuffer

	mu     sync.Mutex
	st     *logstore.Store
	srv    *kafkaserver.Server
	done   chan error
	starts int
}

func newInProcess(t *testing.T, opts logstore.Options, cfg kafkaserver.Config) *inProcess {
	t.Helper()
	return launch(t, freeAddr(t), opts, cfg)
}

// launch starts an in-process server on addr, stopped at the test's end.
func launch(t *testing.T, addr string, opts logstore.Options, cfg kafkaserver.Config) *inProcess {
	t.Helper()
	s := &inProcess{t: t, dir: t.TempDir(), addr: addr, opts: opts, cfg: cfg, logs: &lockedBuffer{}}
	if s.cfg.Metrics == nil {
		// One Metrics for every start, so the counts add up across
		// restarts.
		s.cfg.Metrics = metrics.New(nil)
		if s.opts.Events == nil {
			s.opts.Events = s.cfg.Metrics.StoreEvents()
		}
	}
	if s.cfg.Logger == nil {
		s.cfg.Logger = slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *inProcess) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := logstore.Open(s.dir, s.opts)
	if err != nil {
		return err
	}
	srv, err := kafkaserver.New(st, s.cfg)
	if err != nil {
		st.Close()
		return err
	}
	ln, err := listenOn(s.addr)
	if err != nil {
		srv.Close()
		st.Close()
		return err
	}
	s.st, s.srv, s.done = st, srv, make(chan error, 1)
	s.starts++
	go func(done chan error) { done <- srv.Serve(ln) }(s.done)
	return nil
}

// stop shuts the server down gracefully (answering what is in flight)
// and closes the store; it does nothing when stopped already.
func (s *inProcess) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, kafkaserver.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	err = errors.Join(err, s.st.Close())
	s.st, s.srv = nil, nil
	return err
}

// restart stops the server, calls between (when set) with the store
// directory, and starts it again on the same port.
func (s *inProcess) restart(between func(dir string)) error {
	if err := s.stop(); err != nil {
		return err
	}
	if between != nil {
		between(s.dir)
	}
	return s.start()
}

// outcome is the server's count of produced batches with outcome o
// (logstore_produce_batches_total), over every start.
func (s *inProcess) outcome(o metrics.Outcome) float64 {
	return s.cfg.Metrics.ProduceBatches(o)
}

// store returns the open store (nil while stopped).
func (s *inProcess) store() *logstore.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// behindProxy puts a new proxy in front of addr; the server must
// advertise the proxy's address.
func behindProxy(t *testing.T, addr string) *kafkatest.Proxy {
	t.Helper()
	p, err := kafkatest.NewProxy(kafkatest.ProxyConfig{Target: addr, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newProxied starts an in-process server that advertises a proxy in
// front of it.
func newProxied(t *testing.T, opts logstore.Options, cfg kafkaserver.Config) (*inProcess, *kafkatest.Proxy) {
	t.Helper()
	addr := freeAddr(t)
	p := behindProxy(t, addr)
	cfg.Advertise = p.Addr()
	return launch(t, addr, opts, cfg), p
}

// produce runs w against brokers (creating its topic of 3 partitions) and
// fails the test unless every record was acknowledged.
func produce(t *testing.T, brokers []string, w *kafkatest.Workload) *kafkatest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	w.Brokers = brokers
	w.CreateTopic = true
	if w.Records == 0 {
		w.Records = e2eRecords()
	}
	res, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.Acked != w.Records {
		t.Fatalf("acknowledged %d of %d records: %v", res.Acked, w.Records, res.Err)
	}
	return res
}

// consumeAndVerify checks res by consuming every partition through
// brokers, with no fault rules on p (when set).
func consumeAndVerify(t *testing.T, brokers []string, p *kafkatest.Proxy, res *kafkatest.Result) {
	t.Helper()
	if p != nil {
		p.SetRules(kafkatest.Rules{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := kafkatest.Consume(ctx, brokers, res.Topic, res.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	if err := kafkatest.Verify(res, found); err != nil {
		t.Fatalf("consumed: %v", err)
	}
	if len(found) != len(res.Records) {
		t.Fatalf("consumed %d records, produced %d", len(found), len(res.Records))
	}
}

// scanAndVerify checks res against the store's files in dir; no server
// may have the store open.
func scanAndVerify(t *testing.T, dir string, res *kafkatest.Result) {
	t.Helper()
	found, err := kafkatest.ScanStore(dir, res.Topic, res.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	if err := kafkatest.Verify(res, found); err != nil {
		t.Fatalf("scanned: %v", err)
	}
	if len(found) != len(res.Records) {
		t.Fatalf("scanned %d records, produced %d", len(found), len(res.Records))
	}
}

// checkBoth consumes through the running server, then stops it and scans
// its store.
func checkBoth(t *testing.T, s *inProcess, brokers []string, p *kafkatest.Proxy, res *kafkatest.Result) {
	t.Helper()
	consumeAndVerify(t, brokers, p, res)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	scanAndVerify(t, s.dir, res)
}
