package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// groupMetrics are the consumer group coordinator's metrics.
type groupMetrics struct {
	rebalances prometheus.Counter
	commits    prometheus.Counter
	// stats is read at scrape time, nil until WatchGroups.
	stats atomic.Pointer[func() (byState map[string]int, members int)]
	lag   atomic.Pointer[func() []GroupLag]
}

// GroupLag is one group's lag on one partition: the partition's high
// watermark minus the group's committed offset.
type GroupLag struct {
	Group, Topic string
	Partition    int32
	Lag          int64
}

// GroupStates are the states the groups gauge always reports (0 when no
// group is in one), Kafka's names.
var GroupStates = []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

var (
	groupsDesc       = prometheus.NewDesc("logstore_groups", "Consumer groups by state.", []string{"state"}, nil)
	groupMembersDesc = prometheus.NewDesc("logstore_group_members", "Members of consumer groups, all groups together.", nil, nil)
	groupLagDesc     = prometheus.NewDesc("logstore_group_lag", "Records between a group's committed offset and the partition's high watermark (open partitions only).", []string{"group", "topic", "partition"}, nil)
)

func (g *groupMetrics) init() {
	g.rebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_group_rebalances_total",
		Help: "Rebalances started by consumer groups (a group entering PreparingRebalance).",
	})
	g.commits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_group_offset_commits_total",
		Help: "Partition offsets committed by OffsetCommit, once durable.",
	})
}

func (g *groupMetrics) register(reg prometheus.Registerer, m *Metrics) {
	reg.MustRegister(g.rebalances, g.commits, groupCollector{m})
}

// GroupRebalance counts a rebalance started.
func (m *Metrics) GroupRebalance() {
	if m == nil {
		return
	}
	m.groups.rebalances.Inc()
}

// OffsetsCommitted counts n partition offsets made durable.
func (m *Metrics) OffsetsCommitted(n int) {
	if m == nil {
		return
	}
	m.groups.commits.Add(float64(n))
}

// WatchGroups makes the scrape read the groups by state and the number
// of members from stats.
func (m *Metrics) WatchGroups(stats func() (byState map[string]int, members int)) {
	if m == nil {
		return
	}
	m.groups.stats.Store(&stats)
}

type groupCollector struct{ m *Metrics }

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- groupsDesc
	ch <- groupMembersDesc
	ch <- groupLagDesc
}

// WatchGroupLag makes the scrape read the groups' lag from lag.
func (m *Metrics) WatchGroupLag(lag func() []GroupLag) {
	if m == nil {
		return
	}
	m.groups.lag.Store(&lag)
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	if lf := c.m.groups.lag.Load(); lf != nil {
		for _, l := range (*lf)() {
			ch <- prometheus.MustNewConstMetric(groupLagDesc, prometheus.GaugeValue, float64(l.Lag), l.Group, l.Topic, strconv.FormatInt(int64(l.Partition), 10))
		}
	}
	f := c.m.groups.stats.Load()
	if f == nil {
		return
	}
	byState, members := (*f)()
	for _, s := range GroupStates {
		ch <- prometheus.MustNewConstMetric(groupsDesc, prometheus.GaugeValue, float64(byState[s]), s)
	}
	ch <- prometheus.MustNewConstMetric(groupMembersDesc, prometheus.GaugeValue, float64(members))
}

// GroupRebalances returns how many rebalances GroupRebalance has
// counted: what logstore_group_rebalances_total shows, for a test that
// checks it without scraping.
func (m *Metrics) GroupRebalances() float64 {
	if m == nil {
		return 0
	}
	var d dto.Metric
	if err := m.groups.rebalances.Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}
