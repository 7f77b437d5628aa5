package kafkaserver

// DescribeCluster (key 60, KIP-700), versions 0-1 advertised.
//
//   - v0: the brokers, the controller id, the cluster id and, when
//     IncludeClusterAuthorizedOperations is set, the cluster's
//     authorized operations. Flexible from v0.
//   - v1 (KIP-919): EndpointType. This is a broker's listener, so 1
//     (brokers) is answered; 2 (controllers) is 114
//     MISMATCHED_ENDPOINT_TYPE and any other value 115
//     UNSUPPORTED_ENDPOINT_TYPE, as Kafka answers (at v0, which cannot
//     say another type, both would be 42 INVALID_REQUEST).
//   - v2 (IsFenced per broker) is not advertised.
//
// One broker, this node, at the address Metadata answers (Config.Advertise
// or the address the client connected to), rack null; the controller is
// this node, the cluster id the catalog's. logstore has no authorizer, so
// ClusterAuthorizedOperations is what Kafka answers with none: every
// operation the cluster resource supports when asked (CREATE, ALTER,
// DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
// IDEMPOTENT_WRITE, as bits of their ACL operation codes), else
// INT32_MIN, "not requested". Answering DescribeCluster also spares a
// Java AdminClient the fallback to Metadata v8-10 for the cluster's
// authorized operations.

import (
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// Kafka's endpoint types (KIP-919, EndpointType.java).
const (
	endpointBroker     int8 = 1
	endpointController int8 = 2
)

// clusterAuthorizedOperations is the bit field of the operations Kafka
// supports on the cluster resource (AclEntry.supportedOperations(CLUSTER)),
// by their AclOperation codes: all of them are authorized with no
// authorizer, as Kafka's AuthHelper.authorizedOperations answers.
const clusterAuthorizedOperations int32 = 1<<5 | // CREATE
	1<<7 | // ALTER
	1<<8 | // DESCRIBE
	1<<9 | // CLUSTER_ACTION
	1<<10 | // DESCRIBE_CONFIGS
	1<<11 | // ALTER_CONFIGS
	1<<12 // IDEMPOTENT_WRITE

// topicAuthorizedOperations is the same for a topic
// (AclEntry.supportedOperations(TOPIC)), which Metadata v8+ answers when
// IncludeTopicAuthorizedOperations is set.
const topicAuthorizedOperations int32 = 1<<3 | // READ
	1<<4 | // WRITE
	1<<5 | // CREATE
	1<<6 | // DELETE
	1<<7 | // ALTER
	1<<8 | // DESCRIBE
	1<<10 | // DESCRIBE_CONFIGS
	1<<11 // ALTER_CONFIGS

// handleDescribeCluster answers this broker as the whole cluster and its
// controller, as Kafka's AuthHelper.computeDescribeClusterResponse does.
func handleDescribeCluster(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	p.resp = resp
	if r.Version >= 1 && r.EndpointType != endpointBroker {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "Unsupported endpoint type " + strconv.Itoa(int(r.EndpointType))
		if r.EndpointType == endpointController {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			msg = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		resp.ErrorMessage = &msg
		p.setErr(resp.ErrorCode)
		return nil
	}
	resp.EndpointType = endpointBroker
	resp.ClusterID = s.cat.ClusterID()
	resp.ControllerID = nodeID
	resp.ClusterAuthorizedOperations = math.MinInt32
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.authorizedOps(c, kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterAuthorizedOperations)
	}
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID = nodeID
	b.Host, b.Port = s.advertised(c)
	resp.Brokers = append(resp.Brokers, b)
	return nil
}
