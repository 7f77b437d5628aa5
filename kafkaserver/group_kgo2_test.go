package kafkaserver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestGroupRebalanceUnderProduce: members come and go while a producer
// writes; each member commits what it has processed before a rebalance
// can take its partitions, so every record is consumed at least once
// and none is skipped.
func TestGroupRebalanceUnderProduce(t *testing.T) {
	for _, bal := range []struct {
		name string
		opt  kgo.Opt
	}{
		{"range", kgo.Balancers(kgo.RangeBalancer())},
		{"cooperative-sticky", kgo.Balancers(kgo.CooperativeStickyBalancer())},
	} {
		t.Run(bal.name, func(t *testing.T) {
			s := newInProcess(t, logstore.Options{}, groupServerConfig())
			createTopic6(t, s.addr, "rp")
			n := 3000
			if testing.Short() {
				n = 1200
			}
			seen := newSeenSet()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n; i += n / 20 {
					produceValues(t, s.addr, "rp", "v", i, n/20)
					time.Sleep(50 * time.Millisecond)
				}
			}()
			a := startMember(t, s.addr, "g", "rp", "a", seen, bal.opt)
			waitFor(t, "a consuming", func() bool { return seen.total() > 0 })
			b := startMember(t, s.addr, "g", "rp", "b", seen, bal.opt)
			c := startMember(t, s.addr, "g", "rp", "c", seen, bal.opt)
			waitFor(t, "three members", func() bool { return balanced(t, s.addr, "g", "a", "b", "c") })
			a.close()
			waitFor(t, "two members", func() bool { return balanced(t, s.addr, "g", "b", "c") })
			d := startMember(t, s.addr, "g", "rp", "d", seen, bal.opt)
			waitFor(t, "three members again", func() bool { return balanced(t, s.addr, "g", "b", "c", "d") })
			b.close()
			wg.Wait()
			waitFor(t, "every record consumed", func() bool { return seen.has("v", n) })
			if m := seen.missing("v", n); len(m) > 0 {
				t.Fatalf("%d records never consumed, first %d", len(m), m[0])
			}
			c.close()
			d.close()
			// Nothing skipped and nothing left: the committed offsets are
			// the ends of the partitions.
			committed := fetchCommitted(t, s.addr, "g")
			var sum int64
			for _, o := range committed {
				sum += o
			}
			if sum != int64(n) || len(committed) != 6 {
				t.Fatalf("committed offsets %v sum to %d, want %d over 6 partitions", committed, sum, n)
			}
			if s.cfg.Metrics.GroupRebalances() < 5 {
				t.Fatalf("%v rebalances counted", s.cfg.Metrics.GroupRebalances())
			}
		})
	}
}

// fetchCommitted returns group's committed offsets by partition
// (OffsetFetch of every partition).
func fetchCommitted(t *testing.T, addr, group string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	add := func(topic string, p int32, off int64, code int16) {
		if code != 0 {
			t.Fatalf("OffsetFetch %s %d: error %d", topic, p, code)
		}
		out[fmt.Sprintf("%s-%d", topic, p)] = off
	}
	for _, g := range resp.Groups {
		for _, tp := range g.Topics {
			for _, p := range tp.Partitions {
				add(tp.Topic, p.Partition, p.Offset, p.ErrorCode)
			}
		}
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			add(tp.Topic, p.Partition, p.Offset, p.ErrorCode)
		}
	}
	return out
}

// TestGroupStaticMembersRejoin: a static member (group.instance.id)
// closed and started again takes its place back with its assignment
// and no rebalance (KIP-345).
func TestGroupStaticMembersRejoin(t *testing.T) {
	s := newGroupServer(t, "st", 120)
	seen := newSeenSet()
	startMember(t, s.addr, "g", "st", "a", seen, kgo.InstanceID("ia"))
	b := startMember(t, s.addr, "g", "st", "b", seen, kgo.InstanceID("ib"))
	waitFor(t, "two static members", func() bool { return balanced(t, s.addr, "g", "a", "b") })
	waitFor(t, "every record consumed", func() bool { return seen.has("v", 120) })
	_, before := describe(t, s.addr, "g")
	rebalances := s.cfg.Metrics.GroupRebalances()
	// A static member does not leave on close.
	b.close()
	startMember(t, s.addr, "g", "st", "b2", seen, kgo.InstanceID("ib"))
	waitFor(t, "the restarted static member in the group", func() bool { return balanced(t, s.addr, "g", "a", "b2") })
	_, after := describe(t, s.addr, "g")
	if fmt.Sprint(after["b2"]) != fmt.Sprint(before["b"]) || fmt.Sprint(after["a"]) != fmt.Sprint(before["a"]) {
		t.Fatalf("assignments before %v, after %v", before, after)
	}
	if got := s.cfg.Metrics.GroupRebalances(); got != rebalances {
		t.Fatalf("%v rebalances after the static rejoin, %v before", got, rebalances)
	}
	produceValues(t, s.addr, "st", "w", 0, 60)
	waitFor(t, "records after the rejoin consumed", func() bool { return seen.has("w", 60) })
}

// TestGroupCommitsSurviveRestart: offsets committed by a group consumer
// are there after the server restarts: a member of the group then
// starts after them.
func TestGroupCommitsSurviveRestart(t *testing.T) {
	s := newGroupServer(t, "rs", 240)
	seen := newSeenSet()
	a := startMember(t, s.addr, "g", "rs", "a", seen)
	waitFor(t, "every record consumed", func() bool { return seen.has("v", 240) })
	waitFor(t, "every record committed", func() bool {
		var sum int64
		for _, o := range fetchCommitted(t, s.addr, "g") {
			sum += o
		}
		return sum == 240
	})
	a.close()
	before := fetchCommitted(t, s.addr, "g")
	if err := s.restart(nil); err != nil {
		t.Fatal(err)
	}
	if after := fetchCommitted(t, s.addr, "g"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("committed before the restart %v, after %v", before, after)
	}
	total := seen.total()
	produceValues(t, s.addr, "rs", "w", 0, 30)
	startMember(t, s.addr, "g", "rs", "b", seen)
	waitFor(t, "the new records consumed", func() bool { return seen.has("w", 30) })
	if got := seen.total() - total; got != 30 {
		t.Fatalf("after the restart %d records consumed, want the 30 new ones", got)
	}
}
