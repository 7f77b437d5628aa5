package kafkaserver

// The group coordinator's wiring: the classic group APIs (joingroup.go,
// syncgroup.go, heartbeat.go, leavegroup.go, offsetcommit.go,
// offsetfetch.go, offsetdelete.go, describegroups.go, listgroups.go,
// deletegroups.go) answer from package groupcoord, which this file
// opens and reads the metrics of.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/metrics"
)

// openGroups opens the store's group coordinator (groups.db at the
// store root).
func (s *Server) openGroups() (*groupcoord.Coordinator, error) {
	m := s.cfg.Metrics
	return groupcoord.Open(s.store.Dir(), groupcoord.Config{
		InitialRebalanceDelay: s.cfg.GroupInitialRebalanceDelay,
		OffsetsRetention:      s.cfg.OffsetsRetention,
		MinSessionTimeout:     s.cfg.GroupMinSessionTimeout,
		SubscribedTopics:      consumerSubscription,
		Logger:                s.log,
		OnRebalance:           func(string) { m.GroupRebalance() },
		OnCommit:              func(n int) { m.OffsetsCommitted(n) },
	})
}

// consumerSubscription decodes the subscription of a member of a
// "consumer" group (Kafka's ConsumerProtocolSubscription), whatever the
// assignor's name: every assignor of the consumer protocol sends it.
func consumerSubscription(_ string, metadata []byte) ([]string, bool) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(metadata); err != nil {
		return nil, false
	}
	return md.Topics, true
}

// groupStats is the metrics' view of the coordinator.
func (s *Server) groupStats() (map[string]int, int) {
	st := s.groups.Stats()
	by := make(map[string]int, len(st.ByState))
	for i, n := range st.ByState {
		by[groupcoord.State(i).String()] = n
	}
	return by, st.Members
}

// groupLag is every committed offset's lag behind the high watermark
// (the durable end) of its partition, for the partitions open.
func (s *Server) groupLag() []metrics.GroupLag {
	ends := map[groupcoord.TopicPartition]int64{}
	for _, p := range s.store.OpenPartitions() {
		id := p.ID()
		ends[groupcoord.TopicPartition{Topic: id.Topic, Partition: id.Partition}] = p.DurableEnd()
	}
	var out []metrics.GroupLag
	for _, o := range s.groups.Committed() {
		end, ok := ends[o.TopicPartition]
		if !ok {
			continue
		}
		out = append(out, metrics.GroupLag{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Lag: max(end-max(o.Offset, 0), 0)})
	}
	return out
}
