package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/testutil"
)

// readyListeners reads the NAME://HOST:PORT listeners of a ready line.
func readyListeners(t *testing.T, ready string) map[string]string {
	t.Helper()
	m := regexp.MustCompile(`^logstore serve: listening on (.+?), store `).FindStringSubmatch(ready)
	if m == nil {
		t.Fatalf("ready line %q", ready)
	}
	out := map[string]string{}
	for _, l := range strings.Fields(m[1]) {
		name, addr, ok := strings.Cut(l, "://")
		if !ok {
			t.Fatalf("ready line %q: listener %q", ready, l)
		}
		out[name] = addr
	}
	return out
}

// clientTLS trusts the PEM CAs in caFiles and, with certFile, presents
// that client certificate.
func clientTLS(t *testing.T, certFile, keyFile string, caFiles ...string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	for _, f := range caFiles {
		pem, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// newClient is a kgo client of addr, closed when the test ends.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// metadataPort is the broker port a Metadata request over cl answers.
func metadataPort(t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("metadata brokers %+v", resp.Brokers)
	}
	return resp.Brokers[0].Port
}

// topicExists asks over cl, without creating it.
func topicExists(t *testing.T, cl *kgo.Client, topic string) bool {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// produceAndConsume produces n records idempotently to topic over a
// client with opts, then reads them back over another.
func produceAndConsume(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newClient(t, addr, append(opts, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))...)
	for i := range n {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d over %s: %v", i, addr, err)
		}
	}
	c := newClient(t, addr, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	for got := 0; got < n; {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume over %s: %v", addr, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("v%d", got); string(r.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, r.Value, want)
			}
			got++
		})
	}
}

// TestServeSSLListener serves a PLAINTEXT and an SSL listener: kgo
// produces idempotently and consumes over TLS, Metadata answers each
// listener's clients with that listener's address, and a plaintext
// client of the SSL port is closed rather than answered.
func TestServeSSLListener(t *testing.T) {
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", t.TempDir(),
		"--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key)
	ls := readyListeners(t, srv.ready)
	tlsOpt := kgo.DialTLSConfig(clientTLS(t, "", "", ca.File))

	produceAndConsume(t, ls["SSL"], "over-tls", 50, tlsOpt)
	plain := newClient(t, ls["PLAINTEXT"])
	overTLS := newClient(t, ls["SSL"], tlsOpt)
	if got, want := metadataPort(t, overTLS), portOf(t, ls["SSL"]); got != want {
		t.Errorf("Metadata over SSL names port %d, want %d", got, want)
	}
	if got, want := metadataPort(t, plain), portOf(t, ls["PLAINTEXT"]); got != want {
		t.Errorf("Metadata over PLAINTEXT names port %d, want %d", got, want)
	}
	// What went in over TLS is the same log as over plaintext.
	produceAndConsume(t, ls["PLAINTEXT"], "over-plaintext", 5)
	if !topicExists(t, plain, "over-tls") {
		t.Error("over-tls is not seen over PLAINTEXT")
	}

	// A plaintext Kafka request to the SSL port is not a TLS hello: the
	// connection is closed.
	nc, err := net.Dial("tcp", ls["SSL"])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// ApiVersions v0: size 10, key 18, version 0, correlation id 1, an
	// empty client id.
	frame := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := nc.Read(buf)
	if err == nil && n > 4 && buf[0] != 0x15 { // 0x15: a TLS alert record
		t.Errorf("plaintext ApiVersions to the SSL port answered %x", buf[:n])
	}
	if !strings.Contains(srv.stderr.String(), "TLS handshake failed") {
		t.Errorf("no handshake failure logged; stderr:\n%s", srv.stderr.String())
	}
}

// TestServeSSLClientAuthRequired: with --ssl-client-auth required, a
// client certificate of the CA gets in; none, one of another CA, and an
// expired one are refused, and nothing they sent is written.
func TestServeSSLClientAuthRequired(t *testing.T) {
	serverCA := testutil.NewCA(t, "server-ca")
	clientCA := testutil.NewCA(t, "client-ca")
	otherCA := testutil.NewCA(t, "other-ca")
	cert, key := serverCA.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", t.TempDir(),
		"--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key,
		"--ssl-ca-file", clientCA.File, "--ssl-client-auth", "required")
	ls := readyListeners(t, srv.ready)

	goodCert, goodKey := clientCA.Issue(t, "app", testutil.CertOpts{Client: true})
	produceAndConsume(t, ls["SSL"], "authed", 10, kgo.DialTLSConfig(clientTLS(t, goodCert, goodKey, serverCA.File)))

	otherCert, otherKey := otherCA.Issue(t, "intruder", testutil.CertOpts{Client: true})
	expiredCert, expiredKey := clientCA.Issue(t, "old-app", testutil.CertOpts{Client: true, Expired: true})
	plain := newClient(t, ls["PLAINTEXT"])
	for _, tc := range []struct{ name, cert, key string }{
		{"no certificate", "", ""},
		{"another CA's certificate", otherCert, otherKey},
		{"an expired certificate", expiredCert, expiredKey},
	} {
		topic := strings.ReplaceAll(tc.name, " ", "-")
		topic = strings.ReplaceAll(topic, "'", "")
		cl := newClient(t, ls["SSL"], kgo.DialTLSConfig(clientTLS(t, tc.cert, tc.key, serverCA.File)),
			kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.RecordRetries(1), kgo.RetryTimeout(2*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
		cancel()
		if err == nil {
			t.Errorf("%s: produce over SSL succeeded", tc.name)
		}
		if topicExists(t, plain, topic) {
			t.Errorf("%s: topic %s was created", tc.name, topic)
		}
	}
}

// TestServeSSLReload: the SSL files rewritten while serve runs (a new
// certificate of another CA, as a rotation) are what the next
// handshake gets, without a restart, while a connection made before
// goes on; files that do not load keep the previous certificate.
func TestServeSSLReload(t *testing.T) {
	ca1, ca2 := testutil.NewCA(t, "ca-one"), testutil.NewCA(t, "ca-two")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	install := func(ca *testutil.CA) {
		c, k := ca.Issue(t, "logstore", testutil.CertOpts{})
		for from, to := range map[string]string{c: cert, k: key} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to+".tmp", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(to+".tmp", to); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(ca1)
	srv := serveInProcess(t, "--dir", t.TempDir(), "--listener", "SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key, "--ssl-reload-interval", "20ms")
	addr := readyListeners(t, srv.ready)["SSL"]
	trustBoth := clientTLS(t, "", "", ca1.File, ca2.File)
	issuer := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", addr, trustBoth)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Issuer.CommonName
	}
	if got := issuer(); got != "ca-one" {
		t.Fatalf("issuer %q, want ca-one", got)
	}
	before := newClient(t, addr, kgo.DialTLSConfig(trustBoth))
	metadataPort(t, before)

	install(ca2)
	waitUntil(t, 10*time.Second, "the new certificate served", func() bool { return issuer() == "ca-two" })
	metadataPort(t, before)

	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the failed reload logged", func() bool {
		return strings.Contains(srv.stderr.String(), "SSL files not reloaded")
	})
	if got := issuer(); got != "ca-two" {
		t.Errorf("after a failed reload the issuer is %q, want ca-two still", got)
	}
}

// waitUntil polls cond until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeListenerFlagsRefused: serve refuses, before it opens the
// store, listeners that would serve unauthenticated clients beyond
// loopback and listener flags that do not make sense together.
func TestServeListenerFlagsRefused(t *testing.T) {
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	ssl := []string{"--ssl-cert-file", cert, "--ssl-key-file", key}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "PLAINTEXT on every interface"},
		{[]string{"--listen", ":0"}, "PLAINTEXT on every interface"},
		{[]string{"--listen", "192.0.2.1:0"}, "PLAINTEXT on 192.0.2.1"},
		{append([]string{"--listener", "SSL://0.0.0.0:0"}, ssl...), "SSL on every interface"},
		{append([]string{"--listener", "SSL://[::]:0", "--ssl-ca-file", ca.File, "--ssl-client-auth", "requested"}, ssl...), "SSL on every interface"},
		{[]string{"--listener", "SASL_SSL://127.0.0.1:0"}, "needs --ssl-cert-file and --ssl-key-file"},
		{[]string{"--listener", "SSL://127.0.0.1:0"}, "needs --ssl-cert-file and --ssl-key-file"},
		{append([]string{"--listener", "SSL://127.0.0.1:0", "--ssl-client-auth", "required"}, ssl...), "needs --ssl-ca-file"},
		{append([]string{"--listen", "127.0.0.1:0"}, ssl...), "no SSL listener"},
		{[]string{"--listen", "127.0.0.1:0", "--listener", "PLAINTEXT://127.0.0.1:0"}, "give one form or the other"},
		{[]string{"--advertised-listener", "PLAINTEXT://h:1"}, "with --listen, use --advertise"},
		{[]string{"--listener", "SSL://127.0.0.1:0", "--ssl-cert-file", key, "--ssl-key-file", key}, "tls: certificate"},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		cmd := newServeCommand()
		cmd.SetArgs(append([]string{"--dir", dir}, tc.args...))
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: error %v, want one with %q", tc.args, err, tc.want)
			continue
		}
		if strings.Contains(tc.want, " on ") && !errors.Is(err, errUnauthenticated) {
			t.Errorf("serve %v: %v is not errUnauthenticated", tc.args, err)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("serve %v: refused, but it made the store %s", tc.args, dir)
		}
	}
}

// librdkafkaPy produces argv[2] records idempotently (argv: bootstrap,
// count, topic, then the client's security settings as a JSON object:
// SSL, SASL), then reads them back in a consumer group, and prints the
// values read, one per line. A refused authentication exits at once
// with "authentication failed".
const librdkafkaPy = `
import json, sys, time
from confluent_kafka import Producer, Consumer, KafkaError
bootstrap, n, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
auth_failed = []
def on_error(err):
    if err.code() == KafkaError._AUTHENTICATION:
        auth_failed.append(err)
conf = dict(json.loads(sys.argv[4]), **{"bootstrap.servers": bootstrap, "error_cb": on_error})
p = Producer(dict(conf, **{"enable.idempotence": True, "linger.ms": 5}))
errors = []
def done(err, msg):
    if err is not None:
        errors.append(err)
for i in range(n):
    p.produce(topic, value=("v%d" % i).encode(), partition=0, on_delivery=done)
deadline = time.time() + 30
while p.flush(0.2) != 0 and time.time() < deadline:
    if auth_failed:
        sys.exit("authentication failed: %s" % auth_failed[0])
if len(p) != 0 or errors:
    sys.exit("produce: %r" % (errors,))
c = Consumer(dict(conf, **{"group.id": topic + "-group", "auto.offset.reset": "earliest"}))
c.subscribe([topic])
got = 0
while got < n:
    m = c.poll(20)
    if m is None:
        sys.exit("consume: nothing in 20 s after %d records" % got)
    if m.error():
        sys.exit("consume: %s" % m.error())
    print(m.value().decode())
    got += 1
c.close()
`

// runLibrdkafka runs librdkafkaPy with py against bootstrap and returns
// the values it read, or its error with its stderr.
func runLibrdkafka(t *testing.T, py, bootstrap, topic string, n int, conf map[string]string) ([]string, error) {
	t.Helper()
	js, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", librdkafkaPy, bootstrap, strconv.Itoa(n), topic, string(js)).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return strings.Fields(string(out)), err
}

// checkValues fails the test unless got is v0 .. v(n-1) in order.
func checkValues(t *testing.T, got []string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("read %d records, want %d", len(got), n)
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%d", i); v != want {
			t.Fatalf("record %d: %q, want %q", i, v, want)
		}
	}
}

// TestServeSSLLibrdkafka: confluent-kafka-python (librdkafka, with
// OpenSSL) produces idempotently and consumes in a group over an SSL
// listener that requires client certificates, verifying the server's
// certificate and host name as it does by default.
func TestServeSSLLibrdkafka(t *testing.T) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it): skipping the librdkafka test", err)
	}
	serverCA, clientCA := testutil.NewCA(t, "server-ca"), testutil.NewCA(t, "client-ca")
	cert, key := serverCA.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", t.TempDir(), "--listener", "SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key,
		"--ssl-ca-file", clientCA.File, "--ssl-client-auth", "required",
		"--group-initial-rebalance-delay", "0s")
	addr := readyListeners(t, srv.ready)["SSL"]
	ccert, ckey := clientCA.Issue(t, "librdkafka", testutil.CertOpts{Client: true})
	const n = 200
	got, err := runLibrdkafka(t, py, addr, "ssl-topic", n, map[string]string{"security.protocol": "SSL",
		"ssl.ca.location": serverCA.File, "ssl.certificate.location": ccert, "ssl.key.location": ckey})
	if err != nil {
		t.Fatalf("%v\nserver stderr:\n%s", err, srv.stderr.String())
	}
	checkValues(t, got, n)
}
