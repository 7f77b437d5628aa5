package topicadmin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

func TestParseConfigPairs(t *testing.T) {
	got, err := ParseConfigPairs("--config", []string{"retention.ms=1000", "a=b=c", "empty="})
	if err != nil || len(got) != 3 || got["retention.ms"] != "1000" || got["a"] != "b=c" || got["empty"] != "" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range [][]string{{"novalue"}, {"=1"}, {" =1"}, {"a=1", "a=2"}, {"a=\xff"}} {
		if m, err := ParseConfigPairs("--config", bad); err == nil || !strings.HasPrefix(err.Error(), "--config ") {
			t.Errorf("%q: %v, %v; want an error naming --config", bad, m, err)
		}
	}
}

func TestParseConfigOps(t *testing.T) {
	ops, err := ParseConfigOps([]string{"segment.ms=5"}, []string{"retention.ms"})
	if err != nil || len(ops) != 2 || ops[0].Name != "segment.ms" || *ops[0].Value != "5" || ops[1].Name != "retention.ms" || ops[1].Value != nil {
		t.Fatalf("got %+v, %v", ops, err)
	}
	for _, bad := range []struct{ sets, dels []string }{
		{[]string{"a=1"}, []string{"a"}},
		{nil, []string{"a", "a"}},
		{nil, []string{""}},
		{[]string{"a"}, nil},
	} {
		if ops, err := ParseConfigOps(bad.sets, bad.dels); err == nil {
			t.Errorf("%+v: %+v, no error", bad, ops)
		}
	}
}

// FuzzParseConfigPairs: any words either parse to one entry each, every
// entry the word it came from, or are refused; nothing panics.
func FuzzParseConfigPairs(f *testing.F) {
	f.Add("retention.ms=1000\x00a=b=c")
	f.Add("=\x00x")
	f.Fuzz(func(t *testing.T, joined string) {
		words := strings.Split(joined, "\x00")
		m, err := ParseConfigPairs("--set", words)
		if err != nil {
			return
		}
		if len(m) != len(words) {
			t.Fatalf("%q: %d entries", words, len(m))
		}
		for _, w := range words {
			name, value, _ := strings.Cut(w, "=")
			if m[name] != value {
				t.Fatalf("%q: %s=%q", w, name, m[name])
			}
		}
	})
}

// openLocal opens the store in dir and its catalog, closed when the test
// ends unless close is called first.
func openLocal(t *testing.T, dir string) (l *Local, store *logstore.Store, close func()) {
	t.Helper()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err = OpenLocal(store, 1)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	closed := false
	close = func() {
		if !closed {
			closed = true
			if err := errors.Join(l.Close(), store.Close()); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(close)
	return l, store, close
}

func appendValues(t *testing.T, store *logstore.Store, topic string, n int) {
	t.Helper()
	p, err := store.ExistingPartition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rb := recordbatch.NewBuilder(0)
		if err := rb.Append(1_700_000_000_000, nil, []byte{byte(i)}, nil); err != nil {
			t.Fatal(err)
		}
		b, err := rb.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalDurableAndRefusals: Local's changes are in the store after a
// reopen; its refusals are *Error with Kafka's code and leave the store
// as it was, after a reopen too.
func TestLocalDurableAndRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, store, closeStore := openLocal(t, dir)
	created, err := l.Create(ctx, "orders", -1, map[string]string{"retention.ms": "1000"})
	if err != nil || created.Partitions != 1 || created.ID == "" {
		t.Fatalf("create: %+v, %v", created, err)
	}
	appendValues(t, store, "orders", 5)
	if _, err := l.AlterConfigs(ctx, "orders", []ConfigOp{{Name: "segment.ms", Value: ptr("60000")}, {Name: "retention.ms"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddPartitions(ctx, "orders", 2); err != nil {
		t.Fatal(err)
	}
	if low, err := l.DeleteRecords(ctx, "orders", 0, 3); err != nil || low != 3 {
		t.Fatalf("delete records: %d, %v", low, err)
	}

	for _, c := range []struct {
		name string
		do   func() error
		code *kerr.Error
	}{
		{"create existing", func() error { _, err := l.Create(ctx, "orders", 1, nil); return err }, kerr.TopicAlreadyExists},
		{"create 0 partitions", func() error { _, err := l.Create(ctx, "x", 0, nil); return err }, kerr.InvalidPartitions},
		{"create bad config", func() error { _, err := l.Create(ctx, "x", 1, map[string]string{"segment.ms": "0"}); return err }, kerr.InvalidConfig},
		{"alter unknown config", func() error {
			_, err := l.AlterConfigs(ctx, "orders", []ConfigOp{{Name: "no.such", Value: ptr("1")}})
			return err
		}, kerr.InvalidConfig},
		{"alter duplicate", func() error {
			_, err := l.AlterConfigs(ctx, "orders", []ConfigOp{{Name: "segment.ms", Value: ptr("1")}, {Name: "segment.ms"}})
			return err
		}, kerr.InvalidRequest},
		{"alter bad name", func() error { _, err := l.AlterConfigs(ctx, "a b", []ConfigOp{{Name: "segment.ms"}}); return err }, kerr.InvalidTopicException},
		{"grow to fewer", func() error { return l.AddPartitions(ctx, "orders", 1) }, kerr.InvalidPartitions},
		{"grow unknown", func() error { return l.AddPartitions(ctx, "nope", 3) }, kerr.UnknownTopicOrPartition},
		{"delete records above", func() error { _, err := l.DeleteRecords(ctx, "orders", 0, 6); return err }, kerr.OffsetOutOfRange},
		{"delete records partition", func() error { _, err := l.DeleteRecords(ctx, "orders", -1, 0); return err }, kerr.UnknownTopicOrPartition},
		{"delete unknown", func() error { _, err := l.Delete(ctx, "nope"); return err }, kerr.UnknownTopicOrPartition},
		{"describe unknown", func() error { _, err := l.Describe(ctx, []string{"orders", "nope"}, false); return err }, kerr.UnknownTopicOrPartition},
	} {
		err := c.do()
		var ae *Error
		if !errors.Is(err, c.code) || !errors.As(err, &ae) {
			t.Errorf("%s: %v, want an *Error of %s", c.name, err, c.code.Message)
		}
	}
	closeStore()

	l, _, _ = openLocal(t, dir)
	ds, err := l.Describe(ctx, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].ID != created.ID || ds[0].PartitionCount != 2 {
		t.Fatalf("after a reopen: %+v", ds)
	}
	if p := ds[0].Partitions[0]; p.StartOffset != 3 || p.EndOffset != 5 {
		t.Fatalf("partition 0 after a reopen: %+v", p)
	}
	if cs := ds[0].Configs; len(cs) != 1 || cs[0].Name != "segment.ms" || *cs[0].Value != "60000" || cs[0].Source != sourceTopic {
		t.Fatalf("configs after a reopen: %+v", cs)
	}
	if _, err := l.Delete(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if ts, err := l.List(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("after delete: %+v, %v", ts, err)
	}
}

func ptr(s string) *string { return &s }

func TestText(t *testing.T) {
	ds := []Description{{Topic: "t", ID: "AAAAAAAAAAAAAAAAAAAAAA", PartitionCount: 2, ReplicationFactor: 1,
		Partitions: []Partition{
			{Partition: 0, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}, StartOffset: 0, EndOffset: 10},
			{Partition: 1, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}, StartOffset: 100, EndOffset: 1000},
		},
		Configs: []Config{{Name: "cleanup.policy", Value: ptr("delete"), Source: "DEFAULT_CONFIG"}, {Name: "retention.ms", Value: ptr("5"), Source: sourceTopic}},
	}}
	want := "Topic: t  TopicId: AAAAAAAAAAAAAAAAAAAAAA  PartitionCount: 2  ReplicationFactor: 1  Configs: retention.ms=5\n" +
		"  Topic: t  Partition: 0  Leader: 0  Replicas: 0  Isr: 0  StartOffset: 0    EndOffset: 10\n" +
		"  Topic: t  Partition: 1  Leader: 0  Replicas: 0  Isr: 0  StartOffset: 100  EndOffset: 1000\n" +
		"  Topic: t  Config: cleanup.policy=delete  Source: DEFAULT_CONFIG\n" +
		"  Topic: t  Config: retention.ms=5         Source: DYNAMIC_TOPIC_CONFIG\n"
	if got := string(DescribeText(ds, true)); got != want {
		t.Errorf("DescribeText:\n%s\nwant:\n%s", got, want)
	}
	if got, want := string(ListText([]Topic{{"a", "X", 1}, {"long-name", "Y", 12}})), "TOPIC      PARTITIONS  TOPIC ID\na          1           X\nlong-name  12          Y\n"; got != want {
		t.Errorf("ListText %q, want %q", got, want)
	}
	e := &Error{Op: "delete topic", Topic: "x", Code: kerr.UnknownTopicOrPartition}
	if got := e.Error(); got != `delete topic "x": UNKNOWN_TOPIC_OR_PARTITION: `+kerr.UnknownTopicOrPartition.Description {
		t.Errorf("Error() %q", got)
	}
}
