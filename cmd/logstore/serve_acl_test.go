package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/testutil"
)

// aclsCLI runs `logstore acls args...` and returns its output.
func aclsCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newACLsCommand()
	cmd.SetArgs(args)
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestServeACLs: serve --authorizer acl over SASL_SSL, with the ACLs of
// `logstore acls`: bob, granted WRITE and READ on one topic and READ on
// its group, produces idempotently and consumes in the group with
// librdkafka (confluent-kafka-python); his produce to a topic he has no
// ACL for is refused with TOPIC_AUTHORIZATION_FAILED and writes
// nothing. An ACL added with the command while serve runs applies
// within seconds (kgo). alice, a super user, needs no ACL.
func TestServeACLs(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"alice", "bob"} {
		if _, err := usersCLI(t, u+"-pw\n", "add", u, "--dir", dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"--operation", "WRITE", "--operation", "READ", "--topic", "granted"},
		{"--operation", "READ", "--group", "granted-group"},
	} {
		if out, err := aclsCLI(t, append([]string{"add", "--dir", dir, "--allow-principal", "User:bob"}, args...)...); err != nil {
			t.Fatalf("acls add: %v\n%s", err, out)
		}
	}
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", dir, "--listener", "SASL_SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key, "--group-initial-rebalance-delay", "0s",
		"--authorizer", "acl", "--super-users", "User:alice")
	addr := readyListeners(t, srv.ready)["SASL_SSL"]
	tlsOpt := kgo.DialTLSConfig(clientTLS(t, "", "", ca.File))
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, addr, append([]kgo.Opt{tlsOpt, kgo.SASL(scram.Auth{User: user, Pass: user + "-pw"}.AsSha256Mechanism()),
			kgo.RecordRetries(2), kgo.RetryTimeout(3 * time.Second)}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := kadm.NewClient(login("alice"))
	for _, topic := range []string{"granted", "forbidden", "later"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	endOf := func(topic string) int64 {
		ends, err := admin.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(topic, 0)
		return o.Offset
	}

	if py, err := kafkaclients.ConfluentPython(); err != nil {
		t.Logf("%v (.ci/run installs it): the librdkafka part is skipped", err)
	} else {
		conf := map[string]string{"security.protocol": "SASL_SSL", "ssl.ca.location": ca.File,
			"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bob", "sasl.password": "bob-pw"}
		const n = 50
		got, err := runLibrdkafka(t, py, addr, "granted", n, conf)
		if err != nil {
			t.Fatalf("librdkafka as bob on granted: %v\nserver stderr:\n%s", err, srv.stderr.String())
		}
		checkValues(t, got, n)
		if _, err := runLibrdkafka(t, py, addr, "forbidden", 1, conf); err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
			t.Errorf("librdkafka as bob on forbidden: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if end := endOf("forbidden"); end != 0 {
			t.Errorf("forbidden ends at %d after bob's refused produce, want 0", end)
		}
	}

	bob := login("bob")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "later", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob producing to later before his ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if out, err := aclsCLI(t, "add", "--dir", dir, "--allow-principal", "User:bob", "--operation", "WRITE", "--topic", "later"); err != nil {
		t.Fatalf("acls add: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := bob.ProduceSync(ctx, &kgo.Record{Topic: "later", Value: []byte("y")}).FirstErr()
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) || time.Now().After(deadline) {
			t.Fatalf("bob producing to later after his ACL was added: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if end := endOf("later"); end != 1 {
		t.Errorf("later ends at %d, want 1 (the produce refused before the ACL wrote nothing)", end)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runCLI(t, "check", "--dir", dir); code != exitOK {
		t.Errorf("check: exit %d\n%s%s", code, out, stderr)
	}
}

// TestACLsCommand: add (the cross product of the flags), list with a
// MATCH filter, delete by principal and resource; a bad principal, a
// missing resource and a delete of everything are refused.
func TestACLsCommand(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, err := aclsCLI(t, append(args, "--dir", dir)...)
		if err != nil {
			t.Fatalf("acls %v: %v\n%s", args, err, out)
		}
		return out
	}
	run("add", "--allow-principal", "User:app", "--operation", "WRITE", "--operation", "READ", "--topic", "orders", "--topic", "payments")
	run("add", "--allow-principal", "User:app", "--operation", "READ", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	run("add", "--deny-principal", "User:*", "--operation", "ALL", "--cluster")
	if lines := strings.Count(run("list"), "\n"); lines != 1+6 {
		t.Errorf("list: %d lines, want a header and 6 ACLs", lines)
	}
	matched := run("list", "--topic", "logs-today", "--resource-pattern-type", "match")
	if !strings.Contains(matched, "logs-") || strings.Contains(matched, "orders") {
		t.Errorf("list of what applies to logs-today:\n%s", matched)
	}
	if out := run("delete", "--principal", "User:app", "--topic", "orders"); !strings.Contains(out, "deleted 2 ACLs") {
		t.Errorf("delete: %s", out)
	}
	if out := run("list"); strings.Contains(out, "orders") || !strings.Contains(out, "payments") {
		t.Errorf("after delete:\n%s", out)
	}
	for _, args := range [][]string{
		{"add", "--allow-principal", "app", "--operation", "READ", "--topic", "t"},
		{"add", "--allow-principal", "User:app", "--operation", "READ"},
		{"add", "--allow-principal", "User:app", "--operation", "FLY", "--topic", "t"},
		{"delete"},
	} {
		if out, err := aclsCLI(t, append(args, "--dir", dir)...); err == nil {
			t.Errorf("acls %v: no error\n%s", args, out)
		}
	}
}

// TestServeSSLClientCertACLs: over an SSL listener requiring client
// certificates, the certificate's subject is the principal the ACLs
// name: the client granted by its subject produces idempotently,
// consumes in a group and commits a transaction; another certificate of
// the same CA, with no ACL, is refused with TOPIC_AUTHORIZATION_FAILED
// and writes nothing.
func TestServeSSLClientCertACLs(t *testing.T) {
	dir := t.TempDir()
	const app = "User:CN=app,O=logstore tests"
	for _, args := range [][]string{
		{"--operation", "ALL", "--topic", "cert-"},
		{"--operation", "READ", "--group", "cert-group"},
		{"--operation", "WRITE", "--transactional-id", "cert-txn"},
	} {
		args = append([]string{"add", "--dir", dir, "--allow-principal", app, "--resource-pattern-type", "prefixed"}, args...)
		if out, err := aclsCLI(t, args...); err != nil {
			t.Fatalf("acls add: %v\n%s", err, out)
		}
	}
	serverCA, clientCA := testutil.NewCA(t, "server-ca"), testutil.NewCA(t, "client-ca")
	cert, key := serverCA.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", dir, "--listener", "SSL://127.0.0.1:0",
		"--ssl-cert-file", cert, "--ssl-key-file", key, "--ssl-ca-file", clientCA.File, "--ssl-client-auth", "required",
		"--group-initial-rebalance-delay", "0s", "--authorizer", "acl")
	addr := readyListeners(t, srv.ready)["SSL"]
	appCert, appKey := clientCA.Issue(t, "app", testutil.CertOpts{Client: true})
	asApp := kgo.DialTLSConfig(clientTLS(t, appCert, appKey, serverCA.File))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// CREATE on the topics by prefix (ALL) lets the producer create them.
	produceAndConsume(t, addr, "cert-plain", 10, asApp, kgo.ConsumerGroup("cert-group"))
	txn := newClient(t, addr, asApp, kgo.TransactionalID("cert-txn"), kgo.DefaultProduceTopic("cert-txn-topic"), kgo.AllowAutoTopicCreation())
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatalf("a transactional produce as %s: %v", app, err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing as %s: %v", app, err)
	}

	otherCert, otherKey := clientCA.Issue(t, "other", testutil.CertOpts{Client: true})
	other := newClient(t, addr, kgo.DialTLSConfig(clientTLS(t, otherCert, otherKey, serverCA.File)),
		kgo.DefaultProduceTopic("cert-plain"), kgo.RecordRetries(1), kgo.RetryTimeout(2*time.Second))
	if err := other.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("another certificate producing: %v, want an authorization failure", err)
	}
	ends, err := kadm.NewClient(newClient(t, addr, asApp)).ListEndOffsets(ctx, "cert-plain")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("cert-plain", 0); o.Offset != 10 {
		t.Errorf("cert-plain ends at %d, want 10: the refused produce wrote", o.Offset)
	}
}
