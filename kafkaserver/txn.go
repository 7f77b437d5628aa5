package kafkaserver

import (
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/txncoord"
)

// DefaultTransactionMaxTimeout is Config.TransactionMaxTimeout when it
// is 0: Kafka's transaction.max.timeout.ms (15 minutes).
const DefaultTransactionMaxTimeout = 15 * time.Minute

// DefaultTransactionalIDExpiration is Config.TransactionalIDExpiration
// when it is 0: Kafka's transactional.id.expiration.ms (7 days).
const DefaultTransactionalIDExpiration = txncoord.DefaultIDExpiration

// openCoordinator opens the store's transaction coordinator
// (transactions.db at the store root), which writes its markers into the
// store's partitions and takes producer ids from the catalog.
func (s *Server) openCoordinator(ids txncoord.ProducerIDs) (*txncoord.Coordinator, error) {
	return txncoord.Open(s.store.Dir(), ids, s.markers(), txncoord.Config{
		MaxTimeout:    s.cfg.TransactionMaxTimeout,
		CheckInterval: s.cfg.TransactionCheckInterval,
		IDExpiration:  s.cfg.TransactionalIDExpiration,
		Logger:        s.log,
		Events:        txnEvents(s.cfg.Metrics),
	})
}

// txnEvents feeds the coordinator's events to m's transaction counters;
// nil for a nil m.
func txnEvents(m *metrics.Metrics) func(txncoord.Event) {
	if m == nil {
		return nil
	}
	return func(e txncoord.Event) {
		switch e {
		case txncoord.EventBegun:
			m.Transaction(metrics.TxnBegun)
		case txncoord.EventCommitted:
			m.Transaction(metrics.TxnCommitted)
		case txncoord.EventAborted:
			m.Transaction(metrics.TxnAborted)
		case txncoord.EventTimedOut:
			m.Transaction(metrics.TxnTimedOut)
		case txncoord.EventExpired:
			m.TransactionalIDExpired()
		}
	}
}

// openTransactions is the number of transactions the coordinator has
// begun and not completed (Ongoing, PrepareCommit, PrepareAbort), read
// at each scrape.
func (s *Server) openTransactions() int {
	n := 0
	for _, t := range s.txn.List() {
		switch t.State {
		case "Ongoing", "PrepareCommit", "PrepareAbort":
			n++
		}
	}
	return n
}

// laterTxn is later for a coordinator call: closeState waits for it.
func (s *Server) laterTxn(p *pending, fn func()) {
	s.txnCalls.Add(1)
	s.later(p, func() {
		defer s.txnCalls.Done()
		fn()
	})
}

// txnCode maps a coordinator error to its Kafka code, as Kafka's
// coordinator answers it; a coordinator closed under the request (the
// server closing) is 15, without a log line. Any other error that is
// not one of the sentinels is
// a storage failure of transactions.db: it is logged and answered
// COORDINATOR_NOT_AVAILABLE (15), which is what Kafka answers when the
// append to its transaction log fails, and on which clients retry.
func (s *Server) txnCode(op, txnID string, err error) int16 {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, txncoord.ErrInvalidTimeout):
		return errInvalidTxnTimeout
	case errors.Is(err, txncoord.ErrProducerFenced):
		return errProducerFenced
	case errors.Is(err, txncoord.ErrInvalidProducerEpoch):
		return errInvalidProducerEpoch
	case errors.Is(err, txncoord.ErrInvalidProducerIDMapping):
		return errInvalidProducerIDMap
	case errors.Is(err, txncoord.ErrInvalidTxnState):
		return errInvalidTxnState
	case errors.Is(err, txncoord.ErrConcurrentTransactions):
		return errConcurrentTransactions
	case errors.Is(err, txncoord.ErrInvalidRequest):
		return errInvalidRequest
	case errors.Is(err, txncoord.ErrClosed):
		// The server is closing: a client retries on the next one.
		return errCoordinatorNotAvailable
	}
	s.log.Error("kafka "+op+": the transaction coordinator failed", "transactional_id", txnID, "err", err.Error())
	return errCoordinatorNotAvailable
}

// fencedBefore answers PRODUCER_FENCED (90) as INVALID_PRODUCER_EPOCH
// (47) to a request older than version v, the first that KIP-588 gave
// the new code (InitProducerId v4, AddPartitionsToTxn v2, EndTxn v2), as
// Kafka does: an older client does not know 90, and 47 is what it was
// told for a fenced producer before.
func fencedBefore(code int16, version, v int16) int16 {
	if code == errProducerFenced && version < v {
		return errInvalidProducerEpoch
	}
	return code
}

// handleAddPartitionsToTxn adds partitions to the ongoing transaction of
// a transactional id (v0-3, the client's versions: v4+ batches
// transactions for brokers and is not advertised). The answer is per
// partition, as Kafka's: when a partition does not exist, it is 3
// UNKNOWN_TOPIC_OR_PARTITION and every other partition of the request 55
// OPERATION_NOT_ATTEMPTED, and nothing is added; else every partition
// has the coordinator's answer.
func handleAddPartitionsToTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var tps []txncoord.TopicPartition
	unknown := make(map[txncoord.TopicPartition]bool)
	for _, rt := range r.Topics {
		t, ok := s.cat.Topic(rt.Topic)
		for _, pn := range rt.Partitions {
			tp := txncoord.TopicPartition{Topic: rt.Topic, Partition: pn}
			if !ok || pn < 0 || pn >= t.Partitions {
				unknown[tp] = true
			}
			tps = append(tps, tp)
		}
	}
	code := errNone
	switch {
	case r.TransactionalID == "":
		code = errInvalidRequest
	case len(unknown) > 0:
	case len(tps) == 0:
		// Nothing to add and nothing to answer.
	default:
		code = fencedBefore(s.txnCode("AddPartitionsToTxn", r.TransactionalID,
			s.txn.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps)), r.Version, 2)
	}
	for _, rt := range r.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, pn := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = pn
			sp.ErrorCode = code
			if len(unknown) > 0 && code == errNone {
				sp.ErrorCode = errOperationNotAttempted
				if unknown[txncoord.TopicPartition{Topic: rt.Topic, Partition: pn}] {
					sp.ErrorCode = errUnknownTopicOrPartition
				}
			}
			p.setErr(sp.ErrorCode)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	p.resp = resp
	return nil
}

// handleEndTxn commits or aborts the transaction of a transactional id
// (v0-4; v5 is KIP-890's epoch bump and is not advertised). The
// coordinator writes the COMMIT or ABORT marker into every partition of
// the transaction, durably, before it returns, so the answer waits for
// it, in a goroutine of its own, as a produce waits for its fsync.
func handleEndTxn(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	p.resp = resp
	if r.TransactionalID == "" {
		resp.ErrorCode = errInvalidRequest
		p.setErr(resp.ErrorCode)
		return nil
	}
	s.laterTxn(p, func() {
		err := s.txn.EndTxn(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit)
		resp.ErrorCode = fencedBefore(s.txnCode("EndTxn", r.TransactionalID, err), r.Version, 2)
		p.setErr(resp.ErrorCode)
	})
	return nil
}

// initTransactional answers InitProducerId for a transactional id: the
// coordinator's (producer id, epoch) for it, a bumped epoch (or a new
// producer id when the epoch is exhausted) and any open transaction
// aborted. v3+ carry the producer id and epoch the client has (KIP-360),
// -1 and -1 when it has none. It runs in a goroutine of its own, since
// aborting an open transaction writes markers.
func (s *Server) initTransactional(r *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse, p *pending) {
	txnID := *r.TransactionalID
	if txnID == "" {
		// Kafka: an empty transactional id is INVALID_REQUEST.
		resp.ErrorCode = errInvalidRequest
		p.setErr(resp.ErrorCode)
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		pid, epoch = r.ProducerID, r.ProducerEpoch
		if (pid == -1) != (epoch == -1) {
			// Kafka: both or neither, else INVALID_REQUEST.
			resp.ErrorCode = errInvalidRequest
			p.setErr(resp.ErrorCode)
			return
		}
	}
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	s.laterTxn(p, func() {
		gotPID, gotEpoch, err := s.txn.InitProducerID(txnID, timeout, pid, epoch)
		if resp.ErrorCode = fencedBefore(s.txnCode("InitProducerId", txnID, err), r.Version, 4); resp.ErrorCode == errNone {
			resp.ProducerID, resp.ProducerEpoch = gotPID, gotEpoch
		}
		p.setErr(resp.ErrorCode)
	})
}

// produceCode maps BeginProduce's refusal of a transactional batch to
// the code a producer gets: 48 when its transaction is not ongoing with
// the partition added, 47 for an older epoch (Produce has no 90: Kafka's
// partition answers a fenced epoch 47), 49 for a producer id that is not
// the transactional id's, 51 while the transaction's decision is being
// completed (retriable; once complete, a retry gets 48). A coordinator
// closed under the request (the server closing) is 6
// NOT_LEADER_OR_FOLLOWER, as a partition closed under it; a failure of
// the coordinator is 56 KAFKA_STORAGE_ERROR, logged.
func (s *Server) produceCode(txnID string, err error) int16 {
	if errors.Is(err, txncoord.ErrClosed) {
		return errNotLeaderOrFollower
	}
	code := s.txnCode("Produce", txnID, err)
	switch code {
	case errProducerFenced:
		return errInvalidProducerEpoch
	case errCoordinatorNotAvailable:
		return errKafkaStorageError
	}
	return code
}

// beginTxnProduce admits a transactional batch b for topic-partition
// through the coordinator (BeginProduce): its transaction must be
// ongoing with the partition added, at the producer's current epoch. It
// returns the release to call once the batch is appended, or the code
// and message of the refusal.
//
// A transactional batch in a request without a transactional id is
// refused with 48 INVALID_TXN_STATE: no transaction can hold it. Kafka
// refuses such a request as a whole with 53
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (the null id is not authorized),
// which clients take as fatal for a transactional id they do not have;
// 48 names what is wrong and keeps the answer per partition.
func (s *Server) beginTxnProduce(txnID *string, topic string, partition int32, b recordbatch.Batch) (release func(), code int16, msg string) {
	if txnID == nil || *txnID == "" {
		return nil, errInvalidTxnState, "a transactional batch in a produce request without a transactional id"
	}
	release, err := s.txn.BeginProduce(*txnID, b.ProducerID(), b.ProducerEpoch(), txncoord.TopicPartition{Topic: topic, Partition: partition})
	if err != nil {
		return nil, s.produceCode(*txnID, err), "transactional id " + strconv.Quote(*txnID) + ": " + err.Error()
	}
	return release, errNone, ""
}
