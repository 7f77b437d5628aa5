package kafkaserver

// DeleteTopics (key 20), versions 0-6 advertised.
//
//   - v1: ThrottleMillis. v4: flexible. v5: an error message per topic.
//   - v6 (KIP-516): topics by name or by topic id.
//
// The catalog deletes the topic and removes its partition directories
// durably before the answer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteTopics deletes topics by name (v0-5) or by name or topic
// id (v6): an unknown name is 3, an unknown id 100.
func handleDeleteTopics(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	p.resp = resp
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if r.Version < 6 {
		for _, name := range r.TopicNames {
			targets = append(targets, target{name: &name})
		}
	} else {
		for _, t := range r.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		name := ""
		if tg.name != nil {
			name = *tg.name
		} else {
			st.ErrorCode = kerr.UnknownTopicID.Code
			for _, t := range s.cat.Topics() {
				if t.ID == tg.id {
					name, st.ErrorCode = t.Name, errNone
					st.Topic = &t.Name
					break
				}
			}
		}
		if st.ErrorCode == errNone {
			st.ErrorCode = s.topicCode(c, kmsg.ACLOperationDelete, name)
		}
		if st.ErrorCode == errNone {
			t, err := s.cat.DeleteTopic(name)
			if err != nil {
				st.ErrorCode = topicErrorCode(err)
				msg := err.Error()
				st.ErrorMessage = &msg
				if st.ErrorCode == kerr.KafkaStorageError.Code {
					s.log.Error("kafka DeleteTopics failed", "topic", name, "err", msg)
				}
			} else {
				st.TopicID = t.ID
				s.log.Info("kafka topic deleted", "topic", name)
			}
		}
		p.setErr(st.ErrorCode)
		resp.Topics = append(resp.Topics, st)
	}
	return nil
}
