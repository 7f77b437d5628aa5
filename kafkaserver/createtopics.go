package kafkaserver

// CreateTopics (key 19), versions 0-7 advertised.
//
//   - v1: ValidateOnly and an error message per topic. v2:
//     ThrottleMillis.
//   - v4 (KIP-464): -1 partitions or replication factor for the broker's
//     default.
//   - v5 (KIP-525): flexible, and the partitions, replication factor and
//     configs of the topic in the response. v6: the same as v5.
//   - v7 (KIP-516): the topic id in the response.
//
// The topics go into the catalog, which makes their partition
// directories.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreateTopics creates topics in the catalog: a name by Kafka's
// rules (else 17), replication factor -1 or 1 (else 38), no manual
// replica assignment other than this broker alone (else 39), a
// partition count above 0 or -1 for DefaultPartitions (else 37), the
// configs as AlterConfigs takes them (checkTopicConfigs, then the
// catalog's checks of the values; else 40), an existing name 36.
// ValidateOnly checks and creates nothing.
func handleCreateTopics(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	p.resp = resp
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		code, msg := kerr.TopicAuthorizationFailed.Code, ""
		if s.mayCreateTopic(c, rt.Topic) {
			code, msg = s.createTopic(&rt, &st, r.ValidateOnly)
		}
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = &msg
		}
		p.setErr(code)
		resp.Topics = append(resp.Topics, st)
	}
	return nil
}

func (s *Server) createTopic(rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic, validateOnly bool) (int16, string) {
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return kerr.InvalidReplicationFactor.Code, "logstore is one broker: the replication factor must be 1 or -1"
	}
	n := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if n != -1 {
			return kerr.InvalidRequest.Code, "both a partition count and a replica assignment were given"
		}
		for i, a := range rt.ReplicaAssignment {
			if a.Partition != int32(i) || len(a.Replicas) != 1 || a.Replicas[0] != nodeID {
				return kerr.InvalidReplicaAssignment.Code, "a replica assignment must give partitions 0, 1, ... each to broker 0 alone"
			}
		}
		n = int32(len(rt.ReplicaAssignment))
	}
	if n == -1 {
		n = s.cfg.DefaultPartitions
	}
	configs := make(map[string]string, len(rt.Configs))
	for _, cfg := range rt.Configs {
		if cfg.Value != nil {
			configs[cfg.Name] = *cfg.Value
		}
	}
	// As AlterConfigs checks them: a config logstore does not apply is
	// accepted at the value it behaves as (cleanup.policy=delete, as
	// Kafka Streams and Connect ask for), and not kept.
	if err := checkTopicConfigs(configs, s.store.Options()); err != nil {
		var refused *configRefusal
		if errors.As(err, &refused) {
			return refused.code, refused.msg
		}
		return kerr.InvalidConfig.Code, err.Error()
	}
	t, err := s.cat.CreateTopic(rt.Topic, n, configs, validateOnly)
	if err != nil {
		code := topicErrorCode(err)
		if code == kerr.KafkaStorageError.Code {
			s.log.Error("kafka CreateTopics failed", "topic", rt.Topic, "err", err.Error())
		}
		return code, err.Error()
	}
	st.TopicID = t.ID
	st.NumPartitions, st.ReplicationFactor = t.Partitions, 1
	if !validateOnly {
		s.log.Info("kafka topic created", "topic", t.Name, "partitions", t.Partitions)
	}
	return errNone, ""
}
