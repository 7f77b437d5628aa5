package kafkaserver

// Metadata (key 3), versions 0-13 advertised.
//
//   - v0: an empty topic list is every topic. v1: a null list is, and an
//     empty one none; the controller id and the brokers' racks.
//   - v2: the cluster id. v4: AllowAutoTopicCreation (before v4 a
//     request may always create). v5: offline replicas (none).
//   - v7: each partition's leader epoch (0). v8 (KIP-430): authorized
//     operations when asked for: of the cluster (v8-10, when it may
//     DESCRIBE it) and of each topic found, those the client may do
//     (every one without an authorizer).
//   - v9: flexible. v10 (KIP-516): topic ids. A topic asked by id (a null
//     name) is served at any version, as Kafka serves it from v12.
//   - v11: the cluster's authorized operations gone.
//   - v13 (KIP-1102): a top-level ErrorCode, with which Kafka 4 asks a
//     client to bootstrap again (REBOOTSTRAP_REQUIRED); always 0 here,
//     one node never changing.
//   - v14+ is not advertised.
//
// One broker, this node (node 0), the controller and the leader of every
// partition, its only replica and ISR, from the catalog.

import (
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
)

// nodeID is this broker's node id: the only one, leader of every
// partition and controller.
const nodeID = 0

// handleMetadata answers one broker (this one, at Config.Advertise or
// the address the client connected to), the cluster id, this broker as
// controller, and the topics asked for (all of them for a null list, v1+,
// or an empty one, v0), each partition led by this broker at leader
// epoch 0 with itself as the only replica. A topic that does not exist
// is created when AutoCreateTopics is set and the request allows it
// (v4+: AllowAutoTopicCreation; before v4 always), else answered 3.
func handleMetadata(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	p.resp = resp
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = nodeID
	b.Host, b.Port = s.advertised(c)
	resp.Brokers = append(resp.Brokers, b)
	cluster := s.cat.ClusterID()
	resp.ClusterID = &cluster
	resp.ControllerID = nodeID
	if r.Version >= 8 && r.Version <= 10 && r.IncludeClusterAuthorizedOperations && s.clusterCode(c, kmsg.ACLOperationDescribe) == errNone {
		resp.AuthorizedOperations = s.authorizedOps(c, kmsg.ACLResourceTypeCluster, acl.ClusterName, clusterAuthorizedOperations)
	}
	// topicOps fills in a found topic's authorized operations when they
	// were asked for; a topic answered with an error keeps INT32_MIN, as
	// in Kafka.
	topicOps := func(mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
		if r.Version >= 8 && r.IncludeTopicAuthorizedOperations && mt.ErrorCode == errNone {
			mt.AuthorizedOperations = s.authorizedOps(c, kmsg.ACLResourceTypeTopic, *mt.Topic, topicAuthorizedOperations)
		}
		return mt
	}
	// A topic c may not describe is left out of all topics, and
	// answered 29 when named (by id: without its name), whether it
	// exists or not, so that its existence is not told.
	described := func(name string) bool {
		return s.topicCode(c, kmsg.ACLOperationDescribe, name) == errNone
	}
	denied := func(name *string, id [16]byte) kmsg.MetadataResponseTopic {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID, mt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		p.setErr(mt.ErrorCode)
		return mt
	}

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		for _, t := range s.cat.Topics() {
			if described(t.Name) {
				resp.Topics = append(resp.Topics, topicOps(s.metadataTopic(t)))
			}
		}
	}
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			// By topic id (v10+).
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			for _, t := range s.cat.Topics() {
				if t.ID == rt.TopicID {
					mt = topicOps(s.metadataTopic(t))
					if !described(t.Name) {
						mt = denied(nil, t.ID)
					}
					break
				}
			}
			p.setErr(mt.ErrorCode)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if !described(name) {
			resp.Topics = append(resp.Topics, denied(&name, [16]byte{}))
			continue
		}
		t, ok := s.cat.Topic(name)
		if !ok && s.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation) {
			if !s.mayCreateTopic(c, name) {
				resp.Topics = append(resp.Topics, denied(&name, [16]byte{}))
				continue
			}
			var code int16
			if t, code = s.autoCreate(name); code != errNone {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = &name
				mt.ErrorCode = code
				p.setErr(code)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			ok = true
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = &name
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			p.setErr(mt.ErrorCode)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, topicOps(s.metadataTopic(t)))
	}
	return nil
}

func (s *Server) metadataTopic(t topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	for i := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader = nodeID
		mp.LeaderEpoch = s.store.OpenLeaderEpoch(logstore.PartitionID{Topic: t.Name, Partition: i})
		mp.Replicas = []int32{nodeID}
		mp.ISR = []int32{nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// advertised is the host and port clients dial: its listener's
// advertised address, or the local address of the connection.
func (s *Server) advertised(c *conn) (string, int32) {
	addr := c.advertise
	if addr == "" {
		addr = c.nc.LocalAddr().String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, -1
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return host, -1
	}
	return host, int32(n)
}
