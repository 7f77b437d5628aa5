package kafkaserver

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
)

// describeConfigsSweepCode checks a DescribeConfigs answer of the version
// sweep (topic t, then broker 0, synonyms and docs asked for) as version
// v carries it, and returns its first error code.
func describeConfigsSweepCode(t *testing.T, v int16, resp kmsg.Response) int16 {
	t.Helper()
	r := resp.(*kmsg.DescribeConfigsResponse)
	if len(r.Resources) != 2 {
		t.Fatalf("%d resources, want 2", len(r.Resources))
	}
	for _, res := range r.Resources {
		if res.ErrorCode != 0 {
			return res.ErrorCode
		}
		if len(res.Configs) < 10 {
			t.Fatalf("resource %q: %d configs", res.ResourceName, len(res.Configs))
		}
		for _, c := range res.Configs {
			switch {
			case v >= 1 && len(c.ConfigSynonyms) == 0 && c.Name != "log.dirs" && c.Name != "log.roll.ms" && c.Name != "retention.ms" &&
				c.Name != "segment.ms" && c.Name != "flush.ms" && c.Name != "segment.jitter.ms" && c.Name != "log.retention.ms":
				t.Fatalf("v%d %s: no synonyms", v, c.Name)
			case v >= 3 && (c.Documentation == nil || *c.Documentation == "" || c.ConfigType == 0):
				t.Fatalf("v%d %s: documentation %v, type %d", v, c.Name, c.Documentation, c.ConfigType)
			case v >= 1 && c.Source != kmsg.ConfigSourceDefaultConfig && c.Source != kmsg.ConfigSourceStaticBrokerConfig:
				t.Fatalf("v%d %s: source %d", v, c.Name, c.Source)
			case v == 0 && c.Name == "segment.bytes" && !c.IsDefault:
				t.Fatalf("v%d %s: not default", v, c.Name)
			}
		}
	}
	return 0
}

func adminClient(t *testing.T, addr string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func configOf(t *testing.T, rc kadm.ResourceConfig, name string) kadm.Config {
	t.Helper()
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("%s: no config %s among %d", rc.Name, name, len(rc.Configs))
	return kadm.Config{}
}

type syn struct {
	name, value string
	src         kmsg.ConfigSource
}

func synonymsOf(c kadm.Config) []syn {
	var out []syn
	for _, s := range c.Synonyms {
		out = append(out, syn{s.Key, *s.Value, s.Source})
	}
	return out
}

// TestDescribeTopicConfigs: kadm (DescribeConfigs at its newest version)
// on a topic created with retention.ms and segment.bytes: those two are
// DYNAMIC_TOPIC_CONFIG, with the broker's value then Kafka's default as
// synonyms, the others the store's (STATIC_BROKER_CONFIG where it differs
// from Kafka's default) or Kafka's; cleanup.policy delete, read-only; an
// unknown topic 3, a bad name 17.
func TestDescribeTopicConfigs(t *testing.T) {
	ts := startServer(t, logstore.Options{MaxMessageBytes: 2 << 20}, Config{})
	adm := adminClient(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ret, seg := "3600000", " 2097152"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &ret, "segment.bytes": &seg}, "r"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "r", "missing", "bad/name")
	if err != nil {
		t.Fatal(err)
	}
	r, err := rcs.On("r", nil)
	if err != nil || r.Err != nil {
		t.Fatalf("r: %v %v", err, r.Err)
	}
	checks := []struct {
		name, value string
		src         kmsg.ConfigSource
		synonyms    []syn
	}{
		{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig, []syn{
			{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
			{"log.retention.ms", "-1", kmsg.ConfigSourceStaticBrokerConfig},
			{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig}}},
		{"segment.bytes", "2097152", kmsg.ConfigSourceDynamicTopicConfig, []syn{
			{"segment.bytes", "2097152", kmsg.ConfigSourceDynamicTopicConfig},
			{"log.segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig}}},
		{"max.message.bytes", "2097152", kmsg.ConfigSourceStaticBrokerConfig, []syn{
			{"message.max.bytes", "2097152", kmsg.ConfigSourceStaticBrokerConfig},
			{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig}}},
		{"retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig, []syn{
			{"log.retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig}}},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, nil},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, []syn{
			{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig}}},
		{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig, []syn{
			{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig}}},
	}
	for _, want := range checks {
		c := configOf(t, r, want.name)
		if c.MaybeValue() != want.value || c.Source != want.src || !slices.Equal(synonymsOf(c), want.synonyms) || c.Sensitive {
			t.Errorf("%s = %q source %d synonyms %v, want %q source %d synonyms %v",
				want.name, c.MaybeValue(), c.Source, synonymsOf(c), want.value, want.src, want.synonyms)
		}
	}
	if m, err := rcs.On("missing", nil); err != nil || m.Err != kerr.UnknownTopicOrPartition || len(m.Configs) != 0 {
		t.Errorf("missing: %v %v %d configs", err, m.Err, len(m.Configs))
	}
	if b, err := rcs.On("bad/name", nil); err != nil || b.Err != kerr.InvalidTopicException {
		t.Errorf("bad/name: %v %v", err, b.Err)
	}
}

// TestDescribeConfigsFields: ReadOnly (false only for the configs the
// catalog takes per topic, every broker config true), documentation and
// type (v3+), v0's IsDefault, and the key filter (a name the topic does
// not have is left out; an empty list is every config).
func TestDescribeConfigsFields(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{AutoCreateTopics: true, DefaultPartitions: 3})
	ts.createTopic("t", 1)
	c := ts.dial()
	describe := func(v int16, typ kmsg.ConfigResourceType, name string, keys []string) kmsg.DescribeConfigsResponseResource {
		t.Helper()
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Version = v
		r.IncludeSynonyms, r.IncludeDocumentation = v >= 1, v >= 3
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, keys
		r.Resources = append(r.Resources, rr)
		resp := c.do(r).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 {
			t.Fatalf("%d resources", len(resp.Resources))
		}
		return resp.Resources[0]
	}
	all := describe(4, kmsg.ConfigResourceTypeTopic, "t", nil)
	writable := map[string]bool{"segment.bytes": true, "segment.ms": true, "max.message.bytes": true, "retention.bytes": true, "retention.ms": true}
	for _, cfg := range all.Configs {
		if cfg.ReadOnly == writable[cfg.Name] || cfg.IsSensitive || cfg.Documentation == nil {
			t.Errorf("%s: read-only %v sensitive %v doc %v", cfg.Name, cfg.ReadOnly, cfg.IsSensitive, cfg.Documentation)
		}
	}
	if got := describe(4, kmsg.ConfigResourceTypeTopic, "t", []string{}); len(got.Configs) != len(all.Configs) {
		t.Errorf("empty key list: %d configs, want all %d", len(got.Configs), len(all.Configs))
	}
	f := describe(4, kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms", "no.such.config", "cleanup.policy"})
	if f.ErrorCode != 0 || len(f.Configs) != 2 || f.Configs[0].Name != "cleanup.policy" || f.Configs[1].Name != "retention.ms" ||
		*f.Configs[1].Value != "-1" || f.Configs[1].ConfigType != kmsg.ConfigTypeLong || f.Configs[0].ConfigType != kmsg.ConfigTypeList {
		t.Errorf("key filter: %+v", f)
	}
	v0 := describe(0, kmsg.ConfigResourceTypeTopic, "t", []string{"segment.bytes", "retention.ms"})
	if len(v0.Configs) != 2 || !v0.Configs[1].IsDefault || v0.Configs[0].IsDefault {
		t.Errorf("v0 IsDefault: %+v", v0.Configs)
	}
	b := describe(4, kmsg.ConfigResourceTypeBroker, "0", nil)
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cfg := range b.Configs {
		if !cfg.ReadOnly {
			t.Errorf("broker %s not read-only", cfg.Name)
		}
		got[cfg.Name] = cfg
	}
	for name, want := range map[string]struct {
		value string
		src   kmsg.ConfigSource
	}{
		"num.partitions":             {"3", kmsg.ConfigSourceStaticBrokerConfig},
		"auto.create.topics.enable":  {"true", kmsg.ConfigSourceDefaultConfig},
		"default.replication.factor": {"1", kmsg.ConfigSourceDefaultConfig},
		"log.dir":                    {ts.store.Dir(), kmsg.ConfigSourceStaticBrokerConfig},
		"log.retention.ms":           {"-1", kmsg.ConfigSourceStaticBrokerConfig},
		"log.segment.bytes":          {"1073741824", kmsg.ConfigSourceDefaultConfig},
		"transaction.max.timeout.ms": {"900000", kmsg.ConfigSourceDefaultConfig},
		"offsets.retention.minutes":  {"10080", kmsg.ConfigSourceDefaultConfig},
	} {
		cfg, ok := got[name]
		if !ok || cfg.Value == nil || *cfg.Value != want.value || cfg.Source != want.src {
			t.Errorf("broker %s: %+v, want %q source %d", name, cfg, want.value, want.src)
		}
	}
	if n := describe(4, kmsg.ConfigResourceTypeBroker, "", nil); n.ErrorCode != 0 || len(n.Configs) != 0 {
		t.Errorf(`broker "": code %d, %d configs (no dynamic defaults)`, n.ErrorCode, len(n.Configs))
	}
	for _, bad := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, "7"}, {kmsg.ConfigResourceTypeBroker, "x"}, {kmsg.ConfigResourceTypeBrokerLogger, "0"},
		{kmsg.ConfigResourceTypeGroupConfig, "g"}, {99, "z"}} {
		if r := describe(4, bad.typ, bad.name, nil); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || len(r.Configs) != 0 {
			t.Errorf("type %d %q: code %d, %d configs", bad.typ, bad.name, r.ErrorCode, len(r.Configs))
		}
	}
}

// TestDescribeBrokerConfigsKadm: kadm's DescribeBrokerConfigs of broker
// 0 and of the cluster-wide defaults ("").
func TestDescribeBrokerConfigsKadm(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	adm := adminClient(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rcs.On("0", nil)
	if err != nil || r.Err != nil {
		t.Fatalf("broker 0: %v %v", err, r.Err)
	}
	if c := configOf(t, r, "message.max.bytes"); c.MaybeValue() != "1048588" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("message.max.bytes: %+v", c)
	}
	if c := configOf(t, r, "auto.create.topics.enable"); c.MaybeValue() != "false" || c.Source != kmsg.ConfigSourceStaticBrokerConfig ||
		!slices.Equal(synonymsOf(c), []syn{{"auto.create.topics.enable", "false", kmsg.ConfigSourceStaticBrokerConfig}, {"auto.create.topics.enable", "true", kmsg.ConfigSourceDefaultConfig}}) {
		t.Errorf("auto.create.topics.enable: %+v %v", c, synonymsOf(c))
	}
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil || len(rcs[0].Configs) != 0 {
		t.Fatalf("cluster defaults: %v %+v", err, rcs)
	}
}

// describeConfigsPy prints cleanup.policy's value and source, and
// retention.ms's, of the topic argv[2] as confluent-kafka-python's
// AdminClient.describe_configs sees them (Schema Registry and Kafka
// Connect check cleanup.policy so), then whether an unknown topic fails.
const describeConfigsPy = `
import sys
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for res, f in a.describe_configs([ConfigResource("topic", sys.argv[2])]).items():
    cfg = f.result(timeout=20)
    for k in ("cleanup.policy", "retention.ms"):
        e = cfg[k]
        print(k, e.value, e.source, e.is_read_only)
try:
    a.describe_configs([ConfigResource("topic", "no-such-topic")])[ConfigResource("topic", "no-such-topic")].result(timeout=20)
    print("missing ok")
except Exception as e:
    print("missing failed", e.args[0].code() if e.args and hasattr(e.args[0], "code") else e)
`

// TestDescribeConfigsConfluentPython: librdkafka's admin client reads
// cleanup.policy=delete (DEFAULT_CONFIG, 5; read-only) and the topic's
// own retention.ms (DYNAMIC_TOPIC_CONFIG, 1); an unknown topic fails
// with 3.
func TestDescribeConfigsConfluentPython(t *testing.T) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it)", err)
	}
	ts := startServer(t, logstore.Options{}, Config{})
	if _, err := ts.srv.cat.CreateTopic("sr", 1, map[string]string{"retention.ms": "60000"}, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", describeConfigsPy, ts.addr, "sr")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	want := "cleanup.policy delete 5 True\nretention.ms 60000 1 False\nmissing failed 3\n"
	if got := out.String(); got != want {
		t.Fatalf("python printed:\n%s\nwant:\n%s\nstderr:\n%s", got, want, strings.TrimSpace(errb.String()))
	}
}
