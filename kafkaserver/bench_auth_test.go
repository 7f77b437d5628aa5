package kafkaserver

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
	"github.com/logstore/logstore/users"
)

// BenchmarkAuth: what authentication and authorization cost a request
// once a connection is up. kgo produces one 100-byte record at a time
// (ProduceSync: one request in flight, so ns/op is a request's round
// trip) over a PLAINTEXT listener and over a SASL_PLAINTEXT one (SCRAM
// once, at connect), to a server without an authorizer and to one whose
// acls.json holds 1,000 ACLs besides the WRITE the producer needs (500
// literal and 500 prefixed, of other topics).
func BenchmarkAuth(b *testing.B) {
	for _, authz := range []string{"none", "acl"} {
		store, err := logstore.Open(b.TempDir(), logstore.Options{Sync: logstore.SyncNever})
		if err != nil {
			b.Fatal(err)
		}
		uf, err := users.Open(store.Dir())
		if err != nil {
			b.Fatal(err)
		}
		cred, err := users.NewCredential(users.ScramSHA256, "pw", users.MinIterations)
		if err != nil {
			b.Fatal(err)
		}
		if err := uf.Update(context.Background(), func(us []users.User) ([]users.User, error) { return users.Set(us, "bench", cred), nil }); err != nil {
			b.Fatal(err)
		}
		cfg := Config{Users: uf}
		if authz == "acl" {
			cfg.Authorizer = benchAuthorizer(b, store.Dir())
		}
		ts := startServerOn(b, store, cfg)
		ts.createTopic("produced", 1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go ts.srv.ServeListener(ln, ListenerConfig{SASL: true})
		for _, lis := range []struct {
			name string
			opts []kgo.Opt
		}{
			{"plaintext", []kgo.Opt{kgo.SeedBrokers(ts.addr)}},
			{"sasl_plaintext", []kgo.Opt{kgo.SeedBrokers(ln.Addr().String()), kgo.SASL(scram.Auth{User: "bench", Pass: "pw"}.AsSha256Mechanism())}},
		} {
			b.Run(fmt.Sprintf("authorizer=%s/%s", authz, lis.name), func(b *testing.B) {
				cl, err := kgo.NewClient(append(lis.opts, kgo.DefaultProduceTopic("produced"), kgo.RequiredAcks(kgo.AllISRAcks()),
					kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				value := make([]byte, 100)
				ctx := context.Background()
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err) // connected and authenticated before the timer
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchAuthorizer is an authorizer over dir's acls.json holding WRITE
// on topic produced for the benchmark's two principals and 1,000 ACLs
// of other topics.
func benchAuthorizer(b *testing.B, dir string) *acl.Authorizer {
	b.Helper()
	f, err := acl.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	var bindings []acl.Binding
	for _, p := range []string{anonymous, "User:bench"} {
		bindings = append(bindings, acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "produced", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: p, Host: acl.Wildcard, Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow})
	}
	for i := range 1000 {
		pt := kmsg.ACLResourcePatternTypeLiteral
		if i%2 == 1 {
			pt = kmsg.ACLResourcePatternTypePrefixed
		}
		bindings = append(bindings, acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("other-%d", i), PatternType: pt,
			Principal: fmt.Sprintf("User:u%d", i), Host: acl.Wildcard, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow})
	}
	if err := f.Update(context.Background(), func([]acl.Binding) ([]acl.Binding, error) { return bindings, nil }); err != nil {
		b.Fatal(err)
	}
	a, err := acl.NewAuthorizer(f, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	return a
}
