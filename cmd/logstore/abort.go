package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/inspect"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/txncoord"
)

// abortOptions holds the flags of `logstore abort`.
type abortOptions struct {
	partitionFlags
	producerID    int64
	producerIDSet bool
	force         bool
	json          bool

	commandOutput
}

func newAbortCommand() *cobra.Command {
	opts := &abortOptions{partitionFlags: newPartitionFlags()}
	cmd := &cobra.Command{
		Use:   "abort [--dir DIR] [--topic TOPIC] [--partition N] --producer-id ID [--force] [--json]",
		Short: "End a hanging transaction of a partition with an ABORT marker",
		Long: `abort ends the open transaction of producer --producer-id in a partition
by writing an ABORT marker for it, as Kafka's kafka-transactions.sh abort
does (KIP-664). A transaction no coordinator will ever end (written with
append --transactional, in a Kafka log directory adopted mid-transaction,
or of a producer id no transactional id in transactions.db maps to, which
serve warns of when it starts after a crash) holds the partition's last
stable offset back for ever, and read_committed consumers stop at it.
producers lists the open transactions (txnFirstOffset) of a partition.

The marker carries the producer's current epoch and a coordinator epoch
no lower than the producer's last one in the partition (0 before any),
and is durable when abort prints:

  aborted producerId=<id> epoch=<epoch> txnFirstOffset=<offset> markerOffset=<offset> lastStableOffset=<offset>

txnFirstOffset is where the aborted transaction began, markerOffset the
offset of the marker, lastStableOffset the partition's last stable offset
after it (the log end, unless another transaction is still open). With
--json it is one JSON object with the same fields.

abort refuses, writing nothing, when the producer has no open transaction
in the partition, and when transactions.db at the store root (read-only)
maps a transactional id to that producer id: serve's coordinator ends that
producer's transactions (committing or aborting one as its producer asks,
or at its timeout; after a crash, its next start aborts one it has no
record of, and fences the producer). --force aborts it anyway (skipping
transactions.db): a commit the coordinator decides later then finds the
transaction aborted.

abort opens the store as producers does: it takes the store's lock
(waiting up to --lock-timeout, so it fails while serve holds the store),
opening the partition recovers it (what was changed is said on stderr),
and the store is closed cleanly. The partition must exist; abort never
creates one.

Exit status: 0 when the marker was written; 1 for bad flags, a store or
partition that does not exist or cannot be opened, a producer without an
open transaction in the partition, a producer id transactions.db maps a
transactional id to (without --force), or a transactions.db that cannot be read.`,
		Example: `  logstore producers --topic orders --partition 2      # find txnFirstOffset
  logstore abort --topic orders --partition 2 --producer-id 31
  logstore abort --dir data --topic orders --producer-id 31 --json`,
		Args: inspectNoArgs("name the partition with --dir, --topic and --partition, the producer with --producer-id"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.producerIDSet = cmd.Flags().Changed("producer-id")
			opts.bind(cmd)
			return runAbort(opts)
		},
	}
	cmd.Flags().SortFlags = false
	opts.addTo(cmd)
	f := cmd.Flags()
	f.Int64Var(&opts.producerID, "producer-id", -1, "producer `ID` whose open transaction to abort (required)")
	f.BoolVar(&opts.force, "force", false, "abort even a transaction transactions.db holds open on the partition")
	f.BoolVar(&opts.json, "json", false, "print what was done as a JSON object")
	return cmd
}

// abortJSON is the --json object of abort.
type abortJSON struct {
	ProducerID       int64 `json:"producerId"`
	Epoch            int16 `json:"epoch"`
	TxnFirstOffset   int64 `json:"txnFirstOffset"`
	MarkerOffset     int64 `json:"markerOffset"`
	LastStableOffset int64 `json:"lastStableOffset"`
}

func runAbort(o *abortOptions) (err error) {
	switch {
	case !o.producerIDSet:
		return errors.New("--producer-id is required: the producer whose transaction to abort")
	case o.producerID < 0:
		return fmt.Errorf("--producer-id %d: must be 0 or more", o.producerID)
	}
	store, p, err := o.open(context.Background(), true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	o.reportRecovery(p)

	pid := o.producerID
	first, open := p.OpenTransaction(pid)
	if !open {
		return fmt.Errorf("producer id %d has no open transaction in partition %s: nothing to abort", pid, p.ID())
	}
	if !o.force {
		if err := checkNoCoordinatorTxn(store.Dir(), p.ID(), pid); err != nil {
			return err
		}
	}
	e, ok := producerEntry(p.ProducerSnapshot(), pid)
	if !ok { // OpenTransactions comes from the producer state
		return fmt.Errorf("producer id %d has an open transaction in partition %s but no producer state", pid, p.ID())
	}
	res, err := p.AppendMarker(pid, e.Epoch, false, max(e.CoordinatorEpoch, 0))
	if err != nil {
		return fmt.Errorf("writing the ABORT marker of producer id %d epoch %d: %w", pid, e.Epoch, err)
	}
	done := abortJSON{ProducerID: pid, Epoch: e.Epoch, TxnFirstOffset: first, MarkerOffset: res.BaseOffset, LastStableOffset: p.LastStableOffset()}
	var line []byte
	if o.json {
		if line, err = json.Marshal(done); err != nil {
			return err
		}
	} else {
		line = fmt.Appendf(nil, "aborted producerId=%d epoch=%d txnFirstOffset=%d markerOffset=%d lastStableOffset=%d",
			done.ProducerID, done.Epoch, done.TxnFirstOffset, done.MarkerOffset, done.LastStableOffset)
	}
	if _, err := o.stdout.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing the result (the marker is written): %w", err)
	}
	return nil
}

// checkNoCoordinatorTxn refuses when the store's transaction coordinator
// (DIR/transactions.db; none is no refusal) maps a transactional id to
// producer id pid: the coordinator ends that producer's transactions. It
// ends the ones it lists, and after a crash serve's next start aborts
// one it does not list and fences the producer, which an ABORT marker
// written here would not do (the producer could then take the old
// decision on file for its own).
func checkNoCoordinatorTxn(dir string, id logstore.PartitionID, pid int64) error {
	txns, err := inspect.CoordinatorTransactions(dir, producersTxnTimeout)
	if err != nil {
		return err
	}
	for _, tx := range txns {
		if tx.ProducerID == pid {
			return fmt.Errorf("the transaction of producer id %d in partition %s is transactional id %q's (%s in %s): its coordinator (serve) will end it; --force aborts it anyway",
				pid, id, tx.TransactionalID, tx.State, txncoord.FileName)
		}
	}
	return nil
}

// producerEntry is the entry of producer id pid in snap.
func producerEntry(snap producerstate.Snapshot, pid int64) (producerstate.Entry, bool) {
	for _, e := range snap.Producers {
		if e.ProducerID == pid {
			return e, true
		}
	}
	return producerstate.Entry{}, false
}
