package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// Authorization: every check of a request against the ACLs is one of
// these, asked by the API's handler where Kafka's KafkaApis asks it,
// and answered with Kafka's code (29 TOPIC_, 30 GROUP_, 31 CLUSTER_, 53
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Without an authorizer
// (Config.Authorizer nil) every check passes, as in Kafka without
// authorizer.class.name.

// anonymous is the principal of a connection that did not
// authenticate, as Kafka names it.
const anonymous = "User:ANONYMOUS"

// principalOf is c's principal for the ACLs.
func principalOf(c *conn) string {
	if c.principal == "" {
		return anonymous
	}
	return c.principal
}

// authorized says whether c may do op on the resource rt named name.
func (s *Server) authorized(c *conn, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a := s.cfg.Authorizer
	return a == nil || a.Authorize(principalOf(c), c.ip, op, rt, name)
}

// topicCode is errNone when c may do op on topic, else 29.
func (s *Server) topicCode(c *conn, op kmsg.ACLOperation, topic string) int16 {
	if s.authorized(c, op, kmsg.ACLResourceTypeTopic, topic) {
		return errNone
	}
	return kerr.TopicAuthorizationFailed.Code
}

// groupCode is errNone when c may do op on group, else 30.
func (s *Server) groupCode(c *conn, op kmsg.ACLOperation, group string) int16 {
	if s.authorized(c, op, kmsg.ACLResourceTypeGroup, group) {
		return errNone
	}
	return kerr.GroupAuthorizationFailed.Code
}

// txnIDCode is errNone when c may do op on the transactional id, else 53.
func (s *Server) txnIDCode(c *conn, op kmsg.ACLOperation, id string) int16 {
	if s.authorized(c, op, kmsg.ACLResourceTypeTransactionalId, id) {
		return errNone
	}
	return kerr.TransactionalIDAuthorizationFailed.Code
}

// clusterCode is errNone when c may do op on the cluster, else 31.
func (s *Server) clusterCode(c *conn, op kmsg.ACLOperation) int16 {
	if s.authorized(c, op, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return errNone
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// topicCodes are the authorization codes (topicCode) of the distinct
// topics of a request, each asked once (a hostile request may repeat a
// topic): one topic, a Produce's or a Fetch's usual, without a map. The
// zero value, for a server without an authorizer, is errNone for all.
type topicCodes struct {
	decided   bool // false: no authorizer, or no topic
	first     string
	firstCode int16
	more      map[string]int16
}

// authorizeTopics decides op for the topics of a request.
func authorizeTopics[T any](s *Server, c *conn, op kmsg.ACLOperation, topics []T, name func(*T) string) topicCodes {
	var tc topicCodes
	if s.cfg.Authorizer == nil || len(topics) == 0 {
		return tc
	}
	tc.decided = true
	tc.first = name(&topics[0])
	tc.firstCode = s.topicCode(c, op, tc.first)
	for i := 1; i < len(topics); i++ {
		n := name(&topics[i])
		if _, ok := tc.more[n]; ok || n == tc.first {
			continue
		}
		if tc.more == nil {
			tc.more = map[string]int16{}
		}
		tc.more[n] = s.topicCode(c, op, n)
	}
	return tc
}

// of is topic's code.
func (tc *topicCodes) of(topic string) int16 {
	if topic == tc.first {
		return tc.firstCode
	}
	return tc.more[topic]
}

// set makes topic's code code; topic is one of the request's.
func (tc *topicCodes) set(topic string, code int16) {
	if topic == tc.first {
		tc.firstCode = code
	} else {
		tc.more[topic] = code
	}
}

// each calls fn with each topic and its code.
func (tc *topicCodes) each(fn func(topic string, code int16)) {
	if !tc.decided {
		return
	}
	fn(tc.first, tc.firstCode)
	for n, code := range tc.more {
		fn(n, code)
	}
}

// authorizedOps is the bit field of the operations of supported (by
// their AclOperation codes) that c may do on the resource, as Kafka's
// AuthHelper.authorizedOperations answers (KIP-430): all of them
// without an authorizer.
func (s *Server) authorizedOps(c *conn, rt kmsg.ACLResourceType, name string, supported int32) int32 {
	if s.cfg.Authorizer == nil {
		return supported
	}
	var ops int32
	for op := kmsg.ACLOperationRead; op <= kmsg.ACLOperationDescribeTokens; op++ {
		if supported&(1<<op) != 0 && s.authorized(c, op, rt, name) {
			ops |= 1 << op
		}
	}
	return ops
}

// mayCreateTopic says whether c may create topic name: CREATE on the
// cluster or on the topic, as Kafka asks for CreateTopics and for a
// Metadata that creates.
func (s *Server) mayCreateTopic(c *conn, name string) bool {
	return s.authorized(c, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName) ||
		s.authorized(c, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name)
}

// configCode is the authorization of op (DESCRIBE_CONFIGS,
// ALTER_CONFIGS) on a config resource: of the topic (29), or of the
// cluster for a broker or broker logger (31), as Kafka's
// ConfigHelper and ConfigAdminManager ask.
func (s *Server) configCode(c *conn, typ kmsg.ConfigResourceType, name string, op kmsg.ACLOperation) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return s.topicCode(c, op, name)
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		return s.clusterCode(c, op)
	}
	return errNone
}
