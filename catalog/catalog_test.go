package catalog_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// env is a store and its catalog in dir.
type env struct {
	t   testing.TB
	dir string
	s   *logstore.Store
	c   *catalog.Catalog
}

func open(t testing.TB, dir string) *env {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(s)
	if err != nil {
		s.Close()
		t.Fatalf("catalog.Open: %v", err)
	}
	e := &env{t: t, dir: dir, s: s, c: c}
	t.Cleanup(func() { e.close() })
	return e
}

func (e *env) close() {
	e.t.Helper()
	if e.c == nil {
		return
	}
	if err := e.c.Close(); err != nil {
		e.t.Error(err)
	}
	if err := e.s.Close(); err != nil {
		e.t.Error(err)
	}
	e.c, e.s = nil, nil
}

// reopen closes e and opens the store and catalog again.
func (e *env) reopen() *env {
	e.t.Helper()
	e.close()
	return open(e.t, e.dir)
}

func (e *env) create(name string, partitions int32, configs map[string]string) catalog.Topic {
	e.t.Helper()
	tp, err := e.c.CreateTopic(name, partitions, configs, false)
	if err != nil {
		e.t.Fatalf("CreateTopic(%q): %v", name, err)
	}
	return tp
}

// checkDirs checks that topic tp has exactly its partition directories,
// each with a partition.metadata naming its id, in Kafka's bytes.
func checkDirs(t testing.TB, dir string, tp catalog.Topic) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := int32(0)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tp.Name+"-")
		if !ok || strings.ContainsAny(rest, ".-_") || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		n++
		got, err := os.ReadFile(filepath.Join(dir, e.Name(), catalog.MetadataFileName))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if want := catalog.EncodePartitionMetadata(tp.ID); !bytes.Equal(got, want) {
			t.Fatalf("%s/partition.metadata = %q, want %q", e.Name(), got, want)
		}
	}
	if n != tp.Partitions {
		t.Fatalf("topic %s: %d partition directories, want %d", tp.Name, n, tp.Partitions)
	}
}

func TestClusterIDPersisted(t *testing.T) {
	e := open(t, t.TempDir())
	id := e.c.ClusterID()
	if len(id) != 22 {
		t.Fatalf("cluster id %q is %d characters, want 22", id, len(id))
	}
	if b, err := base64.RawURLEncoding.DecodeString(id); err != nil || len(b) != 16 {
		t.Fatalf("cluster id %q: %v, %d bytes", id, err, len(b))
	}
	e = e.reopen()
	if got := e.c.ClusterID(); got != id {
		t.Fatalf("cluster id after reopen %q, want %q", got, id)
	}
	if other := open(t, t.TempDir()).c.ClusterID(); other == id {
		t.Fatalf("two stores share the cluster id %q", id)
	}
}

func TestProducerIDsNeverRepeatAcrossReopen(t *testing.T) {
	e := open(t, t.TempDir())
	seen := map[int64]bool{}
	for round := range 4 {
		n := []int{3, catalog.ProducerIDBlock + 5, 1, 0}[round]
		for range n {
			id, err := e.c.NewProducerID()
			if err != nil {
				t.Fatal(err)
			}
			if id < 0 || seen[id] {
				t.Fatalf("round %d: producer id %d (seen before: %t)", round, id, seen[id])
			}
			seen[id] = true
		}
		e = e.reopen()
	}
	if id, _ := e.c.NewProducerID(); seen[id] {
		t.Fatalf("producer id %d again", id)
	}
	c := e.c
	e.close()
	if _, err := c.NewProducerID(); !errors.Is(err, catalog.ErrClosed) {
		t.Fatalf("NewProducerID after Close: %v, want ErrClosed", err)
	}
}

func TestCreateTopic(t *testing.T) {
	e := open(t, t.TempDir())
	configs := map[string]string{"retention.ms": "-1", "segment.bytes": "1048576"}
	tp := e.create("events", 3, configs)
	if tp.Name != "events" || tp.Partitions != 3 || tp.ID.IsZero() || tp.Configs["retention.ms"] != "-1" {
		t.Fatalf("CreateTopic = %+v", tp)
	}
	checkDirs(t, e.dir, tp)
	ids, err := e.s.Partitions()
	if err != nil || len(ids) != 3 {
		t.Fatalf("Partitions = %v, %v", ids, err)
	}
	other := e.create("other", 1, nil)
	e = e.reopen()
	got := e.c.Topics()
	want := []catalog.Topic{tp, other}
	if len(got) != 2 || got[0].Name != "events" || got[0].ID != tp.ID || got[0].Partitions != 3 ||
		got[0].Configs["segment.bytes"] != "1048576" || got[1].ID != other.ID {
		t.Fatalf("Topics after reopen = %+v, want %+v", got, want)
	}
	if g, ok := e.c.Topic("events"); !ok || g.ID != tp.ID {
		t.Fatalf("Topic(events) = %+v, %t", g, ok)
	}
	if _, ok := e.c.Topic("nope"); ok {
		t.Fatal("Topic(nope) found")
	}
	checkDirs(t, e.dir, tp)
	// The configs returned are copies.
	g, _ := e.c.Topic("events")
	g.Configs["retention.ms"] = "5"
	if g2, _ := e.c.Topic("events"); g2.Configs["retention.ms"] != "-1" {
		t.Fatal("a caller changed the catalog's configs")
	}
}

func TestCreateTopicRefused(t *testing.T) {
	e := open(t, t.TempDir())
	e.create("a.b", 1, nil)
	before := testutil.FileSums(t, e.dir)
	for _, tc := range []struct {
		name       string
		partitions int32
		configs    map[string]string
		want       error
	}{
		{"", 1, nil, catalog.ErrInvalidTopic},
		{"bad/name", 1, nil, logstore.ErrInvalidName},
		{"..", 1, nil, catalog.ErrInvalidTopic},
		{"a.b", 1, nil, catalog.ErrTopicExists},
		{"a.b", 0, map[string]string{"x": "y"}, catalog.ErrTopicExists}, // the name first
		{"a_b", 1, nil, catalog.ErrInvalidTopic},
		{"__consumer_offsets", 1, nil, catalog.ErrInvalidTopic},
		{"__transaction_state", 1, nil, catalog.ErrInvalidTopic},
		{"__cluster_metadata", 1, nil, catalog.ErrInvalidTopic},
		{"c", 0, nil, catalog.ErrInvalidPartitions},
		{"c", -1, nil, catalog.ErrInvalidPartitions},
		{"c", catalog.MaxPartitions + 1, nil, catalog.ErrInvalidPartitions},
		{"c", 1, map[string]string{"cleanup.policy": "compact"}, catalog.ErrUnknownConfig},
		{"c", 1, map[string]string{"segment.bytes": "1048575"}, catalog.ErrInvalidConfig},
		{"c", 1, map[string]string{"segment.bytes": "2147483648"}, catalog.ErrInvalidConfig},
		{"c", 1, map[string]string{"segment.ms": "0"}, catalog.ErrInvalidConfig},
		{"c", 1, map[string]string{"retention.ms": "-2"}, catalog.ErrInvalidConfig},
		{"c", 1, map[string]string{"retention.bytes": "lots"}, catalog.ErrInvalidConfig},
		{"c", 1, map[string]string{"max.message.bytes": "-1"}, catalog.ErrInvalidConfig},
	} {
		for _, validateOnly := range []bool{false, true} {
			_, err := e.c.CreateTopic(tc.name, tc.partitions, tc.configs, validateOnly)
			if !errors.Is(err, tc.want) {
				t.Errorf("CreateTopic(%q, %d, %v, %t) = %v, want %v", tc.name, tc.partitions, tc.configs, validateOnly, err, tc.want)
			}
			var ce *catalog.ConfigError
			if isConfig := errors.Is(tc.want, catalog.ErrUnknownConfig) || errors.Is(tc.want, catalog.ErrInvalidConfig); isConfig != errors.As(err, &ce) {
				t.Errorf("CreateTopic(%q, %v): %v; a *ConfigError: %t, want %t", tc.name, tc.configs, err, !isConfig, isConfig)
			} else if isConfig {
				for k, v := range tc.configs {
					if ce.Name != k || ce.Value != v {
						t.Errorf("ConfigError %+v, want %s=%s", ce, k, v)
					}
				}
			}
		}
	}
	if tp, err := e.c.CreateTopic("valid", 2, map[string]string{"retention.bytes": "-1"}, true); err != nil || tp.Partitions != 2 {
		t.Fatalf("validate only: %+v, %v", tp, err)
	}
	if _, ok := e.c.Topic("valid"); ok {
		t.Fatal("validate only created the topic")
	}
	if after := testutil.FileSums(t, e.dir); len(after) != len(before) {
		t.Fatalf("refused creations changed the store: %d files, were %d", len(after), len(before))
	}
}

func TestDeleteTopic(t *testing.T) {
	e := open(t, t.TempDir())
	tp := e.create("doomed", 2, map[string]string{"segment.bytes": "1048576"})
	keep := e.create("kept", 1, nil)
	p, err := e.s.Partition("doomed", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batch(-1, "x")); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.DeleteTopic("doomed")
	if err != nil || got.ID != tp.ID {
		t.Fatalf("DeleteTopic = %+v, %v", got, err)
	}
	if _, err := p.Append(batch(-1, "y")); !errors.Is(err, logstore.ErrClosed) {
		t.Fatalf("append after delete: %v, want ErrClosed", err)
	}
	if _, err := e.c.DeleteTopic("doomed"); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Fatalf("second DeleteTopic: %v, want ErrUnknownTopic", err)
	}
	e = e.reopen()
	if _, ok := e.c.Topic("doomed"); ok {
		t.Fatal("deleted topic back after reopen")
	}
	ids, _ := e.s.Partitions()
	if !slices.Equal(ids, []logstore.PartitionID{{Topic: "kept", Partition: 0}}) {
		t.Fatalf("Partitions = %v", ids)
	}
	checkDirs(t, e.dir, keep)
	// The name can be used again: a new id, empty partitions.
	again := e.create("doomed", 1, nil)
	if again.ID == tp.ID {
		t.Fatal("a recreated topic kept its old id")
	}
	p, err = e.s.Partition("doomed", 0)
	if err != nil || p.EndOffset() != 0 {
		t.Fatalf("recreated partition: %v, end %d", err, p.EndOffset())
	}
}

// batch is a client batch of values, of producer pid at epoch 0 from
// sequence 0 (pid -1: no producer).
func batch(pid int64, values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, 0
	}
	for _, v := range values {
		if err := b.Append(1_700_000_000_000, nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

func logCount(t testing.TB, pdir string) int {
	t.Helper()
	entries, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// A topic's segment.bytes makes its partitions roll, at creation and
// after a reopen, while another topic keeps the store's 1 GiB.
func TestConfigsApplied(t *testing.T) {
	e := open(t, t.TempDir())
	e.create("small", 1, map[string]string{"segment.bytes": "1048576"})
	e.create("big", 1, nil)
	value := strings.Repeat("v", 300_000)
	write := func(e *env) {
		for _, topic := range []string{"small", "big"} {
			p, err := e.s.Partition(topic, 0)
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				if _, err := p.Append(batch(-1, value)); err != nil {
					t.Fatal(err)
				}
			}
			// A roll's new segment gets its .log name in the
			// background flush.
			if err := p.Flushed(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(e)
	if n := logCount(t, filepath.Join(e.dir, "small-0")); n != 2 {
		t.Fatalf("small-0: %d segments after 1.2 MB, want 2", n)
	}
	e = e.reopen()
	write(e)
	if n := logCount(t, filepath.Join(e.dir, "small-0")); n < 3 {
		t.Fatalf("small-0: %d segments after 2.4 MB and a reopen, want at least 3", n)
	}
	if n := logCount(t, filepath.Join(e.dir, "big-0")); n != 1 {
		t.Fatalf("big-0: %d segments, want 1", n)
	}
}

// Partition directories the catalog does not know (here written by the
// store alone) are adopted at Open as a topic, with a new id written in
// each, missing partitions made, and the producer ids they remember kept
// out of the allocator.
func TestAdoptStoreDirs(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []int32{0, 2} {
		p, err := s.Partition("old", part)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(batch(4321, "a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e := open(t, dir)
	tp, ok := e.c.Topic("old")
	if !ok || tp.Partitions != 3 || tp.ID.IsZero() {
		t.Fatalf("adopted topic %+v, %t", tp, ok)
	}
	checkDirs(t, dir, tp)
	if id, err := e.c.NewProducerID(); err != nil || id <= 4321 {
		t.Fatalf("NewProducerID after adopting producer 4321: %d, %v", id, err)
	}
	e = e.reopen()
	if again, _ := e.c.Topic("old"); again.ID != tp.ID || again.Partitions != 3 {
		t.Fatalf("after reopen %+v, want %+v", again, tp)
	}
	// A new directory above the topic's partitions grows it.
	p, err := e.s.Partition("old", 4)
	if err != nil {
		t.Fatal(err)
	}
	_ = p
	e = e.reopen()
	if grown, _ := e.c.Topic("old"); grown.ID != tp.ID || grown.Partitions != 5 {
		t.Fatalf("after a partition 4 appeared: %+v", grown)
	}
	grown, _ := e.c.Topic("old")
	checkDirs(t, dir, grown)
}

// A partition directory written by Kafka keeps its topic id.
func TestAdoptKafkaPartitionDir(t *testing.T) {
	src := testutil.SharedFile(t, "kafka-real/rjmfernandes-flink-on-prem/promotions-0")
	dir := t.TempDir()
	testutil.CopyDir(t, src, filepath.Join(dir, "promotions-0"))
	before, err := os.ReadFile(filepath.Join(src, catalog.MetadataFileName))
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalog.DecodePartitionMetadata("golden", before)
	if err != nil {
		t.Fatal(err)
	}
	e := open(t, dir)
	tp, ok := e.c.Topic("promotions")
	if !ok || tp.ID != want || tp.Partitions != 1 {
		t.Fatalf("adopted %+v, %t; want id %s", tp, ok, want)
	}
	if tp.ID.String() != "7B-J9HsITNi_ibx5MV4oqA" {
		t.Fatalf("id %s", tp.ID)
	}
	e = e.reopen()
	after, err := os.ReadFile(filepath.Join(dir, "promotions-0", catalog.MetadataFileName))
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("partition.metadata changed: %q, %v", after, err)
	}
	if tp2, _ := e.c.Topic("promotions"); tp2.ID != want {
		t.Fatalf("after reopen %+v", tp2)
	}
}

// Two partitions of a topic naming different ids: Open refuses, as Kafka
// does, naming the problem.
func TestAdoptInconsistentIDs(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []int32{0, 1} {
		if _, err := s.Partition("t", part); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"o0FXnquCRr6EnyJdHJ1_xQ", "7B-J9HsITNi_ibx5MV4oqA"} {
		if err := os.WriteFile(filepath.Join(dir, "t-"+string(rune('0'+i)), catalog.MetadataFileName), []byte("version: 0\ntopic_id: "+id), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err = logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := catalog.Open(s); !errors.Is(err, catalog.ErrInconsistentTopicID) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Open: %v, want ErrInconsistentTopicID", err)
	}
}

// Directories of a name made through the store after Open are adopted,
// not mixed into (or, on a failure, deleted by) a new topic.
func TestCreateTopicOverStrayDirs(t *testing.T) {
	e := open(t, t.TempDir())
	p, err := e.s.Partition("stray", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batch(-1, "keep me")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateTopic("stray", 3, nil, false); !errors.Is(err, catalog.ErrTopicExists) {
		t.Fatalf("CreateTopic over stray directories: %v, want ErrTopicExists", err)
	}
	tp, ok := e.c.Topic("stray")
	if !ok || tp.Partitions != 2 {
		t.Fatalf("adopted %+v, %t", tp, ok)
	}
	checkDirs(t, e.dir, tp)
	if p.EndOffset() != 1 {
		t.Fatalf("the stray partition's data: end %d", p.EndOffset())
	}
}

// TestSharedTopic: SharedTopic answers as Topic does, from creation to
// deletion, allocates nothing, and answers while lookups race changes
// (under -race, the snapshot is never written once published).
func TestSharedTopic(t *testing.T) {
	e := open(t, t.TempDir())
	tp := e.create("events", 2, map[string]string{"retention.ms": "-1"})
	g, ok := e.c.SharedTopic("events")
	if !ok || g.ID != tp.ID || g.Partitions != 2 || g.Configs["retention.ms"] != "-1" {
		t.Fatalf("SharedTopic(events) = %+v, %t", g, ok)
	}
	if n := testing.AllocsPerRun(100, func() { e.c.SharedTopic("events") }); n != 0 {
		t.Fatalf("SharedTopic allocates %.0f times", n)
	}
	if _, ok := e.c.SharedTopic("nope"); ok {
		t.Fatal("SharedTopic(nope) found")
	}
	stop := make(chan struct{})
	looked := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				looked <- n
				return
			default:
			}
			if g, ok := e.c.SharedTopic("churn"); ok && (g.Partitions != 1 || g.Configs["segment.ms"] != "60000") {
				t.Errorf("SharedTopic(churn) = %+v", g)
			}
			_ = e.c.Topics()
			n++
		}
	}()
	for range 5 {
		e.create("churn", 1, map[string]string{"segment.ms": "60000"})
		if _, err := e.c.DeleteTopic("churn"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if n := <-looked; n == 0 {
		t.Fatal("no lookup ran")
	}
	if _, ok := e.c.SharedTopic("churn"); ok {
		t.Fatal("SharedTopic shows the deleted topic")
	}
	e = e.reopen()
	if g, ok := e.c.SharedTopic("events"); !ok || g.ID != tp.ID || g.Configs["retention.ms"] != "-1" {
		t.Fatalf("SharedTopic(events) after reopen = %+v, %t", g, ok)
	}
}
