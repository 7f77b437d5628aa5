package kafkaserver

import (
	"context"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func metadata(t *testing.T, c *rawClient, version int16, autoCreate bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	r := kmsg.NewPtrMetadataRequest()
	r.Version = version
	r.AllowAutoTopicCreation = autoCreate
	if topics != nil {
		r.Topics = []kmsg.MetadataRequestTopic{}
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &name
			r.Topics = append(r.Topics, rt)
		}
	}
	return c.do(r).(*kmsg.MetadataResponse)
}

// TestMetadata: one broker (this one, at the address dialled), itself
// the controller and every partition's only replica and leader at epoch
// 0; null topics (v1+) or an empty list (v0) mean all topics, an empty
// list v1+ none; an unknown topic is 3, or created when allowed.
func TestMetadata(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{AutoCreateTopics: true, DefaultPartitions: 3})
	ts.createTopic("a", 2)
	c := ts.dial()
	for _, v := range []int16{0, 1, 4, 9, 10, 12} {
		var resp *kmsg.MetadataResponse
		if v == 0 {
			// v0 has no null list: an empty one means all topics.
			resp = metadata(t, c, v, false, []string{}...)
		} else {
			resp = metadata(t, c, v, false)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host != "127.0.0.1" ||
			(v >= 1 && resp.ControllerID != 0) || (v >= 2 && (resp.ClusterID == nil || *resp.ClusterID == "")) {
			t.Fatalf("v%d: brokers %+v controller %d cluster %v", v, resp.Brokers, resp.ControllerID, resp.ClusterID)
		}
		if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "a" || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d all topics: %+v", v, resp.Topics)
		}
		mp := resp.Topics[0].Partitions[1]
		if mp.Partition != 1 || mp.Leader != 0 || len(mp.Replicas) != 1 || len(mp.ISR) != 1 || (v >= 7 && mp.LeaderEpoch != 0) {
			t.Fatalf("v%d partition: %+v", v, mp)
		}
		if v >= 10 && resp.Topics[0].TopicID == [16]byte{} {
			t.Fatalf("v%d: no topic id", v)
		}
	}
	// Authorized operations (v8+), asked for: with no authorizer, every
	// operation, as Kafka answers (the cluster's only v8-10); not asked
	// for, or for a topic not found, INT32_MIN.
	for _, v := range []int16{8, 10, 11, 12} {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = v
		r.IncludeClusterAuthorizedOperations, r.IncludeTopicAuthorizedOperations = true, true
		for _, name := range []string{"a", "nope"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			r.Topics = append(r.Topics, rt)
		}
		resp := c.do(r).(*kmsg.MetadataResponse)
		wantCluster := int32(8096)
		if v >= 11 {
			wantCluster = math.MinInt32
		}
		if v <= 10 && resp.AuthorizedOperations != wantCluster {
			t.Fatalf("v%d: cluster authorized operations %d, want %d", v, resp.AuthorizedOperations, wantCluster)
		}
		if got := resp.Topics[0].AuthorizedOperations; got != 3576 {
			t.Fatalf("v%d: topic a's authorized operations %d, want 3576", v, got)
		}
		if got := resp.Topics[1].AuthorizedOperations; got != math.MinInt32 {
			t.Fatalf("v%d: unknown topic's authorized operations %d, want INT32_MIN", v, got)
		}
	}
	if resp := metadata(t, c, 10, false, "a"); resp.AuthorizedOperations != math.MinInt32 || resp.Topics[0].AuthorizedOperations != math.MinInt32 {
		t.Fatalf("not asked for: cluster %d, topic %d", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
	if resp := metadata(t, c, 12, false, []string{}...); len(resp.Topics) != 0 {
		t.Fatalf("v12 with an empty list: %d topics", len(resp.Topics))
	}
	if resp := metadata(t, c, 12, false, "nope"); resp.Topics[0].ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("unknown topic, creation not allowed: %+v", resp.Topics[0])
	}
	if resp := metadata(t, c, 12, true, "new"); resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("unknown topic, creation allowed: %+v", resp.Topics[0])
	}
	if resp := metadata(t, c, 12, true, "bad/name"); resp.Topics[0].ErrorCode != errInvalidTopic {
		t.Fatalf("invalid name: %+v", resp.Topics[0])
	}
}

// TestCreateTopics: the refusals and ValidateOnly.
func TestCreateTopics(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{DefaultPartitions: 4})
	ts.createTopic("exists", 1)
	c := ts.dial()
	create := func(v int16, validateOnly bool, name string, parts int32, rf int16) kmsg.CreateTopicsResponseTopic {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version = v
		r.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		r.Topics = append(r.Topics, rt)
		return c.do(r).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	cases := []struct {
		v        int16
		validate bool
		name     string
		parts    int32
		rf       int16
		code     int16
	}{
		{7, false, "ok", 2, 1, 0},
		{0, false, "ok0", -1, -1, 0},
		{7, false, "exists", 1, 1, errTopicAlreadyExists},
		{7, false, "bad name", 1, 1, errInvalidTopic},
		{7, false, "rf3", 1, 3, errInvalidReplicationFact},
		{7, false, "zero", 0, 1, errInvalidPartitions},
		{5, true, "validated", 1, 1, 0},
	}
	for _, tc := range cases {
		got := create(tc.v, tc.validate, tc.name, tc.parts, tc.rf)
		if got.ErrorCode != tc.code {
			t.Errorf("create %q: code %d, want %d (%v)", tc.name, got.ErrorCode, tc.code, got.ErrorMessage)
		}
	}
	withConfigs := func(configs map[string]string) kmsg.CreateTopicsResponseTopic {
		r := kmsg.NewPtrCreateTopicsRequest()
		r.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "configured", 1, -1
		for k, v := range configs {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, &v
			rt.Configs = append(rt.Configs, cfg)
		}
		r.Topics = append(r.Topics, rt)
		return c.do(r).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	if got := withConfigs(map[string]string{"cleanup.policy": "compact"}); got.ErrorCode != errInvalidConfig {
		t.Errorf("unknown config: code %d", got.ErrorCode)
	}
	if got := withConfigs(map[string]string{"cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "retention.ms": "-7"}); got.ErrorCode != errInvalidConfig {
		t.Errorf("invalid config value beside configs at the values logstore behaves as: code %d", got.ErrorCode)
	}
	if got := withConfigs(map[string]string{"no.such.config": "1"}); got.ErrorCode != errInvalidConfig || !strings.Contains(str(got.ErrorMessage), "Unknown topic config name") {
		t.Errorf("unknown config name: code %d, %v", got.ErrorCode, str(got.ErrorMessage))
	}
	if got := withConfigs(map[string]string{"retention.ms": "-7"}); got.ErrorCode != errInvalidConfig {
		t.Errorf("invalid config value: code %d", got.ErrorCode)
	}
	// Configs logstore does not apply, at the values it behaves as, are
	// accepted, as AlterConfigs accepts them, and not kept.
	if got := withConfigs(map[string]string{"retention.ms": "60000", "segment.bytes": "1048576", "cleanup.policy": "delete", "min.insync.replicas": "1"}); got.ErrorCode != 0 || got.TopicID == [16]byte{} {
		t.Errorf("known configs: %+v %v", got, str(got.ErrorMessage))
	} else if tp, _ := ts.srv.cat.Topic("configured"); tp.Configs["retention.ms"] != "60000" || len(tp.Configs) != 2 {
		t.Errorf("configs kept: %v, want retention.ms and segment.bytes", tp.Configs)
	}
	if tp, ok := ts.srv.cat.Topic("ok0"); !ok || tp.Partitions != 4 {
		t.Errorf("-1 partitions: %+v, want DefaultPartitions", tp)
	}
	if _, ok := ts.srv.cat.Topic("validated"); ok {
		t.Error("ValidateOnly created the topic")
	}
}

// TestInitProducerIDAndFindCoordinator: fresh producer ids at epoch 0;
// a transactional id gets a producer id of its own (not one handed out
// before); group coordinators are not available (15).
func TestInitProducerIDAndFindCoordinator(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	seen := map[int64]bool{}
	for _, v := range []int16{0, 2, 3, 4} {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = v
		resp := c.do(r).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || resp.ProducerID < 0 || seen[resp.ProducerID] {
			t.Fatalf("v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true
	}
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = 4
	txn := "txn"
	r.TransactionalID = &txn
	r.TransactionTimeoutMillis = 60000
	if resp := c.do(r).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || resp.ProducerID < 0 || seen[resp.ProducerID] {
		t.Fatalf("transactional: %+v", resp)
	}
	for _, v := range []int16{0, 3, 4} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorKey = "g"
		r.CoordinatorKeys = []string{"g", "h"}
		resp := c.do(r).(*kmsg.FindCoordinatorResponse)
		// Groups: this node is the coordinator.
		if v < 4 && (resp.ErrorCode != errNone || resp.NodeID != nodeID || resp.Port <= 0) {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v >= 4 && (len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "h" || resp.Coordinators[1].ErrorCode != errNone || resp.Coordinators[1].Port <= 0) {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
}

// TestRestartKeepsIdentity: across a restart of the server and the
// store, the cluster id and topic ids stay, and producer ids are not
// handed out again.
func TestRestartKeepsIdentity(t *testing.T) {
	dir := t.TempDir()
	type seen struct {
		cluster string
		topicID [16]byte
		pid     int64
	}
	run := func() seen {
		store, err := logstore.Open(dir, logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(store, Config{AutoCreateTopics: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		ts := &testServer{t: t, addr: ln.Addr().String()}
		c := ts.dial()
		m := metadata(t, c, 12, true, "kept")
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version = 4
		ip := c.do(r).(*kmsg.InitProducerIDResponse)
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		return seen{*m.ClusterID, m.Topics[0].TopicID, ip.ProducerID}
	}
	a, b := run(), run()
	if a.cluster != b.cluster || a.topicID != b.topicID || a.topicID == [16]byte{} {
		t.Fatalf("first run %+v, second %+v: cluster and topic ids changed", a, b)
	}
	if b.pid <= a.pid {
		t.Fatalf("producer id %d after a restart, %d before", b.pid, a.pid)
	}
}
