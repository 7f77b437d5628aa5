package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/internal/inspect"
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

	var out []byte
	for _, e := range p.ProducerSnapshot().Producers {
		j := inspect.ProducerOf(e)
		if out, err = appendLine(out, &j, j.AppendText, o.json); err != nil {
			return err
		}
	}
	txns, err := inspect.CoordinatorTransactions(store.Dir(), producersTxnTimeout)
	if err != nil {
		return err
	}
	for _, tx := range txns {
		if j := inspect.TransactionOf(tx); j.Open() {
			if out, err = appendLine(out, &j, j.AppendText, o.json); err != nil {
				return err
			}
		}
	}
	if _, err := o.stdout.Write(out); err != nil {
		return fmt.Errorf("writing the producers: %w", err)
	}
	return nil
}

// appendLine appends v's line: its JSON object, or its text.
func appendLine(dst []byte, v any, text func([]byte) []byte, asJSON bool) ([]byte, error) {
	if !asJSON {
		return append(text(dst), '\n'), nil
	}
	b, err := json.Marshal(v)
	return append(append(dst, b...), '\n'), err
}

// producersTxnTimeout is how long producers waits for transactions.db
// while another process has it open.
const producersTxnTimeout = time.Second
