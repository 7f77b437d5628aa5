package main

// The sasl_ssl cells: each client under test dials a SASL_SSL listener
// of the cell's server (a CA and a server certificate made for the cell,
// a user added with `logstore users add` before the server starts),
// produces idempotently (acks=all), reads the records back in a
// consumer group that commits, logs in with the other mechanisms where
// that is cheap, and is refused with a wrong password. The checkers
// (kgo) use the server's PLAINTEXT listener behind the proxy: the
// proxy frames Kafka requests, so it cannot carry TLS, and the clients
// under test dial the SASL_SSL listener directly (no faults, and no
// request versions in the report: the proxy never sees their bytes).

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	xdgscram "github.com/xdg-go/scram"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/kafkatest"
)

func init() {
	cellSets = append(cellSets, saslCells)
}

// saslCells: one sasl_ssl cell per client of the produce matrix, at its
// newest version row.
func saslCells() []Cell {
	confluent := saslCell(confluentClient, "default", func(ctx context.Context, e *Env) Result {
		if _, err := kafkaclients.ConfluentPython(); err != nil {
			return unavailable("%v", err)
		}
		return confluentSASLSSL(ctx, e)
	})
	kcat := saslCell(kcatClient, "default", func(ctx context.Context, e *Env) Result {
		path, err := kafkaclients.Kcat()
		if err != nil {
			return unavailable("%v", err)
		}
		return kcatSASLSSL(ctx, e, path)
	})
	js := saslCell(kafkajsClient, "default", func(ctx context.Context, e *Env) Result {
		_, _, v, err := kafkaclients.Kafkajs(e.NodeModules)
		if err != nil {
			return unavailable("%v", err)
		}
		clientInfos[kafkajsInfo].Version = "kafkajs " + v
		return kafkajsSASLSSL(ctx, e)
	})
	newestKgo := kgoVersions()[len(kgoVersions())-1]
	newestSarama := saramaVersions()[len(saramaVersions())-1]
	return []Cell{
		saslCell(kgoClient, newestKgo.name, func(ctx context.Context, e *Env) Result { return kgoSASLSSL(ctx, e, newestKgo) }),
		saslCell(saramaClient, newestSarama.name, func(ctx context.Context, e *Env) Result { return saramaSASLSSL(ctx, e, newestSarama) }),
		confluent, kcat, js,
	}
}

// SASLSSL is the SASL_SSL listener of a cell whose Cell.SASLSSL is set,
// and what a client needs to log in to it.
type SASLSSL struct {
	Addr     string // the listener's host:port (from the ready line), dialed directly
	CAFile   string // PEM of the CA that signed the server's certificate
	User     string
	Password string // random, per cell

	certFile, keyFile string
}

// The user's name, its mechanisms (`logstore users add --mechanism`;
// PLAIN logins are checked against the same credential) and the topic
// a client with a wrong password tries to produce to: it must not
// exist afterwards (the server creates a topic a producer names).
const (
	saslUser       = "compat"
	saslTopic      = "sasl"
	saslRefused    = "refused"
	saslPartitions = 3
	scramSHA256    = "SCRAM-SHA-256"
	scramSHA512    = "SCRAM-SHA-512"
	saslPlain      = "PLAIN"
)

// saslOthers are the mechanisms a cell logs in with besides SCRAM-SHA-256.
var saslOthers = []string{scramSHA512, saslPlain}

// newSASLSSL makes a CA and a server certificate for 127.0.0.1 in
// root/tls, and adds the user, with a random password, to the store
// directory dir (created) with `logstore users add`.
func newSASLSSL(bin, root, dir string) (*SASLSSL, error) {
	tdir := filepath.Join(root, "tls")
	if err := os.Mkdir(tdir, 0o700); err != nil {
		return nil, err
	}
	s := &SASLSSL{User: saslUser, CAFile: filepath.Join(tdir, "ca.pem"),
		certFile: filepath.Join(tdir, "server.pem"), keyFile: filepath.Join(tdir, "server-key.pem")}
	if err := writeCerts(s.CAFile, s.certFile, s.keyFile); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	pw := make([]byte, 12)
	rand.Read(pw)
	s.Password = hex.EncodeToString(pw)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "users", "add", s.User, "--dir", dir, "--mechanism", scramSHA256+","+scramSHA512)
	cmd.Stdin = strings.NewReader(s.Password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("logstore users add: %w: %s", err, out)
	}
	return s, nil
}

// writeCerts writes a new CA's certificate and a server certificate
// (127.0.0.1 and localhost) it signed, with its key, as PEM files.
func writeCerts(caFile, certFile, keyFile string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "logstore compat CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "logstore"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", der}, {keyFile, "PRIVATE KEY", kder}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// serverArgs are serve's listener flags: PLAINTEXT for the checkers,
// advertised as the proxy's address, and SASL_SSL, advertised as the
// address its clients dialed.
func (s *SASLSSL) serverArgs(proxy string) []string {
	return []string{
		"--listener", "PLAINTEXT://127.0.0.1:0", "--advertised-listener", "PLAINTEXT://" + proxy,
		"--listener", "SASL_SSL://127.0.0.1:0",
		"--ssl-cert-file", s.certFile, "--ssl-key-file", s.keyFile,
		"--sasl-enabled-mechanisms", strings.Join([]string{scramSHA256, scramSHA512, saslPlain}, ","),
	}
}

// readyListeners takes the SASL_SSL address of a ready line's listeners
// ("PLAINTEXT://HOST:PORT SASL_SSL://HOST:PORT") and returns the
// PLAINTEXT one.
func (s *SASLSSL) readyListeners(at string) (string, error) {
	ls := map[string]string{}
	for _, l := range strings.Fields(at) {
		if name, addr, ok := strings.Cut(l, "://"); ok {
			ls[name] = addr
		}
	}
	if ls["PLAINTEXT"] == "" || ls["SASL_SSL"] == "" {
		return "", fmt.Errorf("listeners %q: no PLAINTEXT and SASL_SSL", at)
	}
	s.Addr = ls["SASL_SSL"]
	return ls["PLAINTEXT"], nil
}

// TLSConfig trusts the cell's CA alone.
func (s *SASLSSL) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(s.CAFile); err == nil {
		pool.AppendCertsFromPEM(b)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// wrong is a password that is not the user's.
func (s *SASLSSL) wrong() string { return s.Password + "-wrong" }

// rdkConfig are librdkafka's settings for SASL_SSL with the mechanism
// and password.
func (s *SASLSSL) rdkConfig(mechanism, password string) map[string]any {
	return map[string]any{
		"security.protocol": "SASL_SSL", "ssl.ca.location": s.CAFile,
		"sasl.mechanisms": mechanism, "sasl.username": s.User, "sasl.password": password,
	}
}

// saslCell is a sasl_ssl cell of client at version.
func saslCell(client, version string, run func(context.Context, *Env) Result) Cell {
	return Cell{Client: client, Version: version, Feature: FeatureSASLSSL, SASLSSL: true,
		Run: func(ctx context.Context, e *Env) Result {
			if e.SASL == nil {
				return fail("the cell's server has no SASL_SSL listener")
			}
			return run(ctx, e)
		}}
}

// authFailed says whether a client's report of a login with a wrong
// password names the server's refusal: SASL_AUTHENTICATION_FAILED
// (error 58) as the client words it, or the error message the server
// sends with it ("authentication failed: invalid username or
// password").
func authFailed(said string) bool {
	return strings.Contains(said, "SASL_AUTHENTICATION_FAILED") || strings.Contains(said, "invalid username or password") ||
		strings.Contains(strings.ToLower(said), "sasl authentication failed")
}

// checkSASL judges a sasl_ssl cell once the client has produced res
// idempotently over SASL_SSL, read (its group consumer's records, each
// committed) and been refused with a wrong password (refused: what it
// said). Every record acknowledged and read once, at its acknowledged
// offset; the group's committed offsets, fetched back, every
// partition's end (CheckGroup); a kgo consumer and the store scan agree,
// producer ids and sequences included (VerifyProduce, which stops the
// server); and the refused client's topic is nowhere in the store.
// how says how the client logged in, for the detail.
func (e *Env) checkSASL(ctx context.Context, group string, res *kafkatest.Result, read []kafkatest.Found, refused, how string) Result {
	if err := allAcked(res); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	if !authFailed(refused) {
		return fail("with a wrong password the client did not report an authentication failure: %s", tail(refused, 300))
	}
	if err := kafkatest.Verify(res, read); err != nil {
		return fail("read back over SASL_SSL by the group consumer: %v", err)
	}
	if _, err := e.CheckGroup(ctx, group, res, [][]kafkatest.Found{read}); err != nil {
		return fail("%v", err)
	}
	if _, err := e.VerifyProduce(ctx, res); err != nil {
		return fail("%v", err)
	}
	if dirs, _ := filepath.Glob(filepath.Join(e.Dir, saslRefused+"-*")); len(dirs) > 0 {
		return fail("the client refused with a wrong password wrote to the store: %d partitions of topic %s", len(dirs), saslRefused)
	}
	return pass("%s; %d records produced idempotently (acks=all) and read back by a group consumer that committed, once each at their acknowledged offsets; the committed offsets fetched back are every partition's end, and a kgo consumer and the store scan agree (sequences contiguous, %s); a wrong password was refused (%q) and wrote nothing",
		how, res.Acked, e.segments(res.Topic), refusal(refused))
}

// refusal is the part of a client's report of a refused login from
// where it names the failure, on one line.
func refusal(said string) string {
	lower := strings.ToLower(said)
	start := len(said)
	for _, m := range []string{"kafkajssaslauthenticationerror", "sasl_authentication_failed", "sasl authentication"} {
		if i := strings.Index(lower, m); i >= 0 && i < start {
			start = i
		}
	}
	if start == len(said) {
		start = 0
	}
	return tail(said[start:], 240)
}

// kgoMechanism is franz-go's mechanism of name with the user and password.
func kgoMechanism(name, user, password string) sasl.Mechanism {
	switch name {
	case scramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	case saslPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	}
	return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
}

// kgoSASLSSL: kgo's idempotent producer (kafkatest.Workload, acks=all)
// over SASL_SSL with SCRAM-SHA-256 (kgo.DialTLSConfig, kgo.SASL); a kgo
// group consumer reads the records back and commits; a Metadata request
// with SCRAM-SHA-512 and one with PLAIN; a producer with a wrong password
// must fail with SASL_AUTHENTICATION_FAILED. Then checkSASL.
func kgoSASLSSL(ctx context.Context, e *Env, v kgoVersion) Result {
	const group = "compat-kgo-sasl"
	s := e.SASL
	if err := e.CreateTopic(ctx, saslTopic, saslPartitions); err != nil {
		return fail("%v", err)
	}
	login := func(mechanism, password string) []kgo.Opt {
		return append(v.opts(), kgo.DialTLSConfig(s.TLSConfig()), kgo.SASL(kgoMechanism(mechanism, s.User, password)))
	}
	w := &kafkatest.Workload{Brokers: []string{s.Addr}, Topic: saslTopic, Partitions: saslPartitions, Records: kgoRecords, MaxBuffered: 16,
		Opts: append(login(scramSHA256, s.Password), kgo.RequiredAcks(kgo.AllISRAcks()))}
	res, err := w.Run(ctx)
	if err != nil {
		return fail("%v", err)
	}
	if err := allAcked(res); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	read, err := kgoGroupRead(ctx, s.Addr, group, saslTopic, res.Acked, login(scramSHA256, s.Password))
	if err != nil {
		return fail("group consumer over SASL_SSL: %v", err)
	}
	for _, m := range saslOthers {
		if err := kgoLogin(ctx, s.Addr, login(m, s.Password)); err != nil {
			return fail("a Metadata request over SASL_SSL with %s: %v", m, err)
		}
	}
	err = kgoLogin(ctx, s.Addr, append(login(scramSHA256, s.wrong()), kgo.DefaultProduceTopic(saslRefused), kgo.AllowAutoTopicCreation()))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		return fail("a producer with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	return e.checkSASL(ctx, group, res, read, err.Error(), "kgo: SCRAM-SHA-256 (Metadata requests with SCRAM-SHA-512 and PLAIN too)")
}

// kgoLogin is a kgo client with opts that produces one record when opts
// name a default topic, and sends a Metadata request otherwise; its
// error.
func kgoLogin(ctx context.Context, addr string, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr), kgo.RecordDeliveryTimeout(2*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if cl.OptValue(kgo.DefaultProduceTopic) != "" {
		return cl.ProduceSync(lctx, &kgo.Record{Value: []byte("refused?")}).FirstErr()
	}
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(lctx, cl)
	return err
}

// kgoGroupRead reads want records of topic with a kgo consumer of group
// (auto commit off), commits them, and leaves the group.
func kgoGroupRead(ctx context.Context, addr, group, topic string, want int, opts []kgo.Opt) ([]kafkatest.Found, error) {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var read []kafkatest.Found
	for len(read) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%d of %d records read: %w", len(read), want, err)
		}
		if err := fs.Err0(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			read = append(read, kafkatest.Found{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), ProducerID: r.ProducerID, Epoch: r.ProducerEpoch, Sequence: -1})
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	cl.LeaveGroup()
	return read, nil
}

// saramaSCRAM is sarama's SCRAMClient over github.com/xdg-go/scram.
type saramaSCRAM struct {
	hash xdgscram.HashGeneratorFcn
	conv *xdgscram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *saramaSCRAM) Done() bool                            { return c.conv.Done() }

// saramaSASL sets cfg up for SASL_SSL with the mechanism and password.
func saramaSASL(cfg *sarama.Config, s *SASLSSL, mechanism, password string) {
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = s.TLSConfig()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.User, cfg.Net.SASL.Password = s.User, password
	cfg.Net.SASL.Mechanism = sarama.SASLMechanism(mechanism)
	switch mechanism {
	case scramSHA256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xdgscram.SHA256} }
	case scramSHA512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xdgscram.SHA512} }
	}
}

// saramaSASLSSL: sarama's idempotent SyncProducer (acks=all) over
// SASL_SSL with SCRAM-SHA-256 (Net.TLS, Net.SASL with a
// SCRAMClientGeneratorFunc over xdg-go/scram); one sarama ConsumerGroup
// member reads the records back and commits (its session's Cleanup);
// clients log in with SCRAM-SHA-512 and PLAIN; a producer with a wrong
// password must fail with SASL_AUTHENTICATION_FAILED. Then checkSASL.
func saramaSASLSSL(ctx context.Context, e *Env, v saramaVersion) Result {
	const group = "compat-sarama-sasl"
	s := e.SASL
	brokers := []string{s.Addr}
	if err := e.CreateTopic(ctx, saslTopic, saslPartitions); err != nil {
		return fail("%v", err)
	}
	pcfg := v.config()
	idempotent(pcfg)
	saramaSASL(pcfg, s, scramSHA256, s.Password)
	res, err := saramaSend(ctx, pcfg, brokers, saslTopic, saslPartitions, saramaRecords, saramaWindow, saslTopic)
	if err != nil {
		return fail("%v", err)
	}
	if err := allAcked(res); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	ccfg := v.config()
	ccfg.Consumer.Group.Session.Timeout = 3 * time.Second
	ccfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	saramaSASL(ccfg, s, scramSHA256, s.Password)
	var (
		mu     sync.Mutex
		values = map[string]bool{}
		errs   []error
	)
	m, err := startSaramaMember(ctx, brokers, ccfg, 1, group, saslTopic, &mu, values, &errs)
	if err != nil {
		return fail("%v", err)
	}
	werr := waitUntil(ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(values) >= res.Acked || len(errs) > 0
	})
	lerr := m.leave()
	mu.Lock()
	gerr := errors.Join(errs...)
	read := m.read
	mu.Unlock()
	if err := errors.Join(gerr, werr, lerr); err != nil {
		return fail("group consumer over SASL_SSL (%d of %d records read): %v", len(read), res.Acked, err)
	}
	// sarama's ConsumerMessage does not say the producer id: 0 and
	// Sequence -1 leave kafkatest.Verify's producer checks out.
	for i := range read {
		read[i].ProducerID = 0
	}
	for _, mech := range saslOthers {
		cfg := v.config()
		saramaSASL(cfg, s, mech, s.Password)
		cl, err := sarama.NewClient(brokers, cfg)
		if err != nil {
			return fail("a sarama client over SASL_SSL with %s: %v", mech, err)
		}
		cl.Close()
	}
	cfg := v.config()
	cfg.Metadata.Retry.Max = 1
	saramaSASL(cfg, s, scramSHA256, s.wrong())
	p, err := sarama.NewSyncProducer(brokers, cfg)
	if err == nil {
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: saslRefused, Value: sarama.StringEncoder("refused?")})
		p.Close()
	}
	if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		return fail("a producer with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	return e.checkSASL(ctx, group, res, read, err.Error(), "sarama: SCRAM-SHA-256 (clients with SCRAM-SHA-512 and PLAIN too)")
}

// loginResult is a driver's answer to one login attempt.
type loginResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// loginResults are the results of a login run of n attempts.
func loginResults(run *driverRun, n int) ([]loginResult, error) {
	var rs []loginResult
	for _, l := range run.Lines {
		if l.Result == nil {
			continue
		}
		var r loginResult
		if err := json.Unmarshal(l.Result, &r); err != nil {
			return nil, fmt.Errorf("login result %s: %w", l.Result, err)
		}
		rs = append(rs, r)
	}
	if len(rs) != n {
		return nil, fmt.Errorf("%d login results, want %d; stderr: %s", len(rs), n, tail(run.Stderr, 400))
	}
	return rs, nil
}

// saslAttempts are the login attempts of a driver: one per other
// mechanism (nothing produced), then SCRAM-SHA-256 with a wrong password,
// producing to saslRefused; cfg makes an attempt's settings.
func saslAttempts(s *SASLSSL, cfg func(mechanism, password string) any) []map[string]any {
	var as []map[string]any
	for _, m := range saslOthers {
		as = append(as, cfg(m, s.Password).(map[string]any))
	}
	refused := cfg(scramSHA256, s.wrong()).(map[string]any)
	refused["topic"] = saslRefused
	return append(as, refused)
}

// checkLogins checks a driver's answers to saslAttempts: the other
// mechanisms logged in, the wrong password did not; it returns what the
// client said of the wrong password.
func checkLogins(run *driverRun) (string, error) {
	rs, err := loginResults(run, len(saslOthers)+1)
	if err != nil {
		return "", err
	}
	for i, m := range saslOthers {
		if !rs[i].OK {
			return "", fmt.Errorf("a login with %s: %s", m, rs[i].Error)
		}
	}
	r := rs[len(saslOthers)]
	if r.OK {
		return "", errors.New("a producer with a wrong password was let in: its record was delivered")
	}
	return r.Error, nil
}

// confluentSASLSSL: the driver's idempotent producer (acks all) over
// SASL_SSL with SCRAM-SHA-256 (security.protocol, sasl.mechanisms,
// ssl.ca.location), its group consumer (subscribe, a synchronous commit
// of each record), producers that list the topics with SCRAM-SHA-512 and
// PLAIN, and one with a wrong password, which must report an
// authentication failure (error_cb). Then checkSASL.
func confluentSASLSSL(ctx context.Context, e *Env) Result {
	const group = "compat-confluent-sasl"
	s := e.SASL
	if err := e.CreateTopic(ctx, saslTopic, saslPartitions); err != nil {
		return fail("%v", err)
	}
	res := newResult(saslTopic, saslPartitions, rdkRecords, "py")
	pconf := s.rdkConfig(scramSHA256, s.Password)
	pconf["enable.idempotence"] = true
	run, err := runConfluent(ctx, e, "produce", map[string]any{"bootstrap": s.Addr, "topic": res.Topic, "records": specs(res.Records), "config": pconf})
	if err != nil {
		return fail("%v", err)
	}
	if err := applyAcks(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	if err := allAcked(res); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	run, err = runConfluent(ctx, e, "subscribe", map[string]any{"bootstrap": s.Addr, "topic": res.Topic, "group": group, "want": res.Acked,
		"config": s.rdkConfig(scramSHA256, s.Password)})
	if err != nil {
		return fail("group consumer over SASL_SSL: %v", err)
	}
	read := foundOf(run.Lines)
	attempts := saslAttempts(s, func(m, pw string) any { return map[string]any{"config": s.rdkConfig(m, pw)} })
	run, err = runConfluent(ctx, e, "login", map[string]any{"bootstrap": s.Addr, "attempts": attempts})
	if err != nil {
		return fail("%v", err)
	}
	refused, err := checkLogins(run)
	if err != nil {
		return fail("%v", err)
	}
	return e.checkSASL(ctx, group, res, read, refused, "confluent-kafka-python: SCRAM-SHA-256 (SCRAM-SHA-512 and PLAIN listed the topics too)")
}

// kcatSASL are kcat's -X settings for SASL_SSL.
func kcatSASL(s *SASLSSL, mechanism, password string) []string {
	var xs []string
	for k, v := range s.rdkConfig(mechanism, password) {
		xs = append(xs, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(xs)
	return xs
}

// kcatSASLSSL: kcat -P -X enable.idempotence=true over SASL_SSL with
// SCRAM-SHA-256 (one run per partition, as kcatSend), read back by
// kcat -G (a group consumer, -e: until every partition's end, auto
// commit every 100 ms and on close); kcat -L with SCRAM-SHA-512 and with
// PLAIN; kcat -P with a wrong password must fail with an authentication
// failure. Then checkSASL.
func kcatSASLSSL(ctx context.Context, e *Env, kcat string) Result {
	const group = "compat-kcat-sasl"
	s := e.SASL
	if err := e.CreateTopic(ctx, saslTopic, saslPartitions); err != nil {
		return fail("%v", err)
	}
	res := newResult(saslTopic, saslPartitions, rdkRecords, "kcat")
	if err := kcatSendTo(ctx, e, kcat, s.Addr, res, append(kcatSASL(s, scramSHA256, s.Password), "enable.idempotence=true")...); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	args := append([]string{"-b", s.Addr, "-G", group, "-e", "-q", "-u", "-J", "-m", "30"},
		kcatArgs(append(kcatSASL(s, scramSHA256, s.Password), "auto.offset.reset=earliest", "enable.auto.commit=true",
			"auto.commit.interval.ms=100", "session.timeout.ms=6000", "heartbeat.interval.ms=200")...)...)
	cmd, stderr := kcatCommand(ctx, e, kcat, append(args, saslTopic)...)
	out, err := cmd.Output()
	if err != nil {
		return fail("kcat -G over SASL_SSL: %v; stderr: %s", err, tail(stderr.String(), 800))
	}
	read, err := parseKcatJSON(out, nil)
	if err != nil {
		return fail("kcat -G: %v", err)
	}
	for _, m := range saslOthers {
		cmd, stderr := kcatCommand(ctx, e, kcat, append([]string{"-L", "-b", s.Addr, "-m", "10"}, kcatArgs(kcatSASL(s, m, s.Password)...)...)...)
		if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), saslTopic) {
			return fail("kcat -L over SASL_SSL with %s: %v; stdout: %s; stderr: %s", m, err, tail(string(out), 300), tail(stderr.String(), 600))
		}
	}
	cmd, stderr = kcatCommand(ctx, e, kcat, append([]string{"-P", "-b", s.Addr, "-t", saslRefused, "-m", "10"}, kcatArgs(kcatSASL(s, scramSHA256, s.wrong())...)...)...)
	cmd.Stdin = strings.NewReader("refused?\n")
	if err := cmd.Run(); err == nil && !authFailed(stderr.String()) {
		return fail("kcat -P with a wrong password exited 0 and reported no authentication failure: %s", tail(stderr.String(), 600))
	}
	refused := stderr.String()
	for line := range strings.Lines(refused) {
		if authFailed(line) {
			refused = line
			break
		}
	}
	return e.checkSASL(ctx, group, res, read, refused, "kcat: SCRAM-SHA-256 (kcat -L with SCRAM-SHA-512 and PLAIN too)")
}

// kafkajsSASLSSL: the driver's idempotent producer (acks -1,
// maxInFlightRequests 1) over SASL_SSL (ssl: {ca}, sasl: scram-sha-256),
// its consumer of a group committing each record (commitOffsets), admin
// clients that list the topics with scram-sha-512 and plain, and a
// producer with a wrong password, which must fail with
// SASL_AUTHENTICATION_FAILED. Then checkSASL.
func kafkajsSASLSSL(ctx context.Context, e *Env) Result {
	const group = "compat-kafkajs-sasl"
	s := e.SASL
	login := func(m, pw string) map[string]any {
		return map[string]any{"mechanism": strings.ToLower(m), "username": s.User, "password": pw}
	}
	base := func(args map[string]any) map[string]any {
		args["bootstrap"], args["ca"] = s.Addr, s.CAFile
		return args
	}
	if err := e.CreateTopic(ctx, saslTopic, saslPartitions); err != nil {
		return fail("%v", err)
	}
	res := newResult(saslTopic, saslPartitions, jsRecords, "js")
	run, err := runKafkajs(ctx, e, "produce", base(map[string]any{"topic": res.Topic, "records": specs(res.Records), "chunk": 10,
		"producer": map[string]any{"idempotent": true, "maxInFlightRequests": 1}, "compression": "none", "sasl": login(scramSHA256, s.Password)}))
	if err != nil {
		return fail("%v", err)
	}
	if err := applyAcks(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	if err := allAcked(res); err != nil {
		return fail("idempotent produce over SASL_SSL: %v", err)
	}
	run, err = runKafkajs(ctx, e, "consume", base(map[string]any{"topic": res.Topic, "want": res.Acked, "group": group, "commit": true,
		"readUncommitted": false, "grace": 500, "sasl": login(scramSHA256, s.Password)}))
	if err != nil {
		return fail("group consumer over SASL_SSL: %v", err)
	}
	read := foundOf(run.Lines)
	attempts := saslAttempts(s, func(m, pw string) any { return map[string]any{"sasl": login(m, pw)} })
	run, err = runKafkajs(ctx, e, "login", base(map[string]any{"attempts": attempts}))
	if err != nil {
		return fail("%v", err)
	}
	refused, err := checkLogins(run)
	if err != nil {
		return fail("%v", err)
	}
	return e.checkSASL(ctx, group, res, read, refused, "kafkajs: scram-sha-256 (admin clients with scram-sha-512 and plain listed the topics too)")
}
