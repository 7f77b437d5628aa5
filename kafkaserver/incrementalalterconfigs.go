package kafkaserver

// IncrementalAlterConfigs (key 44), versions 0-1 advertised.
//
//   - v0 (KIP-339): resources (type, name, configs with an operation
//     each), ValidateOnly; per resource an error code and message.
//   - v1: flexible.
//
// The operations, as Kafka's ConfigurationControlManager applies them to
// the resource's dynamic configs:
//
//   - SET (0): the config takes the value.
//   - DELETE (1): the config is removed (its value is ignored and may be
//     null); the broker's value applies again. Removing a config that is
//     not set is no error.
//   - APPEND (2), SUBTRACT (3): only for a LIST config (for topics,
//     cleanup.policy), else INVALID_CONFIG (40), "Can't APPEND to key
//     <name> because its type is not LIST." The value, or Kafka's default
//     when unset, is split at commas; APPEND adds each item given that is
//     not there yet, SUBTRACT removes every item given.
//   - any other: INVALID_REQUEST (42).
//
// The configs not named keep their values. Everything else (resource
// types, the checks of the new set, durability, the broker) is
// AlterConfigs' (alterconfigs.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleIncrementalAlterConfigs(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	p.resp = resp
	dup := duplicateResources(r.Resources, func(rr *kmsg.IncrementalAlterConfigsRequestResource) configResource {
		return configResource{rr.ResourceType, rr.ResourceName}
	})
	resp.Resources = answerEach(r.Resources, func(rr *kmsg.IncrementalAlterConfigsRequestResource, sr *kmsg.IncrementalAlterConfigsResponseResource) {
		*sr = kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		ops := make([]configOp, len(rr.Configs))
		for i, cfg := range rr.Configs {
			ops[i] = configOp{name: cfg.Name, op: cfg.Op, value: cfg.Value}
		}
		sr.ErrorCode, sr.ErrorMessage = s.answerAlter(c, dup, rr.ResourceType, rr.ResourceName, ops, true, r.ValidateOnly, p)
	})
	return nil
}
