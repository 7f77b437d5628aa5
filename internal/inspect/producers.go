package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/txncoord"
)

// Producer is the state of one producer of a partition.
type Producer struct {
	ProducerID       int64  `json:"producerId"`
	Epoch            int16  `json:"epoch"`
	LastSequence     int32  `json:"lastSequence"` // of the newest window entry; -1 when the window is empty
	LastTimestamp    int64  `json:"lastTimestamp"`
	TxnFirstOffset   *int64 `json:"txnFirstOffset"` // nil: no open transaction
	CoordinatorEpoch int32  `json:"coordinatorEpoch"`
	// Window is the batches the producer wrote in its current epoch,
	// oldest first.
	Window []WindowEntry `json:"window"`
}

// WindowEntry is one batch of a producer's window.
type WindowEntry struct {
	FirstSequence int32 `json:"firstSequence"`
	LastSequence  int32 `json:"lastSequence"`
	FirstOffset   int64 `json:"firstOffset"`
	LastOffset    int64 `json:"lastOffset"`
	Timestamp     int64 `json:"timestamp"`
}

// ProducerOf is the producer of snapshot entry e.
func ProducerOf(e producerstate.Entry) Producer {
	j := Producer{
		ProducerID:       e.ProducerID,
		Epoch:            e.Epoch,
		LastSequence:     recordbatch.NoSequence,
		LastTimestamp:    e.LastTimestamp,
		CoordinatorEpoch: e.CoordinatorEpoch,
		Window:           make([]WindowEntry, len(e.Batches)),
	}
	if n := len(e.Batches); n > 0 {
		j.LastSequence = e.Batches[n-1].LastSeq
	}
	if e.TxnFirstOffset >= 0 {
		first := e.TxnFirstOffset
		j.TxnFirstOffset = &first
	}
	for i, m := range e.Batches {
		j.Window[i] = WindowEntry{FirstSequence: m.FirstSeq, LastSequence: m.LastSeq, FirstOffset: m.FirstOffset, LastOffset: m.LastOffset, Timestamp: m.Timestamp}
	}
	return j
}

// AppendText appends the producer's line, without its newline:
//
//	producerId=31 epoch=1 lastSequence=0 lastTimestamp=1700000000000 txnFirstOffset=none coordinatorEpoch=-1 window=[0..0@5..5 ts=1700000000000]
func (p *Producer) AppendText(dst []byte) []byte {
	txn := "none"
	if p.TxnFirstOffset != nil {
		txn = strconv.FormatInt(*p.TxnFirstOffset, 10)
	}
	dst = fmt.Appendf(dst, "producerId=%d epoch=%d lastSequence=%d lastTimestamp=%d txnFirstOffset=%s coordinatorEpoch=%d window=[",
		p.ProducerID, p.Epoch, p.LastSequence, p.LastTimestamp, txn, p.CoordinatorEpoch)
	for i, m := range p.Window {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = fmt.Appendf(dst, "%d..%d@%d..%d ts=%d", m.FirstSequence, m.LastSequence, m.FirstOffset, m.LastOffset, m.Timestamp)
	}
	return append(dst, ']')
}

// Transaction is a transaction of the store's coordinator.
type Transaction struct {
	TransactionalID string                 `json:"transactionalId"`
	ProducerID      int64                  `json:"producerId"`
	Epoch           int16                  `json:"epoch"`
	State           string                 `json:"state"`
	StartMs         int64                  `json:"startMs"`
	TimeoutMs       int64                  `json:"timeoutMs"`
	Partitions      []TransactionPartition `json:"partitions"`
}

// TransactionPartition is a partition of a transaction.
type TransactionPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// TransactionOf is coordinator transaction tx.
func TransactionOf(tx txncoord.Transaction) Transaction {
	j := Transaction{
		TransactionalID: tx.TransactionalID, ProducerID: tx.ProducerID, Epoch: tx.Epoch, State: tx.State,
		StartMs: tx.StartMs(), TimeoutMs: tx.Timeout.Milliseconds(),
		Partitions: make([]TransactionPartition, len(tx.Partitions)),
	}
	for i, tp := range tx.Partitions {
		j.Partitions[i] = TransactionPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	return j
}

// AppendText appends the transaction's line, without its newline:
//
//	transactionalId=<id> producerId=<id> epoch=<epoch> state=<state> start=<ms> timeoutMs=<ms> partitions=[<topic>-<partition>, ...]
func (t *Transaction) AppendText(dst []byte) []byte {
	parts := make([]string, len(t.Partitions))
	for i, tp := range t.Partitions {
		parts[i] = tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
	}
	return fmt.Appendf(dst, "transactionalId=%s producerId=%d epoch=%d state=%s start=%d timeoutMs=%d partitions=[%s]",
		t.TransactionalID, t.ProducerID, t.Epoch, t.State, t.StartMs, t.TimeoutMs, strings.Join(parts, ", "))
}

// Open says the transaction is begun and not yet completed: Ongoing,
// PrepareCommit or PrepareAbort.
func (t *Transaction) Open() bool {
	switch t.State {
	case "Ongoing", "PrepareCommit", "PrepareAbort":
		return true
	}
	return false
}

// CoordinatorTransactions returns the transactions of the coordinator
// of the store in dir (dir/transactions.db, read-only, waiting at most
// timeout for a process that has it open), or none when the store has
// no coordinator.
func CoordinatorTransactions(dir string, timeout time.Duration) ([]txncoord.Transaction, error) {
	if _, err := os.Stat(filepath.Join(dir, txncoord.FileName)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return txncoord.Read(dir, timeout)
}
