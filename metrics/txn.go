package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TxnEvent is what became of a transaction, for Transaction.
type TxnEvent uint8

// The transaction events, the label values of
// logstore_transactions_total.
const (
	TxnBegun     TxnEvent = iota // "begun": a transaction began (its first partition was added)
	TxnCommitted                 // "committed": its COMMIT markers are written
	TxnAborted                   // "aborted": its ABORT markers are written (a timed-out one included)
	TxnTimedOut                  // "timed_out": the coordinator aborted it past its timeout
	numTxnEvents
)

var txnEventNames = [numTxnEvents]string{
	TxnBegun:     "begun",
	TxnCommitted: "committed",
	TxnAborted:   "aborted",
	TxnTimedOut:  "timed_out",
}

// String returns the event's label value.
func (e TxnEvent) String() string {
	if e < numTxnEvents {
		return txnEventNames[e]
	}
	return "unknown"
}

// txnMetrics are the transaction coordinator's metrics.
type txnMetrics struct {
	events [numTxnEvents]prometheus.Counter
	// expired counts the transactional ids the coordinator expired.
	expired prometheus.Counter
	// open reads the number of open transactions at scrape time; nil
	// until WatchOpenTransactions.
	open atomic.Pointer[func() int]
}

func (t *txnMetrics) register(reg prometheus.Registerer) {
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logstore_transactions_total",
		Help: "Transactions of the transaction coordinator by event: begun, committed, aborted (timed out ones included), timed_out.",
	}, []string{"event"})
	for e := range numTxnEvents {
		t.events[e] = events.WithLabelValues(e.String())
	}
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "logstore_transactions_open",
		Help: "Transactions begun and not yet completed (ongoing, or decided with markers still being written).",
	}, func() float64 {
		if f := t.open.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	t.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "logstore_transactional_ids_expired_total",
		Help: "Transactional ids the transaction coordinator forgot after they were idle past their expiration (Kafka's transactional.id.expiration.ms).",
	})
	reg.MustRegister(events, open, t.expired)
}

// Transaction counts one transaction event e.
func (m *Metrics) Transaction(e TxnEvent) {
	if m == nil || e >= numTxnEvents {
		return
	}
	m.txn.events[e].Inc()
}

// Transactions returns how many events e Transaction has counted so
// far (logstore_transactions_total{event}), for a program or a test
// that checks it without scraping.
func (m *Metrics) Transactions(e TxnEvent) float64 {
	if m == nil || e >= numTxnEvents {
		return 0
	}
	var d dto.Metric
	if err := m.txn.events[e].Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}

// TransactionalIDExpired counts one transactional id the coordinator
// expired (logstore_transactional_ids_expired_total).
func (m *Metrics) TransactionalIDExpired() {
	if m == nil {
		return
	}
	m.txn.expired.Inc()
}

// TransactionalIDsExpired returns how many transactional ids
// TransactionalIDExpired has counted so far.
func (m *Metrics) TransactionalIDsExpired() float64 {
	if m == nil {
		return 0
	}
	var d dto.Metric
	if err := m.txn.expired.Write(&d); err != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}

// WatchOpenTransactions makes each scrape of logstore_transactions_open
// call open; nil stops (the gauge reads 0).
func (m *Metrics) WatchOpenTransactions(open func() int) {
	if m == nil {
		return
	}
	if open == nil {
		m.txn.open.Store(nil)
		return
	}
	m.txn.open.Store(&open)
}
