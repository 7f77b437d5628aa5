package kafkaserver

// The transaction coordinator's wiring: the transaction APIs
// (initproducerid.go, addpartitionstotxn.go, addoffsetstotxn.go,
// txnoffsetcommit.go, endtxn.go, describetransactions.go,
// listtransactions.go) answer from package txncoord, which this file
// opens, feeds its markers (through the group coordinator for the
// offsets partition) and maps the errors of (txnCode, produceCode).

import (
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logstore/logstore/groupcoord"
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

// txnCall wraps fn, a transaction coordinator call that an answer
// waits for in a goroutine of its own (go complete(s.txnCall(fn))):
// closeState waits for it, from now until fn returns.
func (s *Server) txnCall(fn func()) func() {
	s.txnCalls.Add(1)
	return func() {
		defer s.txnCalls.Done()
		fn()
	}
}

// txnCode maps a coordinator error to its Kafka code, as Kafka's
// coordinator answers it. A coordinator closed under the request (the
// server closing) is 15, without a log line. Any other error that is
// not one of the sentinels is a storage failure of transactions.db: it
// is logged and answered COORDINATOR_NOT_AVAILABLE (15), which is what
// Kafka answers when the append to its transaction log fails, and on
// which clients retry.
func (s *Server) txnCode(op, txnID string, err error) int16 {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, txncoord.ErrInvalidTimeout):
		return kerr.InvalidTransactionTimeout.Code
	case errors.Is(err, txncoord.ErrProducerFenced):
		return kerr.ProducerFenced.Code
	case errors.Is(err, txncoord.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, txncoord.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, txncoord.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, txncoord.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code
	case errors.Is(err, txncoord.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, txncoord.ErrClosed):
		// The server is closing: a client retries on the next one.
		return kerr.CoordinatorNotAvailable.Code
	}
	s.log.Error("kafka "+op+": the transaction coordinator failed", "transactional_id", txnID, "err", err.Error())
	return kerr.CoordinatorNotAvailable.Code
}

// fencedBefore answers PRODUCER_FENCED (90) as INVALID_PRODUCER_EPOCH
// (47) to a request older than version v, the first that KIP-588 gave
// the new code (InitProducerId v4, AddPartitionsToTxn v2, EndTxn v2), as
// Kafka does: an older client does not know 90, and 47 is what it was
// told for a fenced producer before.
func fencedBefore(code int16, version, v int16) int16 {
	if code == kerr.ProducerFenced.Code && version < v {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
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
		return kerr.NotLeaderForPartition.Code
	}
	code := s.txnCode("Produce", txnID, err)
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.CoordinatorNotAvailable.Code:
		return kerr.KafkaStorageError.Code
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
		return nil, kerr.InvalidTxnState.Code, "a transactional batch in a produce request without a transactional id"
	}
	release, err := s.txn.BeginProduce(*txnID, b.ProducerID(), b.ProducerEpoch(), txncoord.TopicPartition{Topic: topic, Partition: partition})
	if err != nil {
		return nil, s.produceCode(*txnID, err), "transactional id " + strconv.Quote(*txnID) + ": " + err.Error()
	}
	return release, errNone, ""
}

// markers is what the transaction coordinator writes its markers
// through: a marker for a partition of __consumer_offsets commits or
// drops the transaction's pending offsets of the groups of that
// partition (the group coordinator); any other goes to the store. The
// open transactions it lists are the store's: the offsets partition is
// added to a transaction durably (AddPartitionsDurable), so the
// coordinator's file always lists it.
func (s *Server) markers() txncoord.Markers {
	return groupMarkers{groups: s.groups, Markers: txncoord.StoreMarkers(s.store)}
}

type groupMarkers struct {
	groups *groupcoord.Coordinator
	txncoord.Markers
}

func (m groupMarkers) WriteMarkers(d txncoord.Decision) (func() error, error) {
	store := d
	store.Partitions, store.FirstOffsets = nil, nil
	for i, tp := range d.Partitions {
		if tp.Topic != groupcoord.OffsetsTopic {
			store.Partitions = append(store.Partitions, tp)
			if d.FirstOffsets != nil {
				store.FirstOffsets = append(store.FirstOffsets, d.FirstOffsets[i])
			}
		}
	}
	sync := func() error { return nil }
	if len(store.Partitions) > 0 {
		var err error
		if sync, err = m.Markers.WriteMarkers(store); err != nil {
			return nil, err
		}
	}
	// The offsets after the partitions' markers, durable when
	// CompleteTxn returns; each is a no-op when it is written again (the
	// coordinator retries a decision that failed).
	var errs []error
	for _, tp := range d.Partitions {
		if tp.Topic == groupcoord.OffsetsTopic {
			errs = append(errs, m.groups.CompleteTxn(d.ProducerID, tp.Partition, d.Commit))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, sync())
	}
	return sync, nil
}
