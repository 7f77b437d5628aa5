package kafkaserver_test

// Consumer groups over the wire with kgo's group consumer (issue 15):
// join and leave, a member killed (its connections cut without a
// LeaveGroup: its session expires), rebalances while records are
// produced with commits after processing (every record consumed, none
// skipped), static members rejoining without a rebalance, commits
// surviving a restart, and the cooperative-sticky balancer.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/kafkaserver"
)

// groupServerConfig: a short first-rebalance delay and a low minimum
// session timeout, so the tests do not wait on Kafka's defaults.
func groupServerConfig() kafkaserver.Config {
	return kafkaserver.Config{
		AutoCreateTopics:           true,
		DefaultPartitions:          6,
		GroupInitialRebalanceDelay: 100 * time.Millisecond,
		GroupMinSessionTimeout:     500 * time.Millisecond,
	}
}

// waitFor polls cond until it holds; the deadline only bounds a test
// that would otherwise hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createTopic6 creates topic with 6 partitions.
func createTopic6(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 6, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("CreateTopics %s: error %d", topic, c)
	}
}

// newGroupServer starts an in-process server with groupServerConfig and
// topic (six partitions) holding n records, values v-0 .. v-(n-1).
func newGroupServer(t *testing.T, topic string, n int) *inProcess {
	t.Helper()
	s := newInProcess(t, logstore.Options{}, groupServerConfig())
	createTopic6(t, s.addr, topic)
	produceValues(t, s.addr, topic, "v", 0, n)
	return s
}

// produceValues produces n records with values prefix-0 .. prefix-(n-1)
// to topic and waits for them.
func produceValues(t *testing.T, addr, topic, prefix string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.UnknownTopicRetries(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// groupMember is one kgo group consumer that processes records (notes
// their values) and then commits them.
type groupMember struct {
	t    *testing.T
	name string
	cl   *kgo.Client
	seen *seenSet

	stop context.CancelFunc
	done chan struct{}
}

// seenSet collects the values consumed by every member.
type seenSet struct {
	mu     sync.Mutex
	counts map[string]int
}

func newSeenSet() *seenSet { return &seenSet{counts: map[string]int{}} }

func (s *seenSet) add(v string) {
	s.mu.Lock()
	s.counts[v]++
	s.mu.Unlock()
}

func (s *seenSet) has(prefix string, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range n {
		if s.counts[fmt.Sprintf("%s-%d", prefix, i)] == 0 {
			return false
		}
	}
	return true
}

func (s *seenSet) missing(prefix string, n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i := range n {
		if s.counts[fmt.Sprintf("%s-%d", prefix, i)] == 0 {
			out = append(out, i)
		}
	}
	return out
}

func (s *seenSet) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts {
		n += c
	}
	return n
}

// startMember starts a consumer of group on topic: it polls with
// rebalances blocked, notes the records, commits them, and allows
// rebalances again (kgo's at-least-once pattern).
func startMember(t *testing.T, addr, group, topic, name string, seen *seenSet, opts ...kgo.Opt) *groupMember {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(3 * time.Second),
		kgo.RebalanceTimeout(10 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ClientID(name),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{t: t, name: name, cl: cl, seen: seen, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			if ctx.Err() != nil {
				cl.AllowRebalance()
				return
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(string(r.Value)) })
			if recs := fs.Records(); len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
					t.Logf("%s: commit: %v", name, err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	t.Cleanup(func() { m.close() })
	return m
}

// close stops polling and closes the client (a dynamic member sends
// LeaveGroup).
func (m *groupMember) close() {
	if m.stop == nil {
		return
	}
	m.stop()
	<-m.done
	m.cl.Close()
	m.stop = nil
}

// describe returns the group as the server describes it: state and,
// per member client id, the partitions of its assignment.
func describe(t *testing.T, addr, group string) (string, map[string][]int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.Groups[0]
	out := map[string][]int32{}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if len(m.MemberAssignment) > 0 {
			if err := a.ReadFrom(m.MemberAssignment); err != nil {
				t.Fatalf("assignment of %s: %v: %x", m.ClientID, err, m.MemberAssignment)
			}
		}
		var ps []int32
		for _, tp := range a.Topics {
			ps = append(ps, tp.Partitions...)
		}
		slices.Sort(ps)
		out[m.ClientID] = append(out[m.ClientID], ps...)
	}
	return g.State, out
}

// balanced: the group is Stable with exactly the members names, each
// with a share of the 6 partitions, all of them assigned once.
func balanced(t *testing.T, addr, group string, names ...string) bool {
	state, as := describe(t, addr, group)
	if testing.Verbose() {
		t.Logf("group %s: %s %v", group, state, as)
	}
	if state != "Stable" || len(as) != len(names) {
		return false
	}
	var all []int32
	for _, n := range names {
		ps, ok := as[n]
		if !ok || len(ps) == 0 {
			return false
		}
		all = append(all, ps...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return slices.Equal(all, []int32{0, 1, 2, 3, 4, 5})
}

func TestGroupJoinThreeAndLeave(t *testing.T) {
	s := newGroupServer(t, "jl", 300)
	seen := newSeenSet()
	a := startMember(t, s.addr, "g", "jl", "a", seen)
	b := startMember(t, s.addr, "g", "jl", "b", seen)
	c := startMember(t, s.addr, "g", "jl", "c", seen)
	waitFor(t, "three members sharing six partitions", func() bool { return balanced(t, s.addr, "g", "a", "b", "c") })
	waitFor(t, "every record consumed", func() bool { return seen.has("v", 300) })
	// The metrics: one Stable group of three members, and, once the
	// commits are in, no lag on any of the six partitions.
	waitFor(t, "group metrics", func() bool {
		text := scrape(t, s)
		if !strings.Contains(text, `logstore_groups{state="Stable"} 1`) || !strings.Contains(text, "logstore_group_members 3") ||
			!strings.Contains(text, "logstore_group_offset_commits_total") {
			return false
		}
		for p := range 6 {
			if !strings.Contains(text, fmt.Sprintf(`logstore_group_lag{group="g",partition="%d",topic="jl"} 0`, p)) {
				return false
			}
		}
		return true
	})
	c.close()
	waitFor(t, "two members sharing six partitions after a leave", func() bool { return balanced(t, s.addr, "g", "a", "b") })
	produceValues(t, s.addr, "jl", "w", 0, 60)
	waitFor(t, "records produced after the leave consumed", func() bool { return seen.has("w", 60) })
	a.close()
	b.close()
	waitFor(t, "the group Empty once every member left", func() bool {
		state, _ := describe(t, s.addr, "g")
		return state == "Empty"
	})
	// Commits followed processing: a new member resumes after them and
	// sees nothing again.
	before := seen.total()
	produceValues(t, s.addr, "jl", "x", 0, 30)
	startMember(t, s.addr, "g", "jl", "d", seen)
	waitFor(t, "the new member consuming", func() bool { return seen.has("x", 30) })
	if got := seen.total() - before; got != 30 {
		t.Fatalf("the new member consumed %d records, want the 30 new ones only", got)
	}
}

// scrape returns the server's metrics as Prometheus text.
func scrape(t *testing.T, s *inProcess) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.cfg.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// killableDialer dials for one client and can cut every connection it
// made and refuse new ones: the client stops without a LeaveGroup, as a
// killed process would.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, errors.New("killed")
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		c.Close()
	}
}

func TestGroupMemberKilledSessionTimeout(t *testing.T) {
	s := newGroupServer(t, "kt", 120)
	seen := newSeenSet()
	startMember(t, s.addr, "g", "kt", "a", seen)
	d := &killableDialer{}
	startMember(t, s.addr, "g", "kt", "b", seen, kgo.Dialer(d.dial), kgo.SessionTimeout(time.Second))
	waitFor(t, "two members", func() bool { return balanced(t, s.addr, "g", "a", "b") })
	waitFor(t, "every record consumed", func() bool { return seen.has("v", 120) })
	rebalances := s.cfg.Metrics.GroupRebalances()
	d.kill()
	waitFor(t, "the killed member expired and its partitions given to the other", func() bool { return balanced(t, s.addr, "g", "a") })
	if s.cfg.Metrics.GroupRebalances() <= rebalances {
		t.Fatal("no rebalance counted after the session expired")
	}
	produceValues(t, s.addr, "kt", "w", 0, 60)
	waitFor(t, "records after the kill consumed", func() bool { return seen.has("w", 60) })
	if !strings.Contains(s.logs.String(), "session expired") {
		t.Fatalf("no log line of the session expiry:\n%s", s.logs.String())
	}
}
