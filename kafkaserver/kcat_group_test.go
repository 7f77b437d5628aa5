package kafkaserver_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/logstore/logstore"
)

// TestKcatGroupConsumer: librdkafka's balanced consumer (kcat -G, the
// subscribe() of confluent-kafka and the rest: JoinGroup v5, SyncGroup
// v3, Heartbeat v3, OffsetFetch v7, OffsetCommit v7, LeaveGroup v1, per
// the protocol reference) consumes every record once as a member of a
// group and commits its offsets when it closes; a second run of the same
// group starts after them and sees only what came since.
func TestKcatGroupConsumer(t *testing.T) {
	kcat := kcatPath(t)
	cfg := groupServerConfig()
	s := newInProcess(t, logstore.Options{}, cfg)
	createTopic6(t, s.addr, "kg")
	produceValues(t, s.addr, "kg", "v", 0, 120)
	run := func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, "-b", s.addr, "-G", "kcat-group", "-e", "-q", "-X", "auto.offset.reset=earliest",
			"-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100", "-f", "%s\n", "kg")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -G: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	got := run()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range 120 {
		if v := fmt.Sprintf("v-%d", i); seen[v] != 1 {
			t.Fatalf("%s consumed %d times by kcat -G (%d records)", v, seen[v], len(got))
		}
	}
	committed := fetchCommitted(t, s.addr, "kcat-group")
	var sum int64
	for _, o := range committed {
		sum += o
	}
	if sum != 120 {
		t.Fatalf("kcat's committed offsets %v sum to %d, want 120", committed, sum)
	}
	produceValues(t, s.addr, "kg", "w", 0, 12)
	again := run()
	if len(again) != 12 || !strings.HasPrefix(again[0], "w-") {
		t.Fatalf("second run consumed %v, want the 12 new records", again)
	}
}
