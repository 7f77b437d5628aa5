package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// handleInitProducerID hands out a new producer id at epoch 0 for an
// idempotent producer. A producer id and epoch in the request (v3+,
// KIP-360) are ignored without a transactional id, as Kafka does: the
// producer gets a new id. With a transactional id the transaction
// coordinator answers (see initTransactional): the id's durable
// producer id with its epoch bumped, an open transaction aborted, 50 for
// a timeout above Config.TransactionMaxTimeout (or not above 0), 90
// (47 before v4) for a producer id that is not the id's or an epoch
// older than its own, 42 for a producer id without an epoch or the
// reverse, as Kafka answers.
func handleInitProducerID(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	p.resp = resp
	if r.TransactionalID != nil {
		s.initTransactional(r, resp, p)
		return nil
	}
	pid, err := s.cat.NewProducerID()
	if err != nil {
		s.log.Error("kafka InitProducerId: no producer id", "err", err.Error())
		resp.ErrorCode = errKafkaStorageError
	} else {
		resp.ProducerID, resp.ProducerEpoch = pid, 0
	}
	p.setErr(resp.ErrorCode)
	return nil
}
