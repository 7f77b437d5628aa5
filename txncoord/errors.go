package txncoord

import (
	"errors"
	"fmt"

	"github.com/logstore/logstore"
)

// Sentinel errors of package txncoord; test them with errors.Is. The
// Kafka error code the server answers for each is in parentheses.
// ErrInvalidTransition (state.go) is a move the state table refuses,
// which only a damaged or hand-made transactions.db can cause; the
// server answers it as it answers a storage failure. Any other error a
// Coordinator method returns is a storage failure
// (transactions.db or a marker write failed): the server answers it as
// Kafka answers a failed coordinator log append, COORDINATOR_NOT_AVAILABLE
// (15), which clients retry.
var (
	// ErrInvalidTimeout: InitProducerID with a transaction timeout of
	// zero or less, or above Config.MaxTimeout
	// (INVALID_TRANSACTION_TIMEOUT, 50).
	ErrInvalidTimeout = errors.New("invalid transaction timeout")

	// ErrProducerFenced: a coordinator request (InitProducerID with a
	// producer id and epoch, AddPartitions, EndTxn) from a producer
	// whose epoch is not the current one of its transactional id: a
	// newer producer has taken the id over, or the coordinator bumped
	// the epoch to abort a timed-out transaction (PRODUCER_FENCED, 90).
	ErrProducerFenced = errors.New("producer fenced")

	// ErrInvalidProducerEpoch: BeginProduce with an epoch other than the
	// current one of the transactional id, or with the producer id the
	// id had before its epochs ran out (INVALID_PRODUCER_EPOCH, 47).
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")

	// ErrInvalidProducerIDMapping: the transactional id is unknown, or
	// the producer id is not the one it maps to
	// (INVALID_PRODUCER_ID_MAPPING, 49).
	ErrInvalidProducerIDMapping = errors.New("invalid producer id mapping")

	// ErrInvalidTxnState: the request does not fit the transaction's
	// state: EndTxn with the other decision than the one taken, EndTxn
	// with no transaction begun, a produce to a partition not added to
	// the ongoing transaction or with none ongoing (INVALID_TXN_STATE,
	// 48).
	ErrInvalidTxnState = errors.New("invalid transaction state")

	// ErrConcurrentTransactions: another call is changing the state of
	// the same transactional id (persisting a transition, writing the
	// markers of a decision), or a decision is taken and its markers are
	// not all written yet (CONCURRENT_TRANSACTIONS, 51). Clients retry.
	ErrConcurrentTransactions = errors.New("concurrent transactions")

	// ErrInvalidRequest: an empty transactional id (INVALID_REQUEST,
	// 42), as Kafka refuses it.
	ErrInvalidRequest = errors.New("invalid request: empty transactional id")

	// ErrDamaged: transactions.db holds what this build cannot read (an
	// unknown format version, an entry that does not decode, or a file
	// bbolt panics on). Open refuses it rather than guess; the error
	// names the file (and the key, in a *DamagedError).
	ErrDamaged = errors.New("transactions.db damaged")
)

// ErrClosed is logstore.ErrClosed: the coordinator was closed.
var ErrClosed = logstore.ErrClosed

// DamagedError is a part of transactions.db that does not decode: the
// file, the transactional id (Key) when known, the byte offset in the
// file where decoding stopped, and why. In a bbolt file of the previous
// format (read to convert it) Bucket is the bucket and Offset is in the
// key's value. It matches ErrDamaged.
type DamagedError struct {
	File   string
	Bucket string
	Key    string
	Offset int
	Reason string
}

func (e *DamagedError) Error() string {
	if e.Bucket == "" {
		if e.Key != "" {
			return fmt.Sprintf("%s: byte %d (transactional id %q): %s: %s", e.File, e.Offset, e.Key, ErrDamaged, e.Reason)
		}
		return fmt.Sprintf("%s: byte %d: %s: %s", e.File, e.Offset, ErrDamaged, e.Reason)
	}
	return fmt.Sprintf("%s: bucket %q, key %q: byte %d: %s: %s", e.File, e.Bucket, e.Key, e.Offset, ErrDamaged, e.Reason)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }
