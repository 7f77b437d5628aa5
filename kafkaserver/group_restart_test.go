package kafkaserver_test

// A consumer group across a restart of the server (issue 25): the
// coordinator stores each group's members and assignments, so a restart
// alone causes no JoinGroup and no rebalance; the members go on
// heartbeating in their generation and consume every record.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
)

// TestGroupSurvivesRestart: two kgo group consumers read a topic; the
// server restarts (a graceful stop and a new process on the same
// directory and port); records produced after it are consumed too, and
// the server saw no JoinGroup and no rebalance after the restart.
func TestGroupSurvivesRestart(t *testing.T) {
	s := newInProcess(t, logstore.Options{}, groupServerConfig())
	const topic, group, n = "restarted", "survivors", 300
	createTopic6(t, s.addr, topic)
	produceValues(t, s.addr, topic, "a", 0, n)
	// joins is the server's count of JoinGroup requests, every answer
	// code, over every start (one Metrics for all).
	joins := func() float64 {
		var sum float64
		for _, line := range strings.Split(scrape(t, s), "\n") {
			if !strings.HasPrefix(line, "logstore_requests_total{") || !strings.Contains(line, `api="JoinGroup"`) {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			sum += v
		}
		return sum
	}

	seen := newSeenSet()
	startMember(t, s.addr, group, topic, "m1", seen)
	startMember(t, s.addr, group, topic, "m2", seen)
	waitFor(t, "the records before the restart", func() bool { return seen.has("a", n) })
	// Both members in the group, assigned, and done joining: the join
	// count stays put over a few heartbeats.
	var before, rebalances float64
	waitFor(t, "a settled group", func() bool {
		j, r := joins(), s.cfg.Metrics.GroupRebalances()
		time.Sleep(500 * time.Millisecond)
		before, rebalances = joins(), s.cfg.Metrics.GroupRebalances()
		return j == before && r == rebalances && j > 0
	})

	if err := s.restart(nil); err != nil {
		t.Fatal(err)
	}
	produceValues(t, s.addr, topic, "b", 0, n)
	waitFor(t, "the records after the restart", func() bool { return seen.has("b", n) })
	// Several session timeouts' worth of heartbeats (3 s sessions, 100 ms
	// heartbeats) would have shown a rebalance by now; wait one more.
	time.Sleep(3500 * time.Millisecond)
	if got := joins(); got != before {
		t.Errorf("JoinGroup requests: %v before the restart, %v after: the restart caused a rejoin", before, got)
	}
	if got := s.cfg.Metrics.GroupRebalances(); got != rebalances {
		t.Errorf("rebalances: %v before the restart, %v after", rebalances, got)
	}
	if m := seen.missing("a", n); len(m) > 0 {
		t.Errorf("missing a-%v", m)
	}
	if m := seen.missing("b", n); len(m) > 0 {
		t.Errorf("missing b-%v", m)
	}
	t.Logf("JoinGroups %v, rebalances %v, records seen %d (of %d)", before, rebalances, seen.total(), 2*n)
}
