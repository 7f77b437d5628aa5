package kafkaserver

// AlterConfigs (key 33), versions 0-2 advertised.
//
//   - v0: resources (type, name, configs), ValidateOnly; per resource an
//     error code and message. v1: the same as v0 (ThrottleMillis is
//     answered 0 in every version). v2: flexible.
//
// AlterConfigs is Kafka's legacy call: it replaces the whole set of a
// resource's dynamic configs, so a topic config not in the request is
// removed and the broker's value applies again to the topic (Kafka's
// ConfigurationControlManager.legacyAlterConfigResource).
// IncrementalAlterConfigs (incrementalalterconfigs.go) shares everything
// below but the operations.
//
// Each resource is answered on its own, as Kafka's ConfigAdminManager and
// ConfigurationControlManager answer them, with a message for every error:
//
//   - the same (type, name) twice in one request: both INVALID_REQUEST
//     (42), "Each resource must appear at most once."; a config name twice
//     in one resource: INVALID_REQUEST, "Error due to duplicate config
//     keys"; a null value (but for IncrementalAlterConfigs' DELETE):
//     INVALID_REQUEST, "Null value not supported for : <names>".
//   - topic (2): a name Kafka would refuse: INVALID_TOPIC_EXCEPTION (17).
//     The new set is checked before the topic is looked up, as Kafka
//     validates before it checks existence: a name neither Kafka nor
//     logstore knows is INVALID_CONFIG (40), "Unknown topic config name:
//     <name>"; a config Kafka has but logstore does not apply (configs.go's
//     read-only ones: cleanup.policy, min.insync.replicas, compression.type
//     and the rest) is INVALID_CONFIG saying it is not supported, unless
//     its value is the one DescribeConfigs reports (what logstore behaves
//     as: cleanup.policy=delete, min.insync.replicas=1, ...), which is
//     accepted and not kept, so that a client writing back the whole set
//     it described succeeds, and one asking for compaction is refused; a
//     value out of Kafka's range (catalog.ParseConfigs) is INVALID_CONFIG.
//     Then an
//     unknown topic: UNKNOWN_TOPIC_OR_PARTITION (3). The change is durable
//     in catalog.db before the answer and applies at once to the topic's
//     open partitions (catalog.Catalog.UpdateTopicConfigs); DescribeConfigs
//     shows each config set with source DYNAMIC_TOPIC_CONFIG.
//   - broker (4): "" (the cluster-wide defaults) or "0" (this broker's
//     id); another name is INVALID_REQUEST with Kafka's message. logstore
//     has no dynamic broker configs: a resource that sets any config is
//     refused with INVALID_REQUEST, "Cannot update these configs
//     dynamically: Set(<names>)", as Kafka answers for its read-only
//     broker configs (KAFKA-13609 keeps that code); one that sets none (no
//     configs, or only IncrementalAlterConfigs' DELETEs) changes nothing
//     and succeeds.
//   - any other type: INVALID_REQUEST, "Unknown resource type <n>" (broker
//     loggers only through IncrementalAlterConfigs, where logstore has
//     none).
//
// ValidateOnly checks everything and changes nothing.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
)

func handleAlterConfigs(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	p.resp = resp
	dup := duplicateResources(r.Resources, func(rr *kmsg.AlterConfigsRequestResource) configResource {
		return configResource{rr.ResourceType, rr.ResourceName}
	})
	resp.Resources = answerEach(r.Resources, func(rr *kmsg.AlterConfigsRequestResource, sr *kmsg.AlterConfigsResponseResource) {
		*sr = kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		ops := make([]configOp, len(rr.Configs))
		for i, cfg := range rr.Configs {
			ops[i] = configOp{name: cfg.Name, op: kmsg.IncrementalAlterConfigOpSet, value: cfg.Value}
		}
		sr.ErrorCode, sr.ErrorMessage = s.answerAlter(c, dup, rr.ResourceType, rr.ResourceName, ops, false, r.ValidateOnly, p)
	})
	return nil
}

// answerAlter answers one resource of an alter request: 42 for a
// resource the request names twice, else alterResource's answer, with a
// null message on success; p notes the code.
func (s *Server) answerAlter(c *conn, dup map[configResource]bool, typ kmsg.ConfigResourceType, name string, ops []configOp, incremental, validateOnly bool, p *pending) (int16, *string) {
	code, msg := kerr.InvalidRequest.Code, "Each resource must appear at most once."
	if denied := s.configCode(c, typ, name, kmsg.ACLOperationAlterConfigs); denied != errNone {
		code, msg = denied, "not authorized to alter the configs of "+name
	} else if !dup[configResource{typ, name}] {
		code, msg = s.alterResource(typ, name, ops, incremental, validateOnly)
	}
	p.setErr(code)
	if code == errNone {
		return code, nil
	}
	return code, &msg
}

// configResource is a resource of an alter request.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// duplicateResources returns the resources that appear more than once.
func duplicateResources[R any](rs []R, key func(*R) configResource) map[configResource]bool {
	seen := make(map[configResource]bool, len(rs))
	var dup map[configResource]bool
	for i := range rs {
		k := key(&rs[i])
		if seen[k] {
			if dup == nil {
				dup = map[configResource]bool{}
			}
			dup[k] = true
		}
		seen[k] = true
	}
	return dup
}

// configOp is one change of a resource: AlterConfigs' configs are each a
// SET of the whole set (the others go).
type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// configRefusal is a refusal with its Kafka code and message, from the
// checks of the new set that run under the catalog's lock.
type configRefusal struct {
	code int16
	msg  string
}

func (e *configRefusal) Error() string { return e.msg }

// alterResource answers one resource of AlterConfigs (incremental false:
// ops are SETs that replace the whole set) or IncrementalAlterConfigs.
func (s *Server) alterResource(typ kmsg.ConfigResourceType, name string, ops []configOp, incremental, validateOnly bool) (int16, string) {
	names := make(map[string]bool, len(ops))
	var nulls []string
	for _, o := range ops {
		if names[o.name] {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		names[o.name] = true
		if o.value == nil && o.op != kmsg.IncrementalAlterConfigOpDelete {
			nulls = append(nulls, o.name)
		}
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	switch {
	case typ == kmsg.ConfigResourceTypeTopic:
		return s.alterTopicConfigs(name, ops, incremental, validateOnly)
	case typ == kmsg.ConfigResourceTypeBroker:
		return s.alterBrokerConfigs(name, ops)
	case typ == kmsg.ConfigResourceTypeBrokerLogger && incremental:
		return kerr.InvalidRequest.Code, "logstore has no broker loggers to change"
	}
	return kerr.InvalidRequest.Code, "Unknown resource type " + strconv.Itoa(int(typ))
}

// alterTopicConfigs is a topic resource: the new set is computed from
// the one held and checked under the catalog's lock.
func (s *Server) alterTopicConfigs(name string, ops []configOp, incremental, validateOnly bool) (int16, string) {
	if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	// What needs no current value first, as Kafka checks it first.
	for _, o := range ops {
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if c := topicConfigByName[o.name]; c == nil || c.typ != kmsg.ConfigTypeList {
				return kerr.InvalidConfig.Code, "Can't " + opName(o.op) + " to key " + o.name + " because its type is not LIST."
			}
		default:
			return kerr.InvalidRequest.Code, "Unknown operation type " + strconv.Itoa(int(o.op))
		}
	}
	opts := s.store.Options()
	update := func(current map[string]string) (map[string]string, error) {
		next := current
		if !incremental || next == nil {
			next = make(map[string]string, len(ops))
		}
		for _, o := range ops {
			switch o.op {
			case kmsg.IncrementalAlterConfigOpSet:
				next[o.name] = *o.value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(next, o.name)
			default: // APPEND, SUBTRACT of a LIST
				next[o.name] = alterList(next, o)
			}
		}
		return next, checkTopicConfigs(next, opts)
	}
	t, err := s.cat.UpdateTopicConfigs(name, update, validateOnly)
	var refused *configRefusal
	var ce *catalog.ConfigError
	switch {
	case err == nil:
		if !validateOnly {
			s.cfg.Metrics.ConfigChanged("topic")
			s.log.Info("kafka topic configs altered", "topic", name, "configs", fmt.Sprint(t.Configs))
		}
		return errNone, ""
	case errors.As(err, &refused):
		return refused.code, refused.msg
	case errors.As(err, &ce):
		return kerr.InvalidConfig.Code, "Invalid value " + ce.Value + " for configuration " + ce.Name + ": " + ce.Err.Error()
	case errors.Is(err, catalog.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, "The topic '" + name + "' does not exist."
	}
	code := topicErrorCode(err)
	if code == kerr.KafkaStorageError.Code {
		s.log.Error("kafka alter topic configs failed", "topic", name, "err", err.Error())
	}
	return code, err.Error()
}

// CheckTopicConfigs is the check CreateTopics, AlterConfigs and
// IncrementalAlterConfigs make of a topic's new set of configs before
// the catalog checks their values (see checkTopicConfigs), for `logstore
// topics create` and `alter-configs` on a store they open themselves:
// nil, or an error whose text is the message the server answers with
// INVALID_CONFIG (40). Configs at the value logstore behaves as are
// taken out of configs.
func CheckTopicConfigs(configs map[string]string, opts logstore.Options) error {
	return checkTopicConfigs(configs, opts)
}

// checkTopicConfigs refuses, first by name, a config of the new set that
// Kafka does not know, or one logstore does not apply set to a value
// other than the one DescribeConfigs reports for it (what logstore
// behaves as); one set to that value is taken out of the set, accepted
// and not kept (DescribeConfigs goes on showing it as the default). The
// catalog then checks the values of the others.
func checkTopicConfigs(configs map[string]string, opts logstore.Options) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := topicConfigByName[n]
		switch {
		case c == nil:
			return &configRefusal{kerr.InvalidConfig.Code, "Unknown topic config name: " + n}
		case c.perTopic:
			continue
		}
		fixed := c.kafkaDefault
		if c.store != nil {
			fixed = c.store(opts)
		}
		if !sameValue(c.typ, configs[n], fixed) {
			return &configRefusal{kerr.InvalidConfig.Code, "Topic config " + n + "=" + configs[n] + " is not supported by logstore: the config is read-only, fixed at " + fixed + " (" + c.doc + ")"}
		}
		delete(configs, n)
	}
	return nil
}

// sameValue says whether a and b are one value of a config of type typ,
// as Kafka would parse them: numbers and booleans by value, a LIST's items
// trimmed, anything else trimmed.
func sameValue(typ kmsg.ConfigType, a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	switch typ {
	case kmsg.ConfigTypeInt, kmsg.ConfigTypeLong, kmsg.ConfigTypeShort:
		x, err1 := strconv.ParseInt(a, 10, 64)
		y, err2 := strconv.ParseInt(b, 10, 64)
		return err1 == nil && err2 == nil && x == y
	case kmsg.ConfigTypeDouble:
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		return err1 == nil && err2 == nil && x == y
	case kmsg.ConfigTypeBoolean:
		return strings.EqualFold(a, b) && (strings.EqualFold(a, "true") || strings.EqualFold(a, "false"))
	case kmsg.ConfigTypeList:
		split := func(v string) []string {
			var out []string
			for _, it := range strings.Split(v, ",") {
				if it = strings.TrimSpace(it); it != "" && !slices.Contains(out, it) {
					out = append(out, it)
				}
			}
			slices.Sort(out)
			return out
		}
		return slices.Equal(split(a), split(b))
	}
	return a == b
}

// alterList is APPEND or SUBTRACT of o on a LIST config of configs: its
// value, or Kafka's default when unset, split at commas; APPEND adds the
// items not there yet, SUBTRACT removes every one given, as Kafka does.
func alterList(configs map[string]string, o configOp) string {
	cur, ok := configs[o.name]
	if !ok {
		cur = topicConfigByName[o.name].kafkaDefault
	}
	var items []string
	for _, v := range strings.Split(cur, ",") {
		if v != "" {
			items = append(items, v)
		}
	}
	for _, v := range strings.Split(*o.value, ",") {
		if o.op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(items, v) {
				items = append(items, v)
			}
		} else {
			items = slices.DeleteFunc(items, func(x string) bool { return x == v })
		}
	}
	return strings.Join(items, ",")
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	switch op {
	case kmsg.IncrementalAlterConfigOpAppend:
		return "APPEND"
	case kmsg.IncrementalAlterConfigOpSubtract:
		return "SUBTRACT"
	case kmsg.IncrementalAlterConfigOpDelete:
		return "DELETE"
	}
	return "SET"
}

// alterBrokerConfigs is a broker resource: the name checked as Kafka
// checks it, then every change refused (no broker config is dynamic).
func (s *Server) alterBrokerConfigs(name string, ops []configOp) (int16, string) {
	if name != "" {
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
		}
		if id != nodeID {
			return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + strconv.Itoa(nodeID) + ", but received " + name
		}
	}
	var set []string
	for _, o := range ops {
		switch o.op {
		case kmsg.IncrementalAlterConfigOpDelete:
			continue // nothing is set dynamically: nothing to remove
		case kmsg.IncrementalAlterConfigOpSet:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			i := slices.IndexFunc(brokerConfigs, func(c brokerConfig) bool { return c.name == o.name })
			if i < 0 {
				return kerr.InvalidConfig.Code, "Unknown config name: " + o.name
			}
			if brokerConfigs[i].typ != kmsg.ConfigTypeList {
				return kerr.InvalidConfig.Code, "Config value " + strings.ToLower(opName(o.op)) + " is not allowed for config key: " + o.name
			}
		default:
			return kerr.InvalidRequest.Code, "Unknown operations type " + strconv.Itoa(int(o.op))
		}
		set = append(set, o.name)
	}
	if len(set) > 0 {
		return kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(" + strings.Join(set, ", ") + ")"
	}
	return errNone, ""
}
