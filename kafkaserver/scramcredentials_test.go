package kafkaserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore"
)

// TestUserScramCredentialsKadm: a super user adds a user with kadm (the
// client salts the password), who then logs in; describes it; deletes
// it, after which it cannot log in. A user who is not a super user is
// refused with CLUSTER_AUTHORIZATION_FAILED, and Kafka's per-user errors
// come back for a bad mechanism, iterations and a missing user.
func TestUserScramCredentialsKadm(t *testing.T) {
	_, addr := startSASLServerWith(t, func(cfg *Config, _ *logstore.Store) { cfg.SuperUsers = []string{"User:alice"} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login := func(user, pass string) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	admin := login("alice", "pencil")
	altered, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "b0b"}})
	if err != nil || altered["bob"].Err != nil {
		t.Fatalf("adding bob: %v %+v", err, altered)
	}
	bob := login("bob", "b0b")
	if _, err := bob.ListTopics(ctx); err != nil {
		t.Fatalf("bob logs in: %v", err)
	}
	described, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["bob"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 || d.CredInfos[0].Iterations != 4096 {
		t.Errorf("bob described as %+v", d)
	}
	if d := described["alice"]; len(d.CredInfos) != 2 {
		t.Errorf("alice described as %+v", d)
	}
	if described, err := admin.DescribeUserSCRAMs(ctx, "nobody"); err != nil || !errors.Is(described["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describing nobody: %v %+v", err, described)
	}

	// bob is not a super user.
	if _, err := bob.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob describing: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	altered, err = bob.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "x"}})
	if err == nil { // kadm returns an authorization failure as its error
		err = altered["bob"].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob altering: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	altered, err = admin.AlterUserSCRAMs(ctx,
		[]kadm.DeleteSCRAM{{User: "ghost", Mechanism: kadm.ScramSha256}},
		[]kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 100, Password: "c"}})
	if err != nil || !errors.Is(altered["ghost"].Err, kerr.ResourceNotFound) || !errors.Is(altered["carol"].Err, kerr.UnacceptableCredential) {
		t.Errorf("a missing credential and 100 iterations: %v %+v", err, altered)
	}

	altered, err = admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || altered["bob"].Err != nil {
		t.Fatalf("deleting bob: %v %+v", err, altered)
	}
	gone, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "bob", Pass: "b0b"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	if _, err := kadm.NewClient(gone).ListTopics(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("bob after his deletion: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
