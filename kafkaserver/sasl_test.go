package kafkaserver

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/users"
)

// startSASLServer serves a store with users alice (password "pencil",
// both SCRAM mechanisms) on a SASL listener, and returns the server and
// that listener's address.
func startSASLServer(t *testing.T) (*testServer, string) {
	t.Helper()
	return startSASLServerWith(t, nil)
}

// startSASLServerWith is startSASLServer with edit changing the
// server's Config, given the store, before the server starts.
func startSASLServerWith(t *testing.T, edit func(*Config, *logstore.Store)) (*testServer, string) {
	t.Helper()
	store, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	uf, err := users.Open(store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range users.Mechanisms {
		c, err := users.NewCredential(m, "pencil", users.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := uf.Update(context.Background(), func(us []users.User) ([]users.User, error) { return users.Set(us, "alice", c), nil }); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Users: uf, AuthFailureDelay: 10 * time.Millisecond, GroupInitialRebalanceDelay: -1}
	if edit != nil {
		edit(&cfg, store)
	}
	ts := startServerOn(t, store, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.srv.ServeListener(ln, ListenerConfig{SASL: true})
	return ts, ln.Addr().String()
}

// TestSASLKgo: kgo authenticates with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 and produces; a wrong password is refused with
// SASL_AUTHENTICATION_FAILED and writes nothing; a client that does not
// authenticate is closed at its first request but ApiVersions.
func TestSASLKgo(t *testing.T) {
	ts, addr := startSASLServer(t)
	ts.createTopic("t", 1)
	produce := func(m kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), m, kgo.DefaultProduceTopic("t"), kgo.RecordRetries(1), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	}
	good := map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "pencil"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "alice", Pass: "pencil"}.AsSha256Mechanism()),
		"SCRAM-SHA-512": kgo.SASL(scram.Auth{User: "alice", Pass: "pencil"}.AsSha512Mechanism()),
	}
	for name, m := range good {
		if err := produce(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]kgo.Opt{
		"PLAIN wrong password": kgo.SASL(plain.Auth{User: "alice", Pass: "pen"}.AsMechanism()),
		"SCRAM unknown user":   kgo.SASL(scram.Auth{User: "mallory", Pass: "pencil"}.AsSha256Mechanism()),
		"SCRAM wrong password": kgo.SASL(scram.Auth{User: "alice", Pass: "pen"}.AsSha512Mechanism()),
		"PLAIN someone else's": kgo.SASL(plain.Auth{Zid: "bob", User: "alice", Pass: "pencil"}.AsMechanism()),
	}
	for name, m := range bad {
		// A request, not a produce: kgo's producer retries a
		// connection that failed to authenticate until its context
		// ends, where a request returns the failure.
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), m)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if err := produce(kgo.ClientID("no-sasl")); err == nil {
		t.Error("a client without SASL produced")
	}
	part, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := part.DurableEnd(); got != 3 {
		t.Errorf("%d records written, want the 3 of the authenticated producers", got)
	}
	if !strings.Contains(ts.logs.String(), "kafka client failed to authenticate") {
		t.Errorf("no failed authentication logged:\n%s", ts.logs.String())
	}
	if strings.Contains(ts.logs.String(), "pen ") || strings.Contains(ts.logs.String(), "pencil") {
		t.Error("a password is in the log")
	}
}

// rawDial connects to addr with a raw client.
func rawDial(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawClient{t: t, nc: nc}
}

// TestSASLRawV0: after a v0 SaslHandshake, PLAIN's token goes raw (a
// size and its bytes, no request header) and is answered raw; then
// requests are served. A wrong token closes the connection.
func TestSASLRawV0(t *testing.T) {
	_, addr := startSASLServer(t)
	handshake := func(c *rawClient) {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = 0
		req.Mechanism = "PLAIN"
		if resp := c.do(req).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("handshake: error %d", resp.ErrorCode)
		}
	}
	rawToken := func(c *rawClient, token string) {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
		if _, err := c.nc.Write(append(b, token...)); err != nil {
			t.Fatal(err)
		}
	}
	c := rawDial(t, addr)
	handshake(c)
	rawToken(c, "\x00alice\x00pencil")
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil || binary.BigEndian.Uint32(hdr[:]) != 0 {
		t.Fatalf("the raw answer: % x, %v; want an empty token", hdr, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if resp := c.do(md).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("metadata after authenticating: %+v", resp.Brokers)
	}

	bad := rawDial(t, addr)
	handshake(bad)
	rawToken(bad, "\x00alice\x00pen")
	bad.expectClosed()
}

// TestSASLRefusesBeforeAuthentication: before it authenticates, a
// connection may send ApiVersions; Metadata closes it, as do a frame
// over 512 KiB and a SaslAuthenticate without a handshake; an unknown
// mechanism is answered UNSUPPORTED_SASL_MECHANISM with the list.
func TestSASLRefusesBeforeAuthentication(t *testing.T) {
	_, addr := startSASLServer(t)
	c := rawDial(t, addr)
	if resp := c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %d", resp.ErrorCode)
	}
	c.send(kmsg.NewPtrMetadataRequest())
	c.expectClosed()

	big := rawDial(t, addr)
	frame := binary.BigEndian.AppendUint32(nil, 600<<10)
	big.nc.Write(append(frame, make([]byte, 64)...))
	big.expectClosed()

	early := rawDial(t, addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 1
	auth.SASLAuthBytes = []byte("\x00alice\x00pencil")
	if resp := early.do(auth).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslAuthenticate before a handshake: error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
	}
	early.expectClosed()

	mech := rawDial(t, addr)
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = 1
	req.Mechanism = "GSSAPI"
	resp := mech.do(req).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN" {
		t.Errorf("GSSAPI: error %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
	}
}

// FuzzSASLTokens: any tokens as PLAIN's or as the first and second of
// SCRAM's are answered or refused, never a panic, and none of them
// authenticates (alice's password is not in the corpus).
func FuzzSASLTokens(f *testing.F) {
	f.Add(uint8(2), []byte("\x00alice\x00pen"), []byte{})
	f.Add(uint8(0), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add(uint8(1), []byte("n,,n=al=2Cice,r="), []byte(""))
	uf, err := users.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	cred, err := users.NewCredential(users.ScramSHA256, "a password no fuzzer guesses", users.MinIterations)
	if err != nil {
		f.Fatal(err)
	}
	if err := uf.Update(context.Background(), func(us []users.User) ([]users.User, error) { return users.Set(us, "alice", cred), nil }); err != nil {
		f.Fatal(err)
	}
	s := &Server{cfg: Config{Users: uf, SASLMechanisms: DefaultSASLMechanisms}, log: slog.New(slog.DiscardHandler)}
	client, server := net.Pipe()
	f.Cleanup(func() { client.Close(); server.Close() })
	f.Fuzz(func(t *testing.T, mech uint8, first, second []byte) {
		c := &conn{s: s, nc: server}
		c.sasl = saslState{required: true, mech: DefaultSASLMechanisms[int(mech)%len(DefaultSASLMechanisms)]}
		if _, err := c.saslStep(first); err == nil && !c.sasl.done {
			c.saslStep(second)
		}
		if c.sasl.done {
			t.Fatalf("%s authenticated with %q, %q", c.sasl.mech, first, second)
		}
	})
}
