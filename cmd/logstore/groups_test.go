package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/groupcoord"
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
	want := `group="app" protocolType="" generation=0 emptySince=unknown offsets=2 lag=3` + "\n"
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
