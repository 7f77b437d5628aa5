package kafkaserver

// DescribeConfigs (key 32), versions 0-4 advertised. The config table is
// configs.go; AlterConfigs and IncrementalAlterConfigs change a topic's
// own values (alterconfigs.go).
//
//   - v0: IsDefault per config (source DEFAULT_CONFIG), no sources.
//   - v1 (KIP-226): IncludeSynonyms, the source of each config and its
//     synonyms: the topic's own value (DYNAMIC_TOPIC_CONFIG, 1), then the
//     broker config it falls back to, with the server's value
//     (STATIC_BROKER_CONFIG, 4) where it differs from Kafka's default,
//     then Kafka's default (DEFAULT_CONFIG, 5), as Kafka's ConfigHelper
//     lists them (log.roll.ms and log.retention.ms have no default of
//     their own: when set, log.roll.hours or log.retention.hours at 168
//     follows, and when not, no synonym is listed). v2: the same as v1.
//   - v3 (KIP-569): IncludeDocumentation (a short doc of each config)
//     and the config type.
//   - v4: flexible.
//
// The server cannot tell a serve flag given from one left at its
// default: a value equal to Kafka's default is DEFAULT_CONFIG, one that
// differs STATIC_BROKER_CONFIG. logstore keeps everything by default, so
// retention.ms is -1 from log.retention.ms (STATIC_BROKER_CONFIG), where
// Kafka's default is 7 days.
//
// Resources, as Kafka answers them:
//
//   - topic (2): every config of configs.go's table; the five the
//     catalog takes per topic (segment.bytes, segment.ms,
//     max.message.bytes, retention.bytes, retention.ms) are not
//     read-only (AlterConfigs and IncrementalAlterConfigs change them),
//     the rest are. A name Kafka would refuse: INVALID_TOPIC_EXCEPTION (17); an
//     unknown topic: UNKNOWN_TOPIC_OR_PARTITION (3).
//   - broker (4): "" is the cluster-wide dynamic defaults, which
//     logstore has none of: no configs, no error (as Kafka without
//     dynamic configs). "0" (this broker's id) lists the broker configs
//     the server has, all read-only. Any other name: INVALID_REQUEST
//     (42), as Kafka answers a broker id not its own or not a number.
//   - broker logger (8), client metrics (16), group (32) and any other
//     type: INVALID_REQUEST (42) with a message; logstore has no log4j
//     loggers, metrics subscriptions or group configs.
//
// ConfigNames null or empty lists every config; otherwise only the
// configs named, and a name the resource does not have is left out, as
// Kafka does. Nothing is sensitive.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func handleDescribeConfigs(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	p.resp = resp
	d := configDescriber{
		synonyms: r.IncludeSynonyms && r.Version >= 1,
		docs:     r.IncludeDocumentation && r.Version >= 3,
	}
	resp.Resources = answerEach(r.Resources, func(rr *kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
		*sr = kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		d.wanted = nil
		if len(rr.ConfigNames) > 0 {
			d.wanted = make(map[string]bool, len(rr.ConfigNames))
			for _, n := range rr.ConfigNames {
				d.wanted[n] = true
			}
		}
		var code int16
		var msg string
		switch denied := s.configCode(c, rr.ResourceType, rr.ResourceName, kmsg.ACLOperationDescribeConfigs); {
		case denied != errNone:
			code, msg = denied, "not authorized to describe the configs of "+rr.ResourceName
		case rr.ResourceType == kmsg.ConfigResourceTypeTopic:
			code, msg = d.topic(s, rr.ResourceName, sr)
		case rr.ResourceType == kmsg.ConfigResourceTypeBroker:
			code, msg = d.broker(s, rr.ResourceName, sr)
		case rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger:
			code, msg = kerr.InvalidRequest.Code, "logstore has no broker loggers to describe"
		default:
			code, msg = kerr.InvalidRequest.Code, "unsupported resource type "+strconv.Itoa(int(rr.ResourceType))
		}
		sr.ErrorCode = code
		if code != errNone {
			sr.ErrorMessage = &msg
			sr.Configs = nil
		}
		p.setErr(code)
	})
	return nil
}

// configDescriber builds the configs of one request.
type configDescriber struct {
	synonyms, docs bool
	// wanted is the request's key filter, nil for every config.
	wanted map[string]bool
}

func (d *configDescriber) want(name string) bool { return d.wanted == nil || d.wanted[name] }

func synonym(name string, value *string, src kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	sy.Name, sy.Value, sy.Source = name, value, src
	return sy
}

// entry makes one config of the answer; its source is the first
// synonym's, DEFAULT_CONFIG when there is none.
func (d *configDescriber) entry(name string, value *string, readOnly bool, typ kmsg.ConfigType, doc string, syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) kmsg.DescribeConfigsResponseResourceConfig {
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value, e.ReadOnly, e.ConfigType = name, value, readOnly, typ
	e.Source = kmsg.ConfigSourceDefaultConfig
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	if d.synonyms {
		e.ConfigSynonyms = syns
	}
	if d.docs {
		e.Documentation = &doc
	}
	return e
}

func (d *configDescriber) topic(s *Server, name string, sr *kmsg.DescribeConfigsResponseResource) (int16, string) {
	if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	t, ok := s.cat.Topic(name)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, "topic " + strconv.Quote(name) + " does not exist"
	}
	sr.Configs = d.topicConfigs(s.store.Options(), t.Configs, sr.Configs)
	return errNone, ""
}

// TopicConfigs is what DescribeConfigs answers for a topic with its own
// configs (as the catalog holds them) over a store with opts, every
// config of the table with its source (no synonyms, no docs): what
// `logstore topics describe` shows of a store it opens itself, the same
// as a server over that store would answer.
func TopicConfigs(opts logstore.Options, configs map[string]string) []kmsg.DescribeConfigsResponseResourceConfig {
	var d configDescriber
	return d.topicConfigs(opts, configs, nil)
}

// topicConfigs appends the wanted configs of a topic with its own
// configs over a store with opts to dst.
func (d *configDescriber) topicConfigs(opts logstore.Options, configs map[string]string, dst []kmsg.DescribeConfigsResponseResourceConfig) []kmsg.DescribeConfigsResponseResourceConfig {
	for i := range topicConfigs {
		c := &topicConfigs[i]
		if !d.want(c.name) {
			continue
		}
		storeVal := c.kafkaDefault
		if c.store != nil {
			storeVal = c.store(opts)
		}
		var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		value := storeVal
		if raw, set := configs[c.name]; set && c.perTopic {
			value = c.topicValue(raw)
			syns = append(syns, synonym(c.name, sp(value), kmsg.ConfigSourceDynamicTopicConfig))
		}
		if c.broker != "" {
			static := storeVal != c.kafkaDefault
			if static {
				syns = append(syns, synonym(c.broker, sp(storeVal), kmsg.ConfigSourceStaticBrokerConfig))
			}
			switch {
			case c.brokerDefault:
				syns = append(syns, synonym(c.broker, sp(c.kafkaDefault), kmsg.ConfigSourceDefaultConfig))
			case static && c.hoursSynonym != "":
				syns = append(syns, synonym(c.hoursSynonym, sp("168"), kmsg.ConfigSourceDefaultConfig))
			}
		}
		dst = append(dst, d.entry(c.name, sp(value), !c.perTopic, c.typ, c.doc, syns))
	}
	return dst
}

func (d *configDescriber) broker(s *Server, name string, sr *kmsg.DescribeConfigsResponseResource) (int16, string) {
	if name == "" {
		// The cluster-wide dynamic defaults: none.
		return errNone, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "broker id must be an integer, but it is: " + name
	}
	if id != nodeID {
		return kerr.InvalidRequest.Code, "unexpected broker id, expected " + strconv.Itoa(nodeID) + " or empty string, but received " + name
	}
	for i := range brokerConfigs {
		c := &brokerConfigs[i]
		if !d.want(c.name) {
			continue
		}
		v := c.value(s)
		var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if v != nil && (c.kafkaDefault == nil || *v != *c.kafkaDefault) {
			syns = append(syns, synonym(c.name, v, kmsg.ConfigSourceStaticBrokerConfig))
		}
		switch {
		case c.kafkaDefault != nil:
			syns = append(syns, synonym(c.name, c.kafkaDefault, kmsg.ConfigSourceDefaultConfig))
		case v != nil && c.hoursSynonym != "":
			syns = append(syns, synonym(c.hoursSynonym, sp("168"), kmsg.ConfigSourceDefaultConfig))
		}
		sr.Configs = append(sr.Configs, d.entry(c.name, v, true, c.typ, c.doc, syns))
	}
	return errNone, ""
}
