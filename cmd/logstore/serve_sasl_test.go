package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/testutil"
)

// usersCLI runs `logstore users args...` with stdin and returns its
// output.
func usersCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newUsersCommand()
	cmd.SetArgs(args)
	var out strings.Builder
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestUsersCommand: add (the password from stdin), list, a new password,
// delete one mechanism, delete the user; a bad --iterations and an empty
// password are refused.
func TestUsersCommand(t *testing.T) {
	dir := t.TempDir()
	if _, err := usersCLI(t, "pencil\n", "add", "alice", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := usersCLI(t, "s3cret", "add", "bob", "--dir", dir, "--mechanism", "SCRAM-SHA-512", "--iterations", "16384"); err != nil {
		t.Fatal(err)
	}
	out, err := usersCLI(t, "", "list", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "USER   MECHANISM      ITERATIONS\nalice  SCRAM-SHA-256  8192\nalice  SCRAM-SHA-512  8192\nbob    SCRAM-SHA-512  16384\n"
	if out != want {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	if _, err := usersCLI(t, "", "delete", "alice", "--dir", dir, "--mechanism", "SCRAM-SHA-512"); err != nil {
		t.Fatal(err)
	}
	if _, err := usersCLI(t, "", "delete", "bob", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	if out, _ := usersCLI(t, "", "list", "--dir", dir); out != "USER   MECHANISM      ITERATIONS\nalice  SCRAM-SHA-256  8192\n" {
		t.Errorf("list after the deletes:\n%s", out)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"p\n", []string{"add", "carol", "--iterations", "100"}, "100 iterations"},
		{"\n", []string{"add", "carol"}, "no password on stdin"},
		{"p\n", []string{"add", "carol", "--mechanism", "SCRAM-SHA-1"}, "SCRAM-SHA-1"},
		{"", []string{"delete", "nobody"}, "no such user"},
	} {
		if _, err := usersCLI(t, tc.stdin, append(tc.args, "--dir", dir)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("users %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestServeSASL: users added with `logstore users add` authenticate to
// serve's SASL_SSL and SASL_PLAINTEXT listeners with kgo (SCRAM and
// PLAIN): an idempotent produce read back, a transaction committed; a
// wrong password is refused with SASL_AUTHENTICATION_FAILED, and a user
// added while serve runs can log in at once. check passes on the store
// after, users.json and all.
func TestServeSASL(t *testing.T) {
	dir := t.TempDir()
	if _, err := usersCLI(t, "pencil\n", "add", "alice", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", dir,
		"--listener", "SASL_SSL://127.0.0.1:0", "--listener", "SASL_PLAINTEXT://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key)
	ls := readyListeners(t, srv.ready)
	tlsOpt := kgo.DialTLSConfig(clientTLS(t, "", "", ca.File))
	scram512 := kgo.SASL(scram.Auth{User: "alice", Pass: "pencil"}.AsSha512Mechanism())

	produceAndConsume(t, ls["SASL_SSL"], "sasl-ssl", 20, tlsOpt, scram512)
	produceAndConsume(t, ls["SASL_PLAINTEXT"], "sasl-plain", 20, kgo.SASL(plain.Auth{User: "alice", Pass: "pencil"}.AsMechanism()))

	// A transaction over SASL_SSL.
	txn := newClient(t, ls["SASL_SSL"], tlsOpt, scram512, kgo.TransactionalID("sasl-txn"), kgo.DefaultProduceTopic("sasl-txn"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	refused := func(addr string, opts ...kgo.Opt) error {
		cl := newClient(t, addr, opts...)
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		return err
	}
	if err := refused(ls["SASL_SSL"], tlsOpt, kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := refused(ls["SASL_PLAINTEXT"], kgo.SASL(plain.Auth{User: "bob", Pass: "later"}.AsMechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("bob before he is added: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, err := usersCLI(t, "later\n", "add", "bob", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	if err := refused(ls["SASL_PLAINTEXT"], kgo.SASL(plain.Auth{User: "bob", Pass: "later"}.AsMechanism())); err != nil {
		t.Errorf("bob after he was added: %v", err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCLI(t, "check", "--dir", dir); code != exitOK {
		t.Errorf("check: exit %d\n%s%s", code, out, stderr)
	}
}

// TestServeSASLLibrdkafka: confluent-kafka-python (librdkafka) over
// SASL_SSL with SCRAM-SHA-512: an idempotent produce and a group
// consumer; with a wrong password it fails and writes nothing.
func TestServeSASLLibrdkafka(t *testing.T) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it): skipping the librdkafka test", err)
	}
	dir := t.TempDir()
	if _, err := usersCLI(t, "pencil\n", "add", "alice", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", dir, "--listener", "SASL_SSL://127.0.0.1:0", "--listener", "PLAINTEXT://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key, "--group-initial-rebalance-delay", "0s")
	ls := readyListeners(t, srv.ready)
	conf := func(password string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "ssl.ca.location": ca.File,
			"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": password}
	}
	const n = 100
	got, err := runLibrdkafka(t, py, ls["SASL_SSL"], "sasl-topic", n, conf("pencil"))
	if err != nil {
		t.Fatalf("%v\nserver stderr:\n%s", err, srv.stderr.String())
	}
	checkValues(t, got, n)
	if _, err := runLibrdkafka(t, py, ls["SASL_SSL"], "refused-topic", 1, conf("wrong")); err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("a wrong password: %v, want an authentication failure", err)
	}
	if topicExists(t, newClient(t, ls["PLAINTEXT"]), "refused-topic") {
		t.Error("the refused producer's topic exists")
	}
}
