package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/kafkaserver"
)

// TestGroupsListAndDescribe: groups reads groups.db and the store's
// partition ends: committed offsets with their lag, as text and JSON;
// while the coordinator holds groups.db it refuses with a clear error.
func TestGroupsListAndDescribe(t *testing.T) {
	dir := t.TempDir()
	if out, errOut, code := runCLI(t, "append", "--dir", dir, "--topic", "orders", "--partition", "0", "a", "b", "c", "d", "e"); code != 0 {
		t.Fatalf("append: %s%s", out, errOut)
	}
	c, err := groupcoord.Open(dir, groupcoord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []groupcoord.Code, 1)
	c.Commit(groupcoord.CommitRequest{Group: "app", Generation: -1, Offsets: []groupcoord.OffsetCommit{
		{TopicPartition: groupcoord.TopicPartition{Topic: "orders", Partition: 0}, Offset: 2, LeaderEpoch: -1, Metadata: "m"},
		{TopicPartition: groupcoord.TopicPartition{Topic: "gone", Partition: 0}, Offset: 9, LeaderEpoch: -1},
	}}, func(codes []groupcoord.Code) { done <- codes })
	if codes := <-done; codes[0] != groupcoord.None || codes[1] != groupcoord.None {
		t.Fatal(codes)
	}
	_, errOut, code := runCLI(t, "groups", "--dir", dir, "--lock-timeout", "50ms")
	if code == 0 || !strings.Contains(errOut, "in use by another process") {
		t.Fatalf("while open: exit %d: %s", code, errOut)
	}
	c.Close()

	out, errOut, code := runCLI(t, "groups", "--dir", dir)
	want := `group="app" protocolType="" generation=0 state=Empty members=0 emptySince=unknown offsets=2 lag=3` + "\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d: %s%s\nwant %s", code, out, errOut, want)
	}
	out, _, code = runCLI(t, "groups", "--dir", dir, "--group", "app")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 ||
		!strings.HasPrefix(lines[1], `group="app" topic=gone partition=0 committed=9 end=unknown lag=unknown leaderEpoch=-1 committedAt=`) ||
		!strings.HasPrefix(lines[2], `group="app" topic=orders partition=0 committed=2 end=5 lag=3 leaderEpoch=-1 committedAt=`) ||
		!strings.HasSuffix(lines[2], `metadata="m"`) {
		t.Fatalf("describe: exit %d:\n%s", code, out)
	}
	out, _, code = runCLI(t, "groups", "--dir", dir, "--describe", "--json")
	var g struct {
		Group   string
		Lag     int64
		Offsets []struct {
			Topic       string
			Committed   int64
			End, Lag    *int64
			CommittedAt int64
		}
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil || code != 0 {
		t.Fatalf("json: %v: %s", err, out)
	}
	if g.Group != "app" || g.Lag != 3 || len(g.Offsets) != 2 || g.Offsets[0].End != nil || *g.Offsets[1].Lag != 3 ||
		time.Since(time.UnixMilli(g.Offsets[1].CommittedAt)) < 0 {
		t.Fatalf("json: %s", out)
	}
	if _, errOut, code := runCLI(t, "groups", "--dir", dir, "--group", "nope"); code == 0 || !strings.Contains(errOut, `no group "nope"`) {
		t.Fatalf("unknown group: exit %d %s", code, errOut)
	}
}

// TestGroupsBootstrap: groups --bootstrap asks a running server: a
// Stable group's member with its assignment, and its committed offsets
// with their lag against the high watermark.
func TestGroupsBootstrap(t *testing.T) {
	store, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := kafkaserver.New(store, kafkaserver.Config{AutoCreateTopics: true, DefaultPartitions: 2, GroupInitialRebalanceDelay: -1,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("app"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ClientID("consumer-1"), kgo.InstanceID("inst-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 10 {
		fs := cons.PollRecords(ctx, 10-got)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if err := cons.CommitRecords(ctx, recs...); err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
	for range 3 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("y")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runCLI(t, "groups", "--bootstrap", addr, "--group", "app", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var g struct {
		Group, State string
		Lag          int64
		Members      []struct {
			ClientID   string
			InstanceID *string
			Assignment map[string][]int32
		}
		Offsets []struct {
			Committed int64
			End, Lag  *int64
		}
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].ClientID != "consumer-1" || g.Members[0].InstanceID == nil ||
		*g.Members[0].InstanceID != "inst-1" || len(g.Members[0].Assignment["orders"]) != 2 || g.Lag != 3 || len(g.Offsets) != 2 ||
		*g.Offsets[0].End != 8 || *g.Offsets[0].Lag != 3 || g.Offsets[1].Committed != 5 {
		t.Fatalf("%s", out)
	}
	out, _, code = runCLI(t, "groups", "--bootstrap", addr)
	if code != 0 || out != `group="app" state=Stable protocolType="consumer" members=1`+"\n" {
		t.Fatalf("list: exit %d: %q", code, out)
	}
	out, _, code = runCLI(t, "groups", "--bootstrap", addr, "--describe")
	if code != 0 || !strings.Contains(out, `clientId="consumer-1"`) || !strings.Contains(out, "assignment=orders:0,1") || !strings.Contains(out, "partition=0 committed=5 end=8 lag=3") {
		t.Fatalf("describe: exit %d:\n%s", code, out)
	}
	if _, errOut, code := runCLI(t, "groups", "--bootstrap", addr, "--group", "nope"); code == 0 || !strings.Contains(errOut, `no group "nope"`) {
		t.Fatalf("unknown group: exit %d %s", code, errOut)
	}
}
