package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnWorkload is N transactions produced by transactional kgo clients
// (TransactionalID, BeginTransaction, EndTransaction; no consumer group)
// over a few partitions. Transaction t has between 1 and 2×Partitions
// records (the seeded plan's choice, or PerTxn), record j of it going to
// partition (t+j) mod Partitions, and commits or aborts as the plan says.
// Record values name their transaction and index ("<prefix>-t<t>-r<j>"),
// so a verifier knows what must be committed.
//
// The transactions are shared round robin among Producers clients, each
// with its own transactional id, each running its transactions one after
// the other. A transaction whose end fails is retried as kgo documents
// (EndTransaction with TryAbort), and when that fails too the client is
// closed and a new one with the same transactional id takes over (its
// InitProducerId fences the old epoch and aborts what it left open). At
// the end a producer whose last transaction did not end cleanly sends an
// InitProducerId of its own, so no transaction is left open.
type TxnWorkload struct {
	Brokers      []string
	Topic        string
	Partitions   int32 // 0 is 3
	Transactions int
	// PerTxn fixes the records of every transaction; 0 lets the seeded
	// plan pick between 1 and 2×Partitions.
	PerTxn int
	// Producers is the number of transactional clients; 0 is 1.
	Producers int
	// Seed seeds the plan (records per transaction, commit or abort).
	Seed uint64
	// Commit, when set, replaces the seeded decision: transaction t
	// commits when it returns true. The seeded plan commits about two
	// transactions in three.
	Commit func(t int) bool
	// Prefix starts every value and transactional id; "" is "txn".
	Prefix string
	// CreateTopic creates the topic first (an existing one is fine).
	CreateTopic  bool
	TopicConfigs map[string]string
	// Before, when set, is called before transaction t begins, and
	// BeforeEnd after its records are flushed and before
	// EndTransaction, with the client producing it. They must return
	// promptly or honour ctx.
	Before    func(ctx context.Context, cl *kgo.Client, t int)
	BeforeEnd func(ctx context.Context, cl *kgo.Client, t int)
	// Opts are more kgo options of the producing clients, applied after
	// the workload's own.
	Opts []kgo.Opt
}

// TxnOutcome is what a transactional client knows of how a transaction
// ended.
type TxnOutcome int

const (
	// TxnCommitted: EndTransaction(TryCommit) succeeded.
	TxnCommitted TxnOutcome = iota
	// TxnAborted: the client ended it by an abort (planned, or because
	// a record failed), or never asked for a commit; the server can only
	// have aborted it.
	TxnAborted
	// TxnUncertain: a commit was asked for and its answer never came
	// (the EndTxn answer lost, the server gone): the server may have
	// committed or aborted it, and must have done the same in every
	// partition.
	TxnUncertain
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	case TxnUncertain:
		return "uncertain"
	}
	return fmt.Sprintf("TxnOutcome(%d)", int(o))
}

// Txn is one transaction of a TxnWorkload and how it ended.
type Txn struct {
	Index           int
	TransactionalID string
	Planned         bool // the plan: commit (true) or abort
	Outcome         TxnOutcome
	// Records are the transaction's records in production order; Offset
	// is what kgo acknowledged (-1 when not acknowledged).
	Records []Ack
	// Err says why the transaction did not end as planned, nil when it
	// did.
	Err error
}

// TxnResult is a TxnWorkload's outcome.
type TxnResult struct {
	Topic      string
	Partitions int32
	Txns       []Txn
	// Committed, Aborted and Uncertain count the outcomes.
	Committed, Aborted, Uncertain int
	// Restarts counts the clients replaced after a failed end.
	Restarts int
	// Err is an error that stopped a producer before its transactions
	// were all done, or left a transaction possibly open at the end.
	Err error
}

// TxnValue is the value of record j of transaction t.
func (w *TxnWorkload) TxnValue(t, j int) string {
	return fmt.Sprintf("%s-t%06d-r%03d", w.prefix(), t, j)
}

func (w *TxnWorkload) prefix() string {
	if w.Prefix == "" {
		return "txn"
	}
	return w.Prefix
}

// TransactionalID is the transactional id of producer k.
func (w *TxnWorkload) TransactionalID(k int) string {
	return fmt.Sprintf("%s-producer-%d", w.prefix(), k)
}

// Plan returns the transactions as the plan has them, before any ran:
// their records (values and partitions) and whether each is to commit.
func (w *TxnWorkload) Plan() []Txn {
	parts := w.partitions()
	producers := max(w.Producers, 1)
	rng := rand.New(rand.NewPCG(w.Seed, 0x7478))
	txns := make([]Txn, w.Transactions)
	for t := range txns {
		n := w.PerTxn
		if n == 0 {
			n = 1 + rng.IntN(2*int(parts))
		}
		commit := rng.IntN(3) != 0
		if w.Commit != nil {
			commit = w.Commit(t)
		}
		recs := make([]Ack, n)
		for j := range recs {
			recs[j] = Ack{Value: w.TxnValue(t, j), Partition: int32((t + j) % int(parts)), Offset: -1, ProducerID: -1, Epoch: -1}
		}
		txns[t] = Txn{Index: t, TransactionalID: w.TransactionalID(t % producers), Planned: commit, Records: recs}
	}
	return txns
}

func (w *TxnWorkload) partitions() int32 {
	if w.Partitions == 0 {
		return 3
	}
	return w.Partitions
}

// Run runs the transactions and returns how each ended. It returns an
// error only when the topic cannot be created; everything else is in the
// result.
func (w *TxnWorkload) Run(ctx context.Context) (*TxnResult, error) {
	parts := w.partitions()
	res := &TxnResult{Topic: w.Topic, Partitions: parts, Txns: w.Plan()}
	if w.CreateTopic {
		if err := CreateTopic(ctx, w.Brokers, w.Topic, parts, w.TopicConfigs); err != nil {
			return nil, err
		}
	}
	producers := max(w.Producers, 1)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for k := range producers {
		wg.Go(func() {
			restarts, err := w.runProducer(ctx, k, producers, res.Txns)
			mu.Lock()
			defer mu.Unlock()
			res.Restarts += restarts
			if err != nil && res.Err == nil {
				res.Err = err
			}
		})
	}
	wg.Wait()
	for _, t := range res.Txns {
		switch t.Outcome {
		case TxnCommitted:
			res.Committed++
		case TxnAborted:
			res.Aborted++
		case TxnUncertain:
			res.Uncertain++
		}
	}
	return res, nil
}

// txnClient makes producer k's client.
func (w *TxnWorkload) txnClient(k int) (*kgo.Client, error) {
	opts := append(ClientOpts(w.Brokers...),
		kgo.TransactionalID(w.TransactionalID(k)),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(time.Second),
		kgo.DefaultProduceTopic(w.Topic),
		kgo.StopProducerOnDataLossDetected(),
	)
	cl, err := kgo.NewClient(append(opts, w.Opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: transactional client %s: %w", w.TransactionalID(k), err)
	}
	return cl, nil
}

// runProducer runs producer k's share of txns (t ≡ k mod producers).
func (w *TxnWorkload) runProducer(ctx context.Context, k, producers int, txns []Txn) (restarts int, err error) {
	cl, err := w.txnClient(k)
	if err != nil {
		return 0, err
	}
	defer func() { cl.Close() }()
	clean := true // the client's last transaction ended as kgo answered
	for t := k; t < len(txns); t += producers {
		if ctx.Err() != nil {
			// Not begun: the transaction stays as planned but ends
			// as an abort nobody asked the server for.
			for ; t < len(txns); t += producers {
				txns[t].Outcome, txns[t].Err = TxnAborted, errors.New("never begun: the run ended first")
			}
			break
		}
		if !clean {
			// The last end failed twice: a new client, whose
			// InitProducerId fences the old epoch and aborts what
			// it left open.
			cl.Close()
			if cl, err = w.txnClient(k); err != nil {
				return restarts, err
			}
			restarts++
		}
		if w.Before != nil {
			w.Before(ctx, cl, t)
		}
		clean = w.runTxn(ctx, cl, &txns[t])
	}
	if !clean {
		cl.Close()
		if err := w.seal(ctx, k); err != nil {
			return restarts, err
		}
	}
	return restarts, nil
}

// runTxn runs one transaction with cl; it reports whether the client is
// still usable (its end was answered).
func (w *TxnWorkload) runTxn(ctx context.Context, cl *kgo.Client, tx *Txn) bool {
	if err := cl.BeginTransaction(); err != nil {
		tx.Outcome, tx.Err = TxnAborted, fmt.Errorf("begin: %w", err)
		return false
	}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		perr  error
	)
	for j := range tx.Records {
		a := &tx.Records[j]
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: w.Topic, Partition: a.Partition, Value: []byte(a.Value)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				a.Err = err
				errMu.Lock()
				if perr == nil {
					perr = fmt.Errorf("record %s: %w", a.Value, err)
				}
				errMu.Unlock()
				return
			}
			a.Offset, a.ProducerID, a.Epoch = r.Offset, r.ProducerID, r.ProducerEpoch
		})
	}
	if err := cl.Flush(ctx); err != nil {
		errMu.Lock()
		if perr == nil {
			perr = fmt.Errorf("flush: %w", err)
		}
		errMu.Unlock()
	}
	wg.Wait()
	commit := tx.Planned && perr == nil
	if perr != nil {
		// kgo: abort the buffered records before ending in an abort.
		if err := cl.AbortBufferedRecords(ctx); err != nil {
			perr = errors.Join(perr, fmt.Errorf("abort buffered records: %w", err))
		}
		tx.Err = perr
	}
	if w.BeforeEnd != nil {
		w.BeforeEnd(ctx, cl, tx.Index)
	}
	err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	switch {
	case err == nil && commit:
		tx.Outcome = TxnCommitted
		return true
	case err == nil:
		tx.Outcome = TxnAborted
		return true
	}
	if commit {
		tx.Outcome = TxnUncertain
	} else {
		tx.Outcome = TxnAborted
	}
	tx.Err = errors.Join(tx.Err, fmt.Errorf("end (commit %v): %w", commit, err))
	// kgo's documented retry after a failed end: TryAbort, which
	// reloads the producer id (InitProducerId at the current epoch,
	// which aborts what is still open) when the first end's outcome is
	// unknown.
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		tx.Err = errors.Join(tx.Err, fmt.Errorf("retried end (abort): %w", err))
		return false
	}
	return true
}

// seal ends whatever producer k's transactional id left open: an
// InitProducerId of a client of its own (the coordinator bumps the epoch
// and aborts an open transaction, or answers CONCURRENT_TRANSACTIONS
// while a decision is being completed), retried until answered or ctx
// ends.
func (w *TxnWorkload) seal(ctx context.Context, k int) error {
	cl, err := kgo.NewClient(ClientOpts(w.Brokers...)...)
	if err != nil {
		return fmt.Errorf("kafkatest: seal %s: %w", w.TransactionalID(k), err)
	}
	defer cl.Close()
	id := w.TransactionalID(k)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		// FindCoordinator first: kgo routes InitProducerId to the
		// transaction coordinator itself.
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			return nil
		}
		var ke *kerr.Error
		if ctx.Err() != nil || errors.As(err, &ke) && !ke.Retriable && ke != kerr.ConcurrentTransactions {
			return fmt.Errorf("kafkatest: seal %s: %w", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
