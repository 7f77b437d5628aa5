package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// handleInitProducerID hands out a new producer id at epoch 0 for an
// idempotent producer. A producer id and epoch in the request (v3+,
// KIP-360) are ignored without a transactional id, as Kafka does: the
// producer gets a new id. With a transactional id there is no
// transaction coordinator to serve it, and there will not be one:
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), which is also what
// FindCoordinator says for it. It is the one answer a Kafka broker
// gives that refuses a transactional id for good (to a principal
// without rights on it); clients treat it as fatal and fail at once.
// COORDINATOR_NOT_AVAILABLE (15), which Kafka answers while its
// coordinator is not there yet, is retriable: kgo and the Java client
// retry it until their timeouts run out.
func handleInitProducerID(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case r.TransactionalID != nil:
		resp.ErrorCode = errTransactionalIDAuthorizationFailed
	default:
		pid, err := s.cat.NewProducerID()
		if err != nil {
			s.log.Error("kafka InitProducerId: no producer id", "err", err.Error())
			resp.ErrorCode = errKafkaStorageError
			break
		}
		resp.ProducerID, resp.ProducerEpoch = pid, 0
	}
	p.setErr(resp.ErrorCode)
	p.resp = resp
	return nil
}
