package kafkaserver

// CreatePartitions (key 37), versions 0-3 advertised.
//
//   - v1: the same as v0. v2: flexible.
//   - v3 (KIP-599): may answer THROTTLING_QUOTA_EXCEEDED, which logstore
//     never does (no mutation quota).
//
// The catalog grows the topic: the new partition directories, each with
// its partition.metadata, then the entry with the new count, durably
// before the answer (catalog.Catalog.CreatePartitions); Metadata shows the
// new partitions from then on. TimeoutMillis is ignored: the growth is
// done, or has failed, by the time of the answer.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreatePartitions grows topics as Kafka's controller does
// (ControllerApis.createPartitions, ReplicationControlManager): a name
// given more than once answers 42 INVALID_REQUEST ("Duplicate topic
// name."), once for the name, and is not grown; an unknown topic 3; a
// count equal to the current one or below it, or above
// catalog.MaxPartitions, 37; assignments, when given, must be one
// replica list per new partition, each broker 0 alone (else 39
// INVALID_REPLICA_ASSIGNMENT, with Kafka's messages). ValidateOnly checks
// and grows nothing.
func handleCreatePartitions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	p.resp = resp
	// Bounded by the request's frame (maxOtherRequestBytes): each topic
	// took at least its own bytes.
	seen := make(map[string]int, len(r.Topics))
	for i := range r.Topics {
		seen[r.Topics[i].Topic]++
	}
	for i := range r.Topics {
		rt := &r.Topics[i]
		n := seen[rt.Topic]
		if n == 0 {
			continue // a duplicate, answered once already
		}
		seen[rt.Topic] = 0
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var code int16
		var msg string
		if n > 1 {
			code, msg = kerr.InvalidRequest.Code, "Duplicate topic name."
		} else if code = s.topicCode(c, kmsg.ACLOperationAlter, rt.Topic); code == errNone {
			code, msg = s.createPartitions(rt, r.ValidateOnly)
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

func (s *Server) createPartitions(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	fail := func(err error) (int16, string) {
		code := topicErrorCode(err)
		if code == kerr.KafkaStorageError.Code {
			s.log.Error("kafka CreatePartitions failed", "topic", rt.Topic, "err", err.Error())
		}
		return code, err.Error()
	}
	// The catalog's checks first (the topic, the count), as Kafka
	// checks them before the assignments.
	if _, err := s.cat.CreatePartitions(rt.Topic, rt.Count, true); err != nil {
		return fail(err)
	}
	if rt.Assignment != nil {
		t, _ := s.cat.Topic(rt.Topic)
		if msg := checkAssignments(rt.Assignment, rt.Count-t.Partitions); msg != "" {
			return kerr.InvalidReplicaAssignment.Code, msg
		}
	}
	if validateOnly {
		return errNone, ""
	}
	t, err := s.cat.CreatePartitions(rt.Topic, rt.Count, false)
	if err != nil {
		return fail(err)
	}
	s.log.Info("kafka topic grown", "topic", t.Name, "partitions", t.Partitions)
	return errNone, ""
}

// checkAssignments checks the replica lists of a growth by additional
// partitions as Kafka's controller does: as many lists as new
// partitions, none empty, each naming only registered brokers (this one,
// node 0), none twice. It returns Kafka's message, or "" when they are
// fine. (Kafka's check that every list has the topic's replication
// factor, 1, cannot fail once these hold.)
func checkAssignments(as []kmsg.CreatePartitionsRequestTopicAssignment, additional int32) string {
	if int64(len(as)) != int64(additional) {
		return fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(as))
	}
	for _, a := range as {
		if len(a.Replicas) == 0 {
			return "The manual partition assignment includes an empty replica list."
		}
		brokers := slices.Sorted(slices.Values(a.Replicas))
		for i, b := range brokers {
			if b != nodeID {
				return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
			if i > 0 && b == brokers[i-1] {
				return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", b)
			}
		}
	}
	return ""
}

// CreatePartitions grows a topic in the catalog (see topicCatalog).
func (a storeCatalog) CreatePartitions(name string, total int32, validateOnly bool) (topic, error) {
	t, err := a.c.CreatePartitions(name, total, validateOnly)
	return fromCatalog(t), err
}
