package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/txncoord"
)

// producersOptions holds the flags of `logstore producers`.
type producersOptions struct {
	partitionFlags
	json bool

	commandOutput
}

func newProducersCommand() *cobra.Command {
	opts := &producersOptions{partitionFlags: newPartitionFlags()}
	cmd := &cobra.Command{
		Use:   "producers [--dir DIR] [--topic TOPIC] [--partition N] [--json]",
		Short: "Print a partition's idempotent-producer state",
		Long: `producers prints the producer state of a partition as the store holds it
after opening: one line per producer, in producer id order:

  producerId=<id> epoch=<epoch> lastSequence=<seq> lastTimestamp=<ms> txnFirstOffset=<offset|none> coordinatorEpoch=<epoch> window=[<entry>, ...]

where each window entry, oldest first (at most 5), is one batch the
producer wrote in its current epoch:

  <first sequence>..<last sequence>@<first offset>..<last offset> ts=<max timestamp>

lastSequence is the last sequence of the newest window entry, -1 when
the window is empty (after a new epoch began with a transaction marker);
lastTimestamp is the max timestamp of the producer's newest batch or
marker; txnFirstOffset is the first offset of the producer's open
transaction, or none (abort ends one that no coordinator will end);
coordinatorEpoch is that of its newest transaction marker, -1 before
any. For example:

  producerId=31 epoch=1 lastSequence=0 lastTimestamp=1700000000000 txnFirstOffset=none coordinatorEpoch=-1 window=[0..0@5..5 ts=1700000000000]

A partition without producers prints nothing. With --json each producer
is a JSON object on a line of its own, with the same fields
("txnFirstOffset" null for none, "window" a list of objects with
"firstSequence", "lastSequence", "firstOffset", "lastOffset" and
"timestamp").

When the store has a transaction coordinator (DIR/transactions.db, made
by serve), the transactions it has open (begun and not yet completed:
Ongoing, PrepareCommit, PrepareAbort), whichever partitions they are on,
follow, one line each, in transactional id order:

  transactionalId=<id> producerId=<id> epoch=<epoch> state=<state> start=<ms> timeoutMs=<ms> partitions=[<topic>-<partition>, ...]

start is when the transaction began (Unix ms). With --json each is an
object with "transactionalId", "producerId", "epoch", "state",
"startMs", "timeoutMs" and "partitions" (a list of objects with "topic"
and "partition"). transactions.db is opened read-only; a process that
has it open (a running server) makes producers fail after a second.

producers opens the store as append does: it takes the store's lock
(waiting up to --lock-timeout), and opening the partition recovers it as
every open does: after an unclean shutdown a torn tail is cut and the
indexes rebuilt, snapshots above the log end are deleted, and the state
is loaded from the newest snapshot plus the log after it; producers the
store has taken no batch from for longer than --producer-expiry (judged
on the store's clock, the seen times kept in the snapshots; a producer
met in the log after the snapshot counts as seen now) are forgotten, as
every open forgets them.
What opening changed is said on stderr. The store is closed cleanly,
which saves a snapshot of the state at the log end. To look at a store
without changing anything, use check.

Exit status: 0 when the state was printed; 1 for bad flags, or a store
or partition that does not exist or cannot be opened, or a transactions.db
that cannot be read (damaged, or held by a running server).`,
		Example: `  logstore producers
  logstore producers --dir data --topic orders --partition 2 --json
  logstore producers --producer-expiry 0   # also the producers idle for over a day`,
		Args: inspectNoArgs("name the partition with --dir, --topic and --partition"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.bind(cmd)
			return runProducers(opts)
		},
	}
	cmd.Flags().SortFlags = false
	opts.addTo(cmd)
	f := cmd.Flags()
	f.BoolVar(&opts.json, "json", false, "print producers as JSON Lines")
	return cmd
}

func runProducers(o *producersOptions) (err error) {
	store, p, err := o.open(context.Background(), false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	o.reportRecovery(p)

	out := bufio.NewWriter(o.stdout)
	for _, e := range p.ProducerSnapshot().Producers {
		var line []byte
		if o.json {
			if line, err = json.Marshal(producerJSONOf(e)); err != nil {
				return err
			}
		} else {
			line = appendProducerText(nil, e)
		}
		out.Write(line) // a bufio.Writer keeps its first error for Flush
		out.WriteByte('\n')
	}
	if err := appendOpenTransactions(out, store.Dir(), o.json); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the producers: %w", err)
	}
	return nil
}

// producerLastSequence is the last sequence of the producer's newest window
// entry, or -1.
func producerLastSequence(e producerstate.Entry) int32 {
	if n := len(e.Batches); n > 0 {
		return e.Batches[n-1].LastSeq
	}
	return recordbatch.NoSequence
}

// appendProducerText appends the text line of e, without its newline.
func appendProducerText(dst []byte, e producerstate.Entry) []byte {
	txn := "none"
	if e.TxnFirstOffset >= 0 {
		txn = fmt.Sprint(e.TxnFirstOffset)
	}
	dst = fmt.Appendf(dst, "producerId=%d epoch=%d lastSequence=%d lastTimestamp=%d txnFirstOffset=%s coordinatorEpoch=%d window=[",
		e.ProducerID, e.Epoch, producerLastSequence(e), e.LastTimestamp, txn, e.CoordinatorEpoch)
	for i, m := range e.Batches {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = fmt.Appendf(dst, "%d..%d@%d..%d ts=%d", m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, m.Timestamp)
	}
	return append(dst, ']')
}

// producerJSONLine is the --json object of one producer.
type producerJSONLine struct {
	ProducerID       int64                     `json:"producerId"`
	Epoch            int16                     `json:"epoch"`
	LastSequence     int32                     `json:"lastSequence"`
	LastTimestamp    int64                     `json:"lastTimestamp"`
	TxnFirstOffset   *int64                    `json:"txnFirstOffset"`
	CoordinatorEpoch int32                     `json:"coordinatorEpoch"`
	Window           []producerJSONWindowEntry `json:"window"`
}

type producerJSONWindowEntry struct {
	FirstSequence int32 `json:"firstSequence"`
	LastSequence  int32 `json:"lastSequence"`
	FirstOffset   int64 `json:"firstOffset"`
	LastOffset    int64 `json:"lastOffset"`
	Timestamp     int64 `json:"timestamp"`
}

func producerJSONOf(e producerstate.Entry) producerJSONLine {
	j := producerJSONLine{
		ProducerID:       e.ProducerID,
		Epoch:            e.Epoch,
		LastSequence:     producerLastSequence(e),
		LastTimestamp:    e.LastTimestamp,
		CoordinatorEpoch: e.CoordinatorEpoch,
		Window:           make([]producerJSONWindowEntry, len(e.Batches)),
	}
	if e.TxnFirstOffset >= 0 {
		first := e.TxnFirstOffset
		j.TxnFirstOffset = &first
	}
	for i, m := range e.Batches {
		j.Window[i] = producerJSONWindowEntry{FirstSequence: m.FirstSeq, LastSequence: m.LastSeq, FirstOffset: m.FirstOffset, LastOffset: m.LastOffset, Timestamp: m.Timestamp}
	}
	return j
}

// producersTxnTimeout is how long producers waits for transactions.db
// while another process has it open.
const producersTxnTimeout = time.Second

// appendOpenTransactions writes the open transactions of the store's
// coordinator (DIR/transactions.db; nothing when there is none) to out,
// one line each.
func appendOpenTransactions(out *bufio.Writer, dir string, asJSON bool) error {
	if _, err := os.Stat(filepath.Join(dir, txncoord.FileName)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	txns, err := txncoord.Read(dir, producersTxnTimeout)
	if err != nil {
		return err
	}
	for _, tx := range txns {
		switch tx.State {
		case "Ongoing", "PrepareCommit", "PrepareAbort":
		default:
			continue
		}
		var line []byte
		if asJSON {
			if line, err = json.Marshal(transactionJSONOf(tx)); err != nil {
				return err
			}
		} else {
			line = appendTransactionText(nil, tx)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return nil
}

// appendTransactionText appends the text line of tx, without its
// newline.
func appendTransactionText(dst []byte, tx txncoord.Transaction) []byte {
	parts := make([]string, len(tx.Partitions))
	for i, tp := range tx.Partitions {
		parts[i] = fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
	}
	return fmt.Appendf(dst, "transactionalId=%s producerId=%d epoch=%d state=%s start=%d timeoutMs=%d partitions=[%s]",
		tx.TransactionalID, tx.ProducerID, tx.Epoch, tx.State, tx.StartMs(), tx.Timeout.Milliseconds(), strings.Join(parts, ", "))
}

// transactionJSONLine is the --json object of one open transaction.
type transactionJSONLine struct {
	TransactionalID string                     `json:"transactionalId"`
	ProducerID      int64                      `json:"producerId"`
	Epoch           int16                      `json:"epoch"`
	State           string                     `json:"state"`
	StartMs         int64                      `json:"startMs"`
	TimeoutMs       int64                      `json:"timeoutMs"`
	Partitions      []transactionJSONPartition `json:"partitions"`
}

type transactionJSONPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func transactionJSONOf(tx txncoord.Transaction) transactionJSONLine {
	j := transactionJSONLine{
		TransactionalID: tx.TransactionalID, ProducerID: tx.ProducerID, Epoch: tx.Epoch, State: tx.State,
		StartMs: tx.StartMs(), TimeoutMs: tx.Timeout.Milliseconds(),
		Partitions: make([]transactionJSONPartition, len(tx.Partitions)),
	}
	for i, tp := range tx.Partitions {
		j.Partitions[i] = transactionJSONPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	return j
}
