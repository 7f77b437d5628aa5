// Package tlsconf is the TLS side of logstore serve's SSL listeners:
// a server certificate and key from PEM files, an optional CA bundle
// that client certificates are verified against, Kafka's
// ssl.client.auth (none, requested, required), and TLS 1.2 at least.
//
// The files are read again by Reload (serve calls it on SIGHUP, and
// when a file's modification time or size changes, which Watch looks
// for): new handshakes get the new certificate and CA bundle, and the
// connections already made keep theirs, so a certificate is rotated
// without a restart. A reload that fails (a missing file, a key that
// does not match its certificate, a bundle without a certificate)
// keeps the previous files' configuration and says why; Load, the
// first read, fails instead.
//
// The standard library's crypto/tls does the protocol; this package
// only reads files and chooses settings.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// ClientAuth is Kafka's ssl.client.auth.
type ClientAuth int

const (
	// ClientAuthNone asks for no client certificate.
	ClientAuthNone ClientAuth = iota
	// ClientAuthRequested asks for one and verifies it against the CA
	// bundle when the client sends one; a client without one is let in.
	ClientAuthRequested
	// ClientAuthRequired refuses a client without a certificate that
	// the CA bundle verifies.
	ClientAuthRequired
)

// ParseClientAuth reads Kafka's spelling: none, requested, required.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return ClientAuthNone, nil
	case "requested":
		return ClientAuthRequested, nil
	case "required":
		return ClientAuthRequired, nil
	}
	return 0, fmt.Errorf("ssl client auth %q: want none, requested or required", s)
}

func (a ClientAuth) String() string {
	switch a {
	case ClientAuthRequested:
		return "requested"
	case ClientAuthRequired:
		return "required"
	}
	return "none"
}

// Files are where a listener's TLS material is.
type Files struct {
	// CertFile holds the server's certificate chain (PEM), leaf first;
	// KeyFile its private key (PEM).
	CertFile, KeyFile string
	// CAFile holds the PEM certificates client certificates are
	// verified against; required unless ClientAuth is none.
	CAFile     string
	ClientAuth ClientAuth
}

// ErrNoCA is the error of a client auth other than none without a CA
// bundle to verify client certificates against.
var ErrNoCA = errors.New("a CA file is needed to verify client certificates")

// Server holds the TLS configuration of one or more listeners, and
// swaps it on Reload.
type Server struct {
	files Files

	mu      sync.Mutex
	current *tls.Config
	stamps  []stamp // what the files were when current was read
}

// stamp is a file's size and modification time, which Changed compares.
type stamp struct {
	size int64
	mod  time.Time
}

// Load reads the files and returns the Server serving them.
func Load(f Files) (*Server, error) {
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, errors.New("tls: a certificate file and a key file are both needed")
	}
	if f.ClientAuth != ClientAuthNone && f.CAFile == "" {
		return nil, fmt.Errorf("tls: ssl client auth %s: %w", f.ClientAuth, ErrNoCA)
	}
	s := &Server{files: f}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again; new handshakes use them. On an error
// the previous configuration stays.
func (s *Server) Reload() error {
	stamps := s.stat()
	cert, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: certificate %s, key %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// Full-size records from the first byte: Kafka's responses are
		// read whole, so the small first records that help a browser
		// render early only cost more records here.
		DynamicRecordSizingDisabled: true,
	}
	if s.files.CAFile != "" {
		pem, err := os.ReadFile(s.files.CAFile)
		if err != nil {
			return fmt.Errorf("tls: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls: CA file %s: no PEM certificate in it", s.files.CAFile)
		}
		cfg.ClientCAs = pool
	}
	switch s.files.ClientAuth {
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		cfg.ClientAuth = tls.NoClientCert
	}
	s.mu.Lock()
	s.current, s.stamps = cfg, stamps
	s.mu.Unlock()
	return nil
}

// Config is the tls.Config a listener serves with: each handshake takes
// the configuration the last successful Reload made.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.current, nil
		},
	}
}

// Changed says whether a file's size or modification time differs from
// when the configuration in use was read.
func (s *Server) Changed() bool {
	now := s.stat()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range now {
		if now[i] != s.stamps[i] {
			return true
		}
	}
	return false
}

// Watch reloads s on each signal from hup, and when Changed says a file
// changed (looked at every interval), until ctx ends. report gets each
// reload's outcome, nil when it worked. Files that failed to load are
// not tried again until they change again or a signal comes.
func (s *Server) Watch(ctx context.Context, every time.Duration, hup <-chan os.Signal, report func(error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var failed []stamp
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-tick.C:
			if !s.Changed() || slices.Equal(s.stat(), failed) {
				continue
			}
		}
		err := s.Reload()
		failed = nil
		if err != nil {
			failed = s.stat()
		}
		report(err)
	}
}

func (s *Server) stat() []stamp {
	var out []stamp
	for _, p := range []string{s.files.CertFile, s.files.KeyFile, s.files.CAFile} {
		var st stamp
		if p != "" {
			if fi, err := os.Stat(p); err == nil {
				st = stamp{fi.Size(), fi.ModTime()}
			}
		}
		out = append(out, st)
	}
	return out
}

// Principal is the name Kafka gives the client of a TLS connection: its
// certificate's subject as a distinguished name ("CN=app,O=acme"), or
// ANONYMOUS without a certificate.
func Principal(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return "ANONYMOUS"
	}
	return st.PeerCertificates[0].Subject.String()
}
