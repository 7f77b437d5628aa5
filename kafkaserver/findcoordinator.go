package kafkaserver

// FindCoordinator (key 10), versions 0-6 advertised.
//
//   - v1: KeyType (1: a transactional id), ThrottleMillis and an error
//     message. v3: flexible.
//   - v4 (KIP-699): several keys, one entry per key in the response;
//     before v4 the top-level fields answer the one key.
//   - v5 (KIP-890): TRANSACTION_ABORTABLE may be answered; never here.
//   - v6 (KIP-932): key type 2, a share group's share coordinator. There
//     are no share groups here, so key type 2 is 42 INVALID_REQUEST with
//     no node (-1), at every version, as Kafka answers without a share
//     coordinator (and below v6); so is a key type no version has, which
//     Kafka refuses too.
//
// This node coordinates every group and every transactional id.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator's key types: a group, a transactional id (v1+); 2, a
// share group (v6+), has no coordinator here.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// handleFindCoordinator answers this node, at the address Metadata gives
// (Config.Advertise or the one the client connected to), for a group
// (key type 0: the group coordinator of every group) and for a
// transactional id (key type 1, v1+: the transaction coordinator of
// every transactional id); any other key type (2, a share group, v6) is
// 42 INVALID_REQUEST with node -1. v0-3 answer in the top-level fields,
// v4+ with one entry per key.
func handleFindCoordinator(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	p.resp = resp
	host, port := s.advertised(c)
	code := errNone
	if r.CoordinatorType != coordinatorGroup && r.CoordinatorType != coordinatorTransaction {
		code, host, port = kerr.InvalidRequest.Code, "", -1
	}
	node := int32(nodeID)
	if code != errNone {
		node = -1
		p.setErr(code)
	}
	// denied is the answer for a key c may not DESCRIBE, as Kafka's:
	// 30 for a group, 53 for a transactional id, and no node.
	denied := func(key string) int16 {
		if code != errNone {
			return errNone
		}
		if r.CoordinatorType == coordinatorGroup {
			return s.groupCode(c, kmsg.ACLOperationDescribe, key)
		}
		return s.txnIDCode(c, kmsg.ACLOperationDescribe, key)
	}
	if r.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, node, host, port
		if code != errNone {
			resp.ErrorMessage = strPtr("key type " + strconv.Itoa(int(r.CoordinatorType)) + " has no coordinator here")
		} else if d := denied(r.CoordinatorKey); d != errNone {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = d, -1, "", -1
			p.setErr(d)
		}
	} else {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			co.ErrorCode, co.NodeID, co.Host, co.Port = code, node, host, port
			if d := denied(key); d != errNone {
				co.ErrorCode, co.NodeID, co.Host, co.Port = d, -1, "", -1
				p.setErr(d)
			}
			resp.Coordinators = append(resp.Coordinators, co)
		}
	}
	return nil
}
