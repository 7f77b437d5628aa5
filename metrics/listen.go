package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Endpoint is an HTTP server of Handler at /metrics, started by Listen.
type Endpoint struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Listen listens on addr (host:port; port 0 picks one) and serves the
// metrics at /metrics in a goroutine until Shutdown. Other paths answer
// 404.
func (m *Metrics) Listen(addr string) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	e := &Endpoint{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { e.done <- e.srv.Serve(ln) }()
	return e, nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() net.Addr { return e.ln.Addr() }

// Shutdown stops accepting scrapes, waits for those in flight until ctx
// ends (then closes them), and returns once the server has stopped.
func (e *Endpoint) Shutdown(ctx context.Context) error {
	err := e.srv.Shutdown(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = errors.Join(err, e.srv.Close())
	}
	if serveErr := <-e.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
