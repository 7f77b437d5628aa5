package main

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/topicadmin"
)

// topicsTarget is where a topics test sends its commands: a store
// directory (--dir) or a running serve (--bootstrap), and how it writes
// records to a partition there.
type topicsTarget struct {
	flags   []string
	produce func(t *testing.T, topic string, partition int32, values ...string)
}

func (tg topicsTarget) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(t, append(append([]string{"topics"}, args...), tg.flags...)...)
}

// ok runs args and fails the test unless they exit 0.
func (tg topicsTarget) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := tg.run(t, args...)
	if code != 0 {
		t.Fatalf("topics %v: exit %d: %s%s", args, code, out, errOut)
	}
	return out
}

// describe is describe --json of every topic.
func (tg topicsTarget) describe(t *testing.T, args ...string) []topicadmin.Description {
	t.Helper()
	out := tg.ok(t, append([]string{"describe", "--json"}, args...)...)
	var ds []topicadmin.Description
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var d topicadmin.Description
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("describe line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds
}

func offlineTarget(dir string) topicsTarget {
	return topicsTarget{flags: []string{"--dir", dir, "--lock-timeout", "0"},
		produce: func(t *testing.T, topic string, partition int32, values ...string) {
			t.Helper()
			args := append([]string{"append", "--dir", dir, "--lock-timeout", "0", "--topic", topic, "--partition", strconv.Itoa(int(partition))}, values...)
			if out, errOut, code := runCLI(t, args...); code != 0 {
				t.Fatalf("append: %s%s", out, errOut)
			}
		}}
}

func onlineTarget(t *testing.T, dir string) topicsTarget {
	srv := serveInProcess(t, "--dir", dir, "--listen", "127.0.0.1:0", "--sync", "never", "--auto-create-topics=false")
	addr := regexp.MustCompile(`^logstore serve: listening on (\S+),`).FindStringSubmatch(srv.ready)[1]
	return topicsTarget{flags: []string{"--bootstrap", addr, "--request-timeout", "10s"},
		produce: func(t *testing.T, topic string, partition int32, values ...string) {
			t.Helper()
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, v := range values {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}}
}

// TestTopics runs one scenario on a store (--dir) and on serve over a
// store (--bootstrap), then compares their refusals: each bad input is
// refused with the same Kafka code and message either way
// (delete-records offline adds the store's reason to the code's
// description, DeleteRecords answering no message).
func TestTopics(t *testing.T) {
	var off, on map[string]string
	var offConfigs, onConfigs []topicadmin.Config
	t.Run("offline", func(t *testing.T) { off, offConfigs = topicsScenario(t, offlineTarget(t.TempDir())) })
	t.Run("bootstrap", func(t *testing.T) { on, onConfigs = topicsScenario(t, onlineTarget(t, t.TempDir())) })
	if off == nil || on == nil {
		return
	}
	if x, y := jsonText(offConfigs), jsonText(onConfigs); x != y {
		t.Errorf("--all-configs offline:\n%s\nover serve:\n%s", x, y)
	}
	for name, msg := range off {
		switch {
		case strings.Contains(msg, "OFFSET_OUT_OF_RANGE"):
			if !strings.HasPrefix(msg, on[name]) {
				t.Errorf("%s: offline %q, online %q", name, msg, on[name])
			}
		case msg != on[name]:
			t.Errorf("%s: offline %q, online %q", name, msg, on[name])
		}
	}
}

// topicsScenario runs every subcommand on tg, good input and bad, and
// returns the refusals' messages (stderr past the command's name) by
// case, and the topic's configs as describe --all-configs gave them.
func topicsScenario(t *testing.T, tg topicsTarget) (map[string]string, []topicadmin.Config) {
	t.Helper()
	if out := tg.ok(t, "create", "--topic", "orders", "--partitions", "2", "--config", "retention.ms=1000", "--config", "cleanup.policy=delete"); out != "Created topic orders.\n" {
		t.Fatalf("create printed %q", out)
	}
	tg.produce(t, "orders", 0, "a", "b", "c", "d")
	if out := tg.ok(t, "list"); !regexp.MustCompile(`(?m)^TOPIC +PARTITIONS +TOPIC ID\norders +2 +[A-Za-z0-9_-]{22}$`).MatchString(out) {
		t.Fatalf("list printed %q", out)
	}
	var listed topicadmin.Topic
	if err := json.Unmarshal([]byte(tg.ok(t, "list", "--json")), &listed); err != nil || listed.Topic != "orders" || listed.Partitions != 2 {
		t.Fatalf("list --json: %+v, %v", listed, err)
	}

	ds := tg.describe(t)
	if len(ds) != 1 || ds[0].ID != listed.ID || ds[0].PartitionCount != 2 || ds[0].ReplicationFactor != 1 || len(ds[0].Partitions) != 2 {
		t.Fatalf("describe: %+v", ds)
	}
	p0 := ds[0].Partitions[0]
	if p0.Leader != 0 || !slices.Equal(p0.Replicas, []int32{0}) || !slices.Equal(p0.ISR, []int32{0}) || p0.StartOffset != 0 || p0.EndOffset != 4 {
		t.Fatalf("partition 0: %+v", p0)
	}
	if cs := ds[0].Configs; len(cs) != 1 || cs[0].Name != "retention.ms" || *cs[0].Value != "1000" || cs[0].Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("own configs: %+v", cs)
	}
	all := tg.describe(t, "--topic", "orders", "--all-configs")
	var policy *topicadmin.Config
	for i, c := range all[0].Configs {
		if c.Name == "cleanup.policy" {
			policy = &all[0].Configs[i]
		}
	}
	if len(all[0].Configs) < 20 || policy == nil || *policy.Value != "delete" || policy.Source != "DEFAULT_CONFIG" {
		t.Fatalf("all configs: %+v", all[0].Configs)
	}
	text := tg.ok(t, "describe", "--topic", "orders")
	if !strings.HasPrefix(text, "Topic: orders  TopicId: "+listed.ID+"  PartitionCount: 2  ReplicationFactor: 1  Configs: retention.ms=1000\n") ||
		!regexp.MustCompile(`(?m)^  Topic: orders  Partition: 0  Leader: 0  Replicas: 0  Isr: 0  StartOffset: 0  EndOffset: 4$`).MatchString(text) {
		t.Fatalf("describe printed %q", text)
	}

	out := tg.ok(t, "alter-configs", "--topic", "orders", "--set", "segment.bytes=2097152", "--delete", "retention.ms", "--json")
	if want := `{"topic":"orders","configs":[{"name":"segment.bytes","value":"2097152","source":"DYNAMIC_TOPIC_CONFIG"}]}` + "\n"; out != want {
		t.Fatalf("alter-configs printed %q, want %q", out, want)
	}

	// Bad input: each refused with Kafka's code and message, nothing changed.
	before := tg.describe(t)
	refusals := map[string]string{}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"create negative partitions", []string{"create", "--topic", "x", "--partitions", "-5"}, `create topic "x": INVALID_PARTITIONS: `},
		{"create existing", []string{"create", "--topic", "orders"}, `create topic "orders": TOPIC_ALREADY_EXISTS: `},
		{"create bad config value", []string{"create", "--topic", "x", "--config", "segment.bytes=12"}, `create topic "x": INVALID_CONFIG: `},
		{"create unknown config", []string{"create", "--topic", "x", "--config", "no.such=1"}, `create topic "x": INVALID_CONFIG: Unknown topic config name: no.such`},
		{"create read-only config", []string{"create", "--topic", "x", "--config", "cleanup.policy=compact"}, `create topic "x": INVALID_CONFIG: Topic config cleanup.policy=compact is not supported by logstore`},
		{"create bad name", []string{"create", "--topic", "a/b"}, `create topic "a/b": INVALID_TOPIC_EXCEPTION: `},
		{"create config not k=v", []string{"create", "--topic", "x", "--config", "segment.bytes"}, `--config "segment.bytes": want NAME=VALUE`},
		{"alter bad value", []string{"alter-configs", "--topic", "orders", "--set", "segment.bytes=12"},
			`alter configs of topic "orders": INVALID_CONFIG: Invalid value 12 for configuration segment.bytes: `},
		{"alter read-only config", []string{"alter-configs", "--topic", "orders", "--set", "cleanup.policy=compact"},
			`alter configs of topic "orders": INVALID_CONFIG: Topic config cleanup.policy=compact is not supported by logstore`},
		{"alter unknown topic", []string{"alter-configs", "--topic", "nope", "--set", "segment.bytes=2097152"},
			`alter configs of topic "nope": UNKNOWN_TOPIC_OR_PARTITION: The topic 'nope' does not exist.`},
		{"alter set and delete", []string{"alter-configs", "--topic", "orders", "--set", "segment.ms=5", "--delete", "segment.ms"}, `config segment.ms is also given to --set`},
		{"alter nothing", []string{"alter-configs", "--topic", "orders"}, `nothing to alter`},
		{"add-partitions not an increase", []string{"add-partitions", "--topic", "orders", "--partitions", "2"}, `add partitions to topic "orders": INVALID_PARTITIONS: `},
		{"add-partitions negative", []string{"add-partitions", "--topic", "orders", "--partitions", "-3"}, `add partitions to topic "orders": INVALID_PARTITIONS: `},
		{"add-partitions unknown topic", []string{"add-partitions", "--topic", "nope", "--partitions", "3"}, `add partitions to topic "nope": UNKNOWN_TOPIC_OR_PARTITION: `},
		{"delete-records above the high watermark", []string{"delete-records", "--topic", "orders", "--partition", "0", "--offset", "99"},
			`delete records of "orders-0": OFFSET_OUT_OF_RANGE: The requested offset is not within the range of offsets maintained by the server.`},
		{"delete-records below -1", []string{"delete-records", "--topic", "orders", "--partition", "0", "--offset", "-2"}, `delete records of "orders-0": OFFSET_OUT_OF_RANGE: `},
		{"delete-records unknown partition", []string{"delete-records", "--topic", "orders", "--partition", "7", "--offset", "0"}, `delete records of "orders-7": UNKNOWN_TOPIC_OR_PARTITION: `},
		{"delete unknown topic", []string{"delete", "--topic", "nope"}, `delete topic "nope": UNKNOWN_TOPIC_OR_PARTITION: `},
		{"describe unknown topic", []string{"describe", "--topic", "nope"}, `describe topic "nope": UNKNOWN_TOPIC_OR_PARTITION: The topic 'nope' does not exist.`},
	} {
		out, errOut, code := tg.run(t, c.args...)
		if code != exitError || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.name, code, out, errOut, c.want)
		}
		_, msg, _ := strings.Cut(strings.TrimSuffix(errOut, "\n"), ": ")
		refusals[c.name] = msg
	}
	if after := tg.describe(t); !sameDescriptions(before, after) {
		t.Fatalf("refusals changed the topics:\nbefore %+v\nafter  %+v", before, after)
	}

	if out := tg.ok(t, "add-partitions", "--topic", "orders", "--partitions", "3"); out != "Topic orders now has 3 partitions.\n" {
		t.Fatalf("add-partitions printed %q", out)
	}
	if ds := tg.describe(t, "--topic", "orders"); ds[0].PartitionCount != 3 || len(ds[0].Partitions) != 3 || ds[0].Partitions[2].EndOffset != 0 {
		t.Fatalf("after add-partitions: %+v", ds)
	}
	if out := tg.ok(t, "delete-records", "--topic", "orders", "--partition", "0", "--offset", "2"); out != "partition: orders-0\tlow_watermark: 2\n" {
		t.Fatalf("delete-records printed %q", out)
	}
	if out := tg.ok(t, "delete-records", "--topic", "orders", "--partition", "0", "--offset", "-1", "--json"); out != `{"topic":"orders","partition":0,"lowWatermark":4}`+"\n" {
		t.Fatalf("delete-records -1 printed %q", out)
	}
	if p := tg.describe(t, "--topic", "orders")[0].Partitions[0]; p.StartOffset != 4 || p.EndOffset != 4 {
		t.Fatalf("after delete-records: %+v", p)
	}
	if out := tg.ok(t, "delete", "--topic", "orders"); out != "Deleted topic orders.\n" {
		t.Fatalf("delete printed %q", out)
	}
	if out := tg.ok(t, "list", "--json"); out != "" {
		t.Fatalf("list after delete: %q", out)
	}
	return refusals, all[0].Configs
}

func sameDescriptions(a, b []topicadmin.Description) bool { return jsonText(a) == jsonText(b) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestTopicsStoreInUse: offline, topics takes the store's lock, so it
// refuses while serve holds the store, and --dir with --bootstrap is
// refused.
func TestTopicsStoreInUse(t *testing.T) {
	dir := t.TempDir()
	on := onlineTarget(t, dir)
	on.ok(t, "create", "--topic", "orders", "--partitions", "1")
	_, errOut, code := offlineTarget(dir).run(t, "list")
	if code != exitError || !strings.Contains(errOut, "store in use") {
		t.Fatalf("list while serve runs: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, append([]string{"topics", "list", "--dir", dir}, on.flags...)...)
	if code != exitError || !strings.Contains(errOut, "give --dir or --bootstrap, not both") {
		t.Fatalf("--dir with --bootstrap: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "topics", "list", "--dir", dir+"/none")
	if code != exitError || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("a missing store: exit %d, %q", code, errOut)
	}
}
