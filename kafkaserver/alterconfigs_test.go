package kafkaserver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/metrics"
)

// serveDir serves the store in dir until stop, which shuts the server
// down and closes the store (also at the test's end, if not called).
func serveDir(t *testing.T, dir string) (ts *testServer, stop func()) {
	t.Helper()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(store, Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		store.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	}
	t.Cleanup(stop)
	return &testServer{t: t, store: store, srv: srv, addr: ln.Addr().String()}, stop
}

// describeTopic returns topic's configs as kadm describes them.
func describeTopic(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) kadm.ResourceConfig {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	return rc
}

// wantConfig checks one config's value and source.
func wantConfig(t *testing.T, rc kadm.ResourceConfig, name, value string, src kmsg.ConfigSource) {
	t.Helper()
	c := configOf(t, rc, name)
	if c.MaybeValue() != value || c.Source != src {
		t.Fatalf("%s = %q source %d, want %q source %d", name, c.MaybeValue(), c.Source, value, src)
	}
}

func set(name, value string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: &value}
}

func alterOK(t *testing.T, rs kadm.AlterConfigsResponses, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("%s: %v (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
}

func logSegments(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// produceCode produces one batch of values to topic's partition 0 and
// returns the partition's error code.
func produceCode(c *rawClient, topic string, values ...string) int16 {
	resp := c.do(produceReq(9, -1, topic, 0, batchOf(-1, 0, 0, values...))).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestAlterConfigsKadm: kadm's incremental alter (IncrementalAlterConfigs)
// and state alter (AlterConfigs) of a topic: each value set shows in
// DescribeConfigs as DYNAMIC_TOPIC_CONFIG, the legacy call replaces the
// whole set, DELETE goes back to the broker's value, the open partition
// applies the change at once (max.message.bytes refuses a larger batch,
// segment.bytes 1 MiB rolls), and the configs survive a restart.
func TestAlterConfigsKadm(t *testing.T) {
	dir := t.TempDir()
	ts, stop := serveDir(t, dir)
	adm := adminClient(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	c := ts.dial()
	if code := produceCode(c, "a", strings.Repeat("v", 5000)); code != 0 {
		t.Fatalf("first produce: %d", code)
	}

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "3600000"), set("max.message.bytes", "2000")}, "a")
	alterOK(t, rs, err)
	rc := describeTopic(t, ctx, adm, "a")
	wantConfig(t, rc, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, rc, "max.message.bytes", "2000", kmsg.ConfigSourceDynamicTopicConfig)
	if code := produceCode(c, "a", strings.Repeat("v", 5000)); code != kerr.MessageTooLarge.Code {
		t.Fatalf("a 5000-byte batch with max.message.bytes 2000: code %d, want %d", code, kerr.MessageTooLarge.Code)
	}
	if code := produceCode(c, "a", "small"); code != 0 {
		t.Fatalf("a small batch: %d", code)
	}

	// The legacy call replaces everything: retention.ms and
	// max.message.bytes go, segment.bytes comes.
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("segment.bytes", "1048576")}, "a")
	alterOK(t, rs, err)
	rc = describeTopic(t, ctx, adm, "a")
	wantConfig(t, rc, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, rc, "retention.ms", "-1", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, rc, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	pdir := filepath.Join(dir, "a-0")
	if n := logSegments(t, pdir); n != 1 {
		t.Fatalf("%d segments before segment.bytes applies, want 1", n)
	}
	for range 4 {
		if code := produceCode(c, "a", strings.Repeat("x", 400_000)); code != 0 {
			t.Fatalf("a 400 KB batch after max.message.bytes went back to its default: %d", code)
		}
	}
	if n := logSegments(t, pdir); n < 2 {
		t.Fatalf("%d segments after 1.6 MB with segment.bytes 1 MiB, want a roll", n)
	}

	// retention.bytes 0: every sealed segment goes, before the answer
	// (once the rolls' flushes are done, as retention takes only flushed
	// segments).
	part, err := ts.store.Partition("a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := part.Flushed(); err != nil {
		t.Fatal(err)
	}
	startOf := func() int64 {
		return c.do(listOffsetsReq("a", 0, -2)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
	}
	if got := startOf(); got != 0 {
		t.Fatalf("log start %d before retention", got)
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.bytes", "0")}, "a")
	alterOK(t, rs, err)
	if got := startOf(); got == 0 {
		t.Fatalf("log start 0 after retention.bytes 0 on %d segments", logSegments(t, pdir))
	}

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.bytes", "50000000")}, "a")
	alterOK(t, rs, err)
	stop()

	ts, _ = serveDir(t, dir)
	adm = adminClient(t, ts.addr)
	rc = describeTopic(t, ctx, adm, "a")
	wantConfig(t, rc, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, rc, "retention.bytes", "50000000", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "segment.bytes"}}, "a")
	alterOK(t, rs, err)
	rc = describeTopic(t, ctx, adm, "a")
	wantConfig(t, rc, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, rc, "retention.bytes", "50000000", kmsg.ConfigSourceDynamicTopicConfig)
}

// TestAlterConfigsRefused: every refusal with Kafka's code, and nothing
// changed by any of them (nor by validate_only); a good resource beside
// a bad one in the same request is answered, and applied, on its own.
func TestAlterConfigsRefused(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, logstore.Options{}, Config{Metrics: m})
	if _, err := ts.srv.cat.CreateTopic("t", 1, map[string]string{"retention.bytes": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	ts.createTopic("u", 1)
	c := ts.dial()
	str := kmsg.StringPtr
	type op struct {
		name  string
		op    kmsg.IncrementalAlterConfigOp
		value *string
	}
	type res struct {
		typ  kmsg.ConfigResourceType
		name string
		ops  []op
	}
	incremental := func(validateOnly bool, rs ...res) []kmsg.IncrementalAlterConfigsResponseResource {
		t.Helper()
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Version, r.ValidateOnly = 1, validateOnly
		for _, x := range rs {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = x.typ, x.name
			for _, o := range x.ops {
				cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				cfg.Name, cfg.Op, cfg.Value = o.name, o.op, o.value
				rr.Configs = append(rr.Configs, cfg)
			}
			r.Resources = append(r.Resources, rr)
		}
		out := c.do(r).(*kmsg.IncrementalAlterConfigsResponse).Resources
		if len(out) != len(rs) {
			t.Fatalf("%d resources answered, %d asked", len(out), len(rs))
		}
		return out
	}
	topicT := func(ops ...op) res { return res{kmsg.ConfigResourceTypeTopic, "t", ops} }
	setOp := func(name, value string) op { return op{name, kmsg.IncrementalAlterConfigOpSet, str(value)} }
	const (
		invalidConfig  = 40
		invalidRequest = 42
	)
	cases := []struct {
		what string
		res  res
		code int16
		msg  string // part of the message
	}{
		{"segment.bytes below 1 MiB", topicT(setOp("segment.bytes", "100")), invalidConfig, "at least 1048576"},
		{"segment.bytes past an INT", topicT(setOp("segment.bytes", "99999999999")), invalidConfig, "32-bit"},
		{"negative segment.ms", topicT(setOp("segment.ms", "-5")), invalidConfig, "at least 1"},
		{"retention.ms below -1", topicT(setOp("retention.ms", "-2")), invalidConfig, "at least -1"},
		{"not a number", topicT(setOp("max.message.bytes", "lots")), invalidConfig, "not a 32-bit integer"},
		{"an unknown name", topicT(setOp("no.such.config", "1")), invalidConfig, "Unknown topic config name: no.such.config"},
		{"a config logstore does not apply", topicT(setOp("min.insync.replicas", "2")), invalidConfig, "not supported"},
		{"compaction", topicT(setOp("cleanup.policy", "compact")), invalidConfig, "not supported"},
		{"APPEND to a LIST logstore does not apply", topicT(op{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, str("compact")}), invalidConfig, "not supported"},
		{"APPEND to a LONG", topicT(op{"retention.ms", kmsg.IncrementalAlterConfigOpAppend, str("5")}), invalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"SUBTRACT from an INT", topicT(op{"segment.bytes", kmsg.IncrementalAlterConfigOpSubtract, str("5")}), invalidConfig, "Can't SUBTRACT to key segment.bytes because its type is not LIST."},
		{"an unknown operation", topicT(op{"segment.bytes", 9, str("5")}), invalidRequest, "operation"},
		{"a null value", topicT(op{"retention.ms", kmsg.IncrementalAlterConfigOpSet, nil}), invalidRequest, "Null value not supported for : retention.ms"},
		{"a name twice", topicT(setOp("retention.ms", "1"), setOp("retention.ms", "2")), invalidRequest, "duplicate config keys"},
		{"an unknown topic", res{kmsg.ConfigResourceTypeTopic, "nope", []op{setOp("retention.ms", "1")}}, kerr.UnknownTopicOrPartition.Code, "does not exist"},
		{"a bad value for an unknown topic", res{kmsg.ConfigResourceTypeTopic, "nope", []op{setOp("retention.ms", "-9")}}, invalidConfig, ""},
		{"a bad topic name", res{kmsg.ConfigResourceTypeTopic, "bad/name", []op{setOp("retention.ms", "1")}}, kerr.InvalidTopicException.Code, ""},
		{"a broker config", res{kmsg.ConfigResourceTypeBroker, "0", []op{setOp("log.retention.ms", "1")}}, invalidRequest, "Cannot update these configs dynamically: Set(log.retention.ms)"},
		{"a cluster default", res{kmsg.ConfigResourceTypeBroker, "", []op{setOp("num.partitions", "3")}}, invalidRequest, "Cannot update these configs dynamically"},
		{"APPEND to a broker INT", res{kmsg.ConfigResourceTypeBroker, "0", []op{{"num.partitions", kmsg.IncrementalAlterConfigOpAppend, str("3")}}}, invalidConfig, "append is not allowed"},
		{"another broker", res{kmsg.ConfigResourceTypeBroker, "1", []op{setOp("log.retention.ms", "1")}}, invalidRequest, "Unexpected broker id, expected 0, but received 1"},
		{"a broker name not a number", res{kmsg.ConfigResourceTypeBroker, "x", nil}, invalidRequest, "Node id must be an integer, but it is: x"},
		{"a broker logger", res{kmsg.ConfigResourceTypeBrokerLogger, "0", []op{setOp("kafka", "DEBUG")}}, invalidRequest, ""},
		{"a group", res{kmsg.ConfigResourceType(32), "g", []op{setOp("x", "1")}}, invalidRequest, "Unknown resource type 32"},
	}
	for _, tc := range cases {
		for _, validateOnly := range []bool{false, true} {
			got := incremental(validateOnly, tc.res)[0]
			if got.ErrorCode != tc.code || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, tc.msg) {
				t.Errorf("%s (validate only %v): code %d message %v, want %d with %q", tc.what, validateOnly, got.ErrorCode, str2(got.ErrorMessage), tc.code, tc.msg)
			}
		}
	}
	// Valid changes with validate_only: answered, not applied.
	for _, r := range incremental(true, topicT(setOp("retention.ms", "5000"), op{"retention.bytes", kmsg.IncrementalAlterConfigOpDelete, nil}),
		res{kmsg.ConfigResourceTypeBroker, "0", []op{{"log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil}}}) {
		if r.ErrorCode != 0 {
			t.Errorf("validate only %s: %d %v", r.ResourceName, r.ErrorCode, str2(r.ErrorMessage))
		}
	}
	// The same resource twice: both refused.
	for _, r := range incremental(false, topicT(setOp("retention.ms", "5000")), topicT(setOp("segment.ms", "5000"))) {
		if r.ErrorCode != invalidRequest || !strings.Contains(str2(r.ErrorMessage), "at most once") {
			t.Errorf("a resource twice: %d %v", r.ErrorCode, str2(r.ErrorMessage))
		}
	}
	if got, _ := ts.srv.cat.Topic("t"); len(got.Configs) != 1 || got.Configs["retention.bytes"] != "1000" {
		t.Fatalf("t's configs after refusals and validate_only: %v, want retention.bytes=1000 alone", got.Configs)
	}
	// A bad resource beside a good one: the good one is applied.
	out := incremental(false, topicT(setOp("segment.bytes", "1")), res{kmsg.ConfigResourceTypeTopic, "u", []op{setOp("segment.ms", "60000")}})
	if out[0].ErrorCode != invalidConfig || out[1].ErrorCode != 0 {
		t.Fatalf("bad beside good: %d, %d", out[0].ErrorCode, out[1].ErrorCode)
	}
	if got, _ := ts.srv.cat.Topic("u"); got.Configs["segment.ms"] != "60000" {
		t.Fatalf("u's configs: %v", got.Configs)
	}
	if n := m.ConfigChanges("topic"); n != 1 {
		t.Fatalf("logstore_config_changes_total{resource=topic} %v, want 1 (u alone)", n)
	}
	if got, _ := ts.srv.cat.Topic("t"); len(got.Configs) != 1 {
		t.Fatalf("t's configs: %v", got.Configs)
	}

	// The legacy call: the same checks, per resource.
	legacy := func(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsResponseResource {
		t.Helper()
		r := kmsg.NewPtrAlterConfigsRequest()
		r.Version = 2
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i+1 < len(kv); i += 2 {
			cfg := kmsg.NewAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = kv[i], str(kv[i+1])
			rr.Configs = append(rr.Configs, cfg)
		}
		r.Resources = append(r.Resources, rr)
		return c.do(r).(*kmsg.AlterConfigsResponse).Resources[0]
	}
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		kv   []string
		code int16
	}{
		{kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms", "-7"}, invalidConfig},
		{kmsg.ConfigResourceTypeTopic, "t", []string{"compression.type", "zstd"}, invalidConfig},
		{kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms", "1", "retention.ms", "2"}, invalidRequest},
		{kmsg.ConfigResourceTypeTopic, "nope", []string{"retention.ms", "1"}, kerr.UnknownTopicOrPartition.Code},
		{kmsg.ConfigResourceTypeBroker, "0", []string{"log.retention.ms", "1"}, invalidRequest},
		{kmsg.ConfigResourceTypeBrokerLogger, "0", nil, invalidRequest},
		{kmsg.ConfigResourceTypeBroker, "0", nil, 0},
		{kmsg.ConfigResourceTypeBroker, "", nil, 0},
	} {
		if got := legacy(tc.typ, tc.name, tc.kv...); got.ErrorCode != tc.code {
			t.Errorf("legacy %d %q %v: code %d (%v), want %d", tc.typ, tc.name, tc.kv, got.ErrorCode, str2(got.ErrorMessage), tc.code)
		}
	}
	if got, _ := ts.srv.cat.Topic("t"); len(got.Configs) != 1 || got.Configs["retention.bytes"] != "1000" {
		t.Fatalf("t's configs after the legacy refusals: %v", got.Configs)
	}
	// A config logstore does not apply, at the value it behaves as: taken
	// and not kept (a client writing back what it described).
	if got := legacy(kmsg.ConfigResourceTypeTopic, "u", "cleanup.policy", " delete", "min.insync.replicas", "1", "compression.type", "producer",
		"unclean.leader.election.enable", "FALSE", "retention.ms", "5000"); got.ErrorCode != 0 {
		t.Fatalf("the read-only configs at their values: %d %v", got.ErrorCode, str2(got.ErrorMessage))
	}
	if got, _ := ts.srv.cat.Topic("u"); len(got.Configs) != 1 || got.Configs["retention.ms"] != "5000" {
		t.Fatalf("u's configs: %v, want retention.ms=5000 alone", got.Configs)
	}
	out = incremental(false, res{kmsg.ConfigResourceTypeTopic, "u", []op{{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, str("delete")}}})
	if out[0].ErrorCode != 0 {
		t.Fatalf("APPEND delete to cleanup.policy (delete already): %d %v", out[0].ErrorCode, str2(out[0].ErrorMessage))
	}
	out = incremental(false, res{kmsg.ConfigResourceTypeTopic, "u", []op{{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, str("delete")}}})
	if out[0].ErrorCode != invalidConfig {
		t.Fatalf("SUBTRACT delete from cleanup.policy: %d %v, want 40", out[0].ErrorCode, str2(out[0].ErrorMessage))
	}
}

func str2(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// alterConfigsPy alters topic argv[2] with confluent-kafka-python's
// AdminClient.alter_configs (the legacy AlterConfigs: the whole set) and
// prints what describe_configs then shows, then an unknown config's
// failure.
const alterConfigsPy = `
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
r = ConfigResource("topic", sys.argv[2], set_config={"retention.ms": "120000", "segment.bytes": "2097152"})
for res, f in a.alter_configs([r]).items():
    f.result(timeout=20)
for res, f in a.describe_configs([ConfigResource("topic", sys.argv[2])]).items():
    cfg = f.result(timeout=20)
    for k in ("retention.ms", "segment.bytes", "retention.bytes"):
        e = cfg[k]
        print(k, e.value, e.source, e.is_read_only)
bad = ConfigResource("topic", sys.argv[2], set_config={"no.such.config": "1"})
try:
    a.alter_configs([bad])[bad].result(timeout=20)
    print("bad ok")
except Exception as e:
    print("bad failed", e.args[0].code() if e.args and hasattr(e.args[0], "code") else e)
`

// TestAlterConfigsConfluentPython: librdkafka's admin client replaces a
// topic's configs (retention.bytes, set before, goes) and sees the new
// values as DYNAMIC_TOPIC_CONFIG (1); an unknown config fails with
// INVALID_CONFIG (40).
func TestAlterConfigsConfluentPython(t *testing.T) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it)", err)
	}
	ts := startServer(t, logstore.Options{}, Config{})
	if _, err := ts.srv.cat.CreateTopic("p", 1, map[string]string{"retention.bytes": "1000"}, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", alterConfigsPy, ts.addr, "p")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	want := "retention.ms 120000 1 False\nsegment.bytes 2097152 1 False\nretention.bytes -1 5 False\nbad failed 40\n"
	if got := out.String(); got != want {
		t.Fatalf("python printed:\n%s\nwant:\n%s\nstderr:\n%s", got, want, strings.TrimSpace(errb.String()))
	}
}
