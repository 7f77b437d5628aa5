package kafkaserver

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
	"github.com/logstore/logstore/users"
)

// startACLServer serves startSASLServer's store with an authorizer:
// alice (password "pencil") is its super user, bob (password "b0b") a
// user with no ACL yet. It returns a login for each.
func startACLServer(t *testing.T) (ts *testServer, login func(user, pass string, opts ...kgo.Opt) *kgo.Client) {
	t.Helper()
	ts, addr := startSASLServerWith(t, func(cfg *Config, store *logstore.Store) {
		f, err := acl.Open(store.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Authorizer, err = acl.NewAuthorizer(f, []string{"User:alice"}, false); err != nil {
			t.Fatal(err)
		}
		c, err := users.NewCredential(users.ScramSHA256, "b0b", users.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Users.Update(context.Background(), func(us []users.User) ([]users.User, error) { return users.Set(us, "bob", c), nil }); err != nil {
			t.Fatal(err)
		}
	})
	login = func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()),
			kgo.RecordRetries(2), kgo.RetryTimeout(3 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	return ts, login
}

// TestACLsKgo: a super user grants bob, over the wire with kadm, WRITE
// on one topic, READ on topics by prefix and on one group; bob's
// requests then get what Kafka would answer: his produce to another
// topic is refused with TOPIC_AUTHORIZATION_FAILED and writes nothing,
// Metadata hides the topics he may not describe, his group consumer
// reads in his group and is refused another, his transactional producer
// is refused its id, he may not create topics or ACLs; and a deleted
// ACL stops applying at once. The ACLs are in acls.json afterwards.
func TestACLsKgo(t *testing.T) {
	ts, login := startACLServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := login("alice", "pencil")
	admin := kadm.NewClient(alice)
	for _, topic := range []string{"orders", "logs-a", "secret"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	grants := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("logs-").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:bob").Groups("g").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, g := range grants {
		res, err := admin.CreateACLs(ctx, g)
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "logs-a", Value: []byte("for bob")}, &kgo.Record{Topic: "secret", Value: []byte("not for bob")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	bob := login("bob", "b0b")
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o1")}).FirstErr(); err != nil {
		t.Fatalf("bob producing to orders: %v", err)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob producing to secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	ends, err := admin.ListEndOffsets(ctx, "secret")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("secret", 0); o.Offset != 1 {
		t.Errorf("secret ends at %d after bob's refused produce, want 1 (alice's record only)", o.Offset)
	}

	listed, err := kadm.NewClient(bob).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); !slices.Equal(names, []string{"logs-a", "orders"}) {
		t.Errorf("bob lists topics %v, want [logs-a orders] (READ and WRITE imply DESCRIBE)", names)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"secret", "no-such-topic"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, rt)
	}
	md, err := mreq.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range md.Topics {
		if mt.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(mt.Partitions) != 0 {
			t.Errorf("bob's Metadata of %s: error %d, %d partitions; want TOPIC_AUTHORIZATION_FAILED, existing or not", *mt.Topic, mt.ErrorCode, len(mt.Partitions))
		}
	}

	// A fetch of a topic bob may read and one he may not: the first's
	// record, the second's 29, at once.
	freq := kmsg.NewPtrFetchRequest()
	freq.Version, freq.MaxWaitMillis, freq.MinBytes, freq.MaxBytes = 12, 5000, 1<<20, 1<<20
	for _, topic := range []string{"logs-a", "secret"} {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		freq.Topics = append(freq.Topics, ft)
	}
	start := time.Now()
	fresp, err := freq.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresp.Topics) != 2 || fresp.Topics[0].Partitions[0].ErrorCode != 0 || len(fresp.Topics[0].Partitions[0].RecordBatches) == 0 ||
		fresp.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(fresp.Topics[1].Partitions[0].RecordBatches) != 0 {
		t.Errorf("bob's fetch of logs-a and secret: %+v", fresp.Topics)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("the fetch with an authorization error waited %v", waited)
	}

	consumer := login("bob", "b0b", kgo.ConsumerGroup("g"), kgo.ConsumeTopics("logs-a"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var got []string
	for len(got) < 1 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("bob consuming logs-a in g: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, []string{"for bob"}) {
		t.Fatalf("bob read %q", got)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("bob committing in g: %v", err)
	}
	fetched, err := kadm.NewClient(bob).FetchOffsets(ctx, "h")
	if err == nil {
		err = fetched.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("bob fetching the offsets of h: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	other := login("bob", "b0b", kgo.ConsumerGroup("h"), kgo.ConsumeTopics("logs-a"))
	fs := other.PollFetches(ctx)
	if err := fs.Err0(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("bob joining h: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	txn := login("bob", "b0b", kgo.TransactionalID("bobs-txn"))
	err = txn.BeginTransaction()
	if err == nil {
		err = txn.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("t")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("bob's transactional producer: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}

	created, err := kadm.NewClient(bob).CreateTopic(ctx, 1, 1, nil, "bobs-topic")
	if err == nil {
		err = created.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob creating a topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	res, err := kadm.NewClient(bob).CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("secret").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob creating an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	described, err := admin.DescribeACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 3 {
		t.Fatalf("DescribeACLs of bob: %v %+v", err, described)
	}
	deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 {
		t.Fatalf("DeleteACLs: %v %+v", err, deleted)
	}
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o2")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob producing to orders after the ACL went: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	f, err := acl.Open(ts.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []acl.Binding{
		{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "logs-", PatternType: kmsg.ACLResourcePatternTypePrefixed, Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: "g", PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
	}
	if !slices.Equal(stored, want) {
		t.Errorf("acls.json holds %v, want %v", stored, want)
	}
}

// TestACLRequests checks the ACL APIs' own answers with raw kmsg
// requests: invalid bindings and filters are 42 with the reason, a
// binding created twice is stored once, DeleteAcls answers every
// binding each filter matched, and without an authorizer all three
// answer 54 SECURITY_DISABLED.
func TestACLRequests(t *testing.T) {
	_, login := startACLServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := login("alice", "pencil")

	creation := func(edit func(*kmsg.CreateACLsRequestCreation)) kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		if edit != nil {
			edit(&c)
		}
		return c
	}
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{
		creation(nil),
		creation(nil), // again: stored once
		creation(func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "bob" }),
		creation(func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch }),
		creation(func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeCluster }),
		creation(func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }),
		creation(func(c *kmsg.CreateACLsRequestCreation) {
			c.PermissionType = kmsg.ACLPermissionTypeDeny
			c.ResourceName = "u"
		}),
	}
	cresp, err := create.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int16
	for _, r := range cresp.Results {
		codes = append(codes, r.ErrorCode)
		if r.ErrorCode != 0 && r.ErrorMessage == nil {
			t.Errorf("error %d without a message", r.ErrorCode)
		}
	}
	invalid := kerr.InvalidRequest.Code
	if want := []int16{0, 0, invalid, invalid, invalid, invalid, 0}; !slices.Equal(codes, want) {
		t.Errorf("CreateAcls codes %v, want %v", codes, want)
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := describe.RequestWith(ctx, alice)
	if err != nil || dresp.ErrorCode != 0 {
		t.Fatalf("DescribeAcls: %v %+v", err, dresp)
	}
	if len(dresp.Resources) != 2 || len(dresp.Resources[0].ACLs) != 1 || len(dresp.Resources[1].ACLs) != 1 {
		t.Errorf("DescribeAcls answered %+v, want t and u with one ACL each", dresp.Resources)
	}
	describe.ResourceType = kmsg.ACLResourceTypeUnknown
	if dresp, err := describe.RequestWith(ctx, alice); err != nil || dresp.ErrorCode != invalid {
		t.Errorf("DescribeAcls of an UNKNOWN type: %v %+v, want INVALID_REQUEST", err, dresp)
	}

	filter := func(name string) kmsg.DeleteACLsRequestFilter {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch
		f.ResourceName, f.Operation, f.PermissionType = &name, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return f
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = []kmsg.DeleteACLsRequestFilter{filter("t"), filter("t"), filter("nothing")}
	delresp, err := del.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	var matched []int
	for _, r := range delresp.Results {
		if r.ErrorCode != 0 {
			t.Errorf("DeleteAcls filter: error %d", r.ErrorCode)
		}
		matched = append(matched, len(r.MatchingACLs))
	}
	if !slices.Equal(matched, []int{1, 1, 0}) {
		t.Errorf("DeleteAcls matched %v, want [1 1 0] (each filter against the ACLs before the request)", matched)
	}

	// The same requests to a server without an authorizer.
	_, addr := startSASLServer(t)
	plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "alice", Pass: "pencil"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	describe.ResourceType = kmsg.ACLResourceTypeAny
	if dresp, err := describe.RequestWith(ctx, plain); err != nil || dresp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("DescribeAcls without an authorizer: %v %+v, want SECURITY_DISABLED", err, dresp)
	}
	if cresp, err := create.RequestWith(ctx, plain); err != nil || cresp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("CreateAcls without an authorizer: %v %+v, want SECURITY_DISABLED", err, cresp)
	}
	if delresp, err := del.RequestWith(ctx, plain); err != nil || delresp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("DeleteAcls without an authorizer: %v %+v, want SECURITY_DISABLED", err, delresp)
	}
}
