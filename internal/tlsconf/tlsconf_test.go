package tlsconf_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/internal/tlsconf"
)

// serve accepts TLS connections on a loopback port with cfg, answering
// each with the principal of its client once the handshake is done, and
// returns the address.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				io.WriteString(c, tlsconf.Principal(tc.ConnectionState())+"\n")
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects to addr trusting ca, with the client certificate of
// certFile and keyFile when they are set, and returns the line the
// server answered (its view of the principal) and the server's
// certificate's serial number.
func dial(t *testing.T, addr string, ca *testutil.CA, certFile, keyFile string) (string, string, error) {
	t.Helper()
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		// Sent whatever CAs the server names (Go's client would send no
		// certificate of a CA the server does not name).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	serial := c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	b, err := io.ReadAll(c)
	if err != nil {
		return "", serial, err
	}
	if len(b) == 0 {
		return "", serial, errors.New("closed by the server")
	}
	return strings.TrimSpace(string(b)), serial, nil
}

// TestClientAuth: none lets any client in as ANONYMOUS; requested
// verifies a certificate given and lets one without in; required
// refuses a client without a certificate, with an expired one, or with
// one of another CA, and names a verified client by its subject.
func TestClientAuth(t *testing.T) {
	ca := testutil.NewCA(t, "test")
	other := testutil.NewCA(t, "other")
	cert, key := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	clientCert, clientKey := ca.Issue(t, "app", testutil.CertOpts{Client: true})
	expiredCert, expiredKey := ca.Issue(t, "old", testutil.CertOpts{Client: true, Expired: true})
	strangerCert, strangerKey := other.Issue(t, "stranger", testutil.CertOpts{Client: true})

	for _, tc := range []struct {
		auth                                 tlsconf.ClientAuth
		anonymous, client, expired, stranger string // "" means refused
	}{
		{tlsconf.ClientAuthNone, "ANONYMOUS", "ANONYMOUS", "ANONYMOUS", "ANONYMOUS"},
		{tlsconf.ClientAuthRequested, "ANONYMOUS", "CN=app,O=logstore tests", "", ""},
		{tlsconf.ClientAuthRequired, "", "CN=app,O=logstore tests", "", ""},
	} {
		t.Run(tc.auth.String(), func(t *testing.T) {
			srv, err := tlsconf.Load(tlsconf.Files{CertFile: cert, KeyFile: key, CAFile: ca.File, ClientAuth: tc.auth})
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, srv.Config())
			for _, c := range []struct {
				name, cert, key, want string
			}{
				{"no certificate", "", "", tc.anonymous},
				{"client certificate", clientCert, clientKey, tc.client},
				{"expired certificate", expiredCert, expiredKey, tc.expired},
				{"another CA's certificate", strangerCert, strangerKey, tc.stranger},
			} {
				got, _, err := dial(t, addr, ca, c.cert, c.key)
				if c.want == "" && err == nil {
					t.Errorf("%s: let in as %q, want refused", c.name, got)
				}
				if c.want != "" && (err != nil || got != c.want) {
					t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
				}
			}
		})
	}
}

// TestMinVersion: a client that offers at most TLS 1.1 is refused.
func TestMinVersion(t *testing.T) {
	ca := testutil.NewCA(t, "test")
	cert, key := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	srv, err := tlsconf.Load(tlsconf.Files{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv.Config())
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11})
	if err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 client got in")
	}
}

// TestReload: a certificate replaced on disk is served to the next
// handshake after Reload (Watch's tick or signal); a reload of files
// that do not load keeps the previous certificate and says why.
func TestReload(t *testing.T) {
	ca := testutil.NewCA(t, "test")
	cert, key := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	srv, err := tlsconf.Load(tlsconf.Files{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv.Config())
	_, first, err := dial(t, addr, ca, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if srv.Changed() {
		t.Fatal("Changed before any file changed")
	}

	// A new certificate written over the files: Watch's tick sees it.
	newCert, newKey := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	copyFile(t, newCert, cert)
	copyFile(t, newKey, key)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	reports := make(chan error, 10)
	go srv.Watch(ctx, 10*time.Millisecond, hup, func(err error) { reports <- err })
	if err := waitReport(t, reports); err != nil {
		t.Fatalf("reload: %v", err)
	}
	_, second, err := dial(t, addr, ca, "", "")
	if err != nil || second == first {
		t.Fatalf("after the reload: serial %s (before %s), %v", second, first, err)
	}

	// A key that is not the certificate's: refused, the served one kept.
	_, strayKey := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	copyFile(t, strayKey, key)
	if err := waitReport(t, reports); err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("reload of a mismatched key: %v, want an error naming %s", err, key)
	}
	if _, third, err := dial(t, addr, ca, "", ""); err != nil || third != second {
		t.Fatalf("after the failed reload: serial %s (want %s kept), %v", third, second, err)
	}
	// The same broken files are not tried again on every tick; a
	// signal tries them again.
	select {
	case err := <-reports:
		t.Fatalf("the broken files were reloaded again without a change: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	hup <- os.Interrupt
	if err := waitReport(t, reports); err == nil {
		t.Fatal("the signal's reload of the broken files worked")
	}
}

func waitReport(t *testing.T, reports chan error) error {
	t.Helper()
	select {
	case err := <-reports:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10 s")
		return nil
	}
}

// copyFile writes src's bytes over dst, with a modification time a
// second on, so that a change within the file system's time resolution
// is seen.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	// Written aside, its time set, then renamed over dst: a watcher
	// ticking meanwhile sees the old file or the new one, never the
	// new bytes with a time still to change (two changes, two reloads).
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mod := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(tmp, mod, mod); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// TestLoadErrors: what Load refuses, each with a clear error.
func TestLoadErrors(t *testing.T) {
	ca := testutil.NewCA(t, "test")
	cert, key := ca.Issue(t, "127.0.0.1", testutil.CertOpts{})
	for _, tc := range []struct {
		name  string
		files tlsconf.Files
		want  string
	}{
		{"no key", tlsconf.Files{CertFile: cert}, "both needed"},
		{"missing certificate", tlsconf.Files{CertFile: cert + ".gone", KeyFile: key}, cert + ".gone"},
		{"client auth without a CA", tlsconf.Files{CertFile: cert, KeyFile: key, ClientAuth: tlsconf.ClientAuthRequired}, "CA file is needed"},
		{"a CA file without certificates", tlsconf.Files{CertFile: cert, KeyFile: key, CAFile: key, ClientAuth: tlsconf.ClientAuthRequired}, "no PEM certificate"},
	} {
		if _, err := tlsconf.Load(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := tlsconf.Load(tlsconf.Files{CertFile: cert, KeyFile: key, ClientAuth: tlsconf.ClientAuthRequested}); !errors.Is(err, tlsconf.ErrNoCA) {
		t.Errorf("requested without a CA: %v, want ErrNoCA", err)
	}
	for _, s := range []string{"none", "requested", "required"} {
		if a, err := tlsconf.ParseClientAuth(s); err != nil || a.String() != s {
			t.Errorf("ParseClientAuth(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := tlsconf.ParseClientAuth("sometimes"); err == nil {
		t.Error("ParseClientAuth accepted sometimes")
	}
}
