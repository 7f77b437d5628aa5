package txncoord

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileName is the coordinator's file, at the root of the store
// directory (an append-only record file; see the package doc).
const FileName = "transactions.db"

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Markers writes the markers of the coordinator's decisions into the
// partitions, and tells it what transactions the partitions hold open;
// the server's is StoreMarkers(store).
type Markers interface {
	// WriteMarkers writes the COMMIT (d.Commit) or ABORT marker of d to
	// each partition of d.Partitions where it is due (see Decision) and
	// returns once all of them are written; sync then returns once all
	// of them are durable, and may be called again after it failed. On
	// an error (some markers may not be written) it has waited for the
	// ones written, and sync is nil.
	WriteMarkers(d Decision) (sync func() error, err error)
	// TxnFirstOffsets returns, for each of tps, the first offset of
	// producerID's open transaction there, -1 when it has none open
	// (or the partition holds no data a transaction could leave, as the
	// group offsets partition).
	TxnFirstOffsets(tps []TopicPartition, producerID int64) ([]int64, error)
	// OpenTransactions lists the transactions open in every partition
	// of the store: the ones Open checks against its records after a
	// crash.
	OpenTransactions() ([]OpenTransaction, error)
}

// Decision is what the markers of one transaction's decision say.
type Decision struct {
	Partitions []TopicPartition
	// FirstOffsets, when not nil, holds for each partition the first
	// offset of the transaction's data there when it was decided (-1:
	// none). A marker is then due only where the producer's open
	// transaction still begins there, or, for -1, where it has none
	// open: where the transaction open now is a later one (whose
	// AddPartitions a crash lost), the marker would end the wrong
	// transaction, and where none is open at a first offset it had,
	// the marker is already written. nil (a decision recorded before
	// first offsets were kept): a marker is due in every partition.
	FirstOffsets     []int64
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
}

// Due reports whether the marker is due in Partitions[i], whose
// producer's open transaction begins at open (-1: none is open).
func (d *Decision) Due(i int, open int64) bool {
	if d.FirstOffsets == nil {
		return true
	}
	return open == d.FirstOffsets[i]
}

// OpenTransaction is a transaction a partition holds open: producer id
// ProducerID's data from FirstOffset on, with no marker after it.
type OpenTransaction struct {
	TP          TopicPartition
	ProducerID  int64
	FirstOffset int64
}

// ProducerIDs hands out producer ids never handed out before
// (*catalog.Catalog satisfies it).
type ProducerIDs interface {
	NewProducerID() (int64, error)
}

// Defaults of Config, Kafka's.
const (
	DefaultMaxTimeout    = 15 * time.Minute   // transaction.max.timeout.ms
	DefaultCheckInterval = 10 * time.Second   // transaction.abort.timed.out.transaction.cleanup.interval.ms
	DefaultIDExpiration  = 7 * 24 * time.Hour // transactional.id.expiration.ms
)

// Config configures a Coordinator. The zero value is Kafka's defaults.
type Config struct {
	// MaxTimeout is the longest transaction timeout a producer may ask
	// for (Kafka's transaction.max.timeout.ms); 0 means 15 minutes.
	MaxTimeout time.Duration
	// CheckInterval is how often ongoing transactions are checked for
	// their timeout, and idle transactional ids for their expiration;
	// 0 means 10 seconds.
	CheckInterval time.Duration
	// IDExpiration is how long a transactional id may go without a
	// write of its state, while no transaction of it is ongoing or
	// being decided, before it expires (Kafka's
	// transactional.id.expiration.ms): it is then forgotten, and comes
	// back, if ever, with a new producer id. 0 means 7 days; a
	// negative value, never.
	IDExpiration time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger gets what the coordinator decides on its own (timeouts)
	// and the failures of writes nobody waits for; nil discards.
	Logger *slog.Logger
	// Events, when set, is called for each Event (a metrics hook). It
	// must not block or call the Coordinator.
	Events func(Event)
	// OnCommit, when set, is called after every commit of
	// transactions.db (Open's, which writes the file anew, each commit
	// that carries writes, and each compaction after one) with its
	// result: the crash tests take a crash point there. It must not
	// call the Coordinator.
	OnCommit func(error)
	// CompactBytes: once transactions.db is larger than this and twice
	// the size of its live records, the commit that made it so is
	// followed by a compaction; 0 means 1 MiB.
	CompactBytes int64
}

// Event is something the coordinator reports through Config.Events.
type Event int

const (
	// EventBegun: a transaction began (its first partition added).
	EventBegun Event = iota + 1
	// EventCommitted: a transaction's COMMIT markers are all written.
	EventCommitted
	// EventAborted: a transaction's ABORT markers are all written,
	// whoever decided the abort (EndTxn, InitProducerID fencing an
	// ongoing transaction, or its timeout).
	EventAborted
	// EventTimedOut: a transaction passed its timeout and the
	// coordinator's decision to abort it is durable (EventAborted
	// follows once its markers are written); once per transaction, even
	// when a failed write makes the scan try again.
	EventTimedOut
	// EventExpired: a transactional id was idle past Config.IDExpiration
	// and is forgotten (its tombstone is durable).
	EventExpired
)

func (e Event) String() string {
	switch e {
	case EventBegun:
		return "begun"
	case EventCommitted:
		return "committed"
	case EventAborted:
		return "aborted"
	case EventTimedOut:
		return "timed out"
	case EventExpired:
		return "expired"
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// noEpoch and noProducerID are Kafka's NO_PRODUCER_EPOCH and
// NO_PRODUCER_ID.
const (
	noEpoch      = -1
	noProducerID = -1
)

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: from
// this epoch on, InitProducerID hands out a new producer id (the last
// epoch, 32767, is kept for fencing an ongoing transaction).
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txn is the coordinator's view of one transactional id.
type txn struct {
	id string
	// rec is the state as persisted (or, for a lazy Complete write,
	// queued). Guarded by Coordinator.mu.
	rec record
	// pending: a call is changing the state (persisting a transition,
	// writing markers); others get ErrConcurrentTransactions. Guarded
	// by Coordinator.mu.
	pending bool
	// fresh: created by an InitProducerID not yet persisted; invisible
	// to every other call. Guarded by Coordinator.mu.
	fresh bool
	// syncing is the decision whose markers are written and answered
	// but not known durable yet (nil when none): until they are, no
	// record of the id after that decision's PrepareX may reach the
	// file (see finish). Guarded by Coordinator.mu.
	syncing *markerSync
	// produce is held shared by BeginProduce until release, and
	// exclusively while markers are written, so no admitted batch can
	// land after its transaction's marker. Lock order: produce, then
	// Coordinator.mu.
	produce sync.RWMutex
}

// markerSync is the background wait for a decision's markers.
type markerSync struct {
	sync func() error // Markers.WriteMarkers's; called again after a failure
	// done is closed once the background wait ended: with err nil, the
	// id's record was queued after it (see finish).
	done chan struct{}
	err  error
}

// Coordinator is the transaction coordinator of a store. It is safe for
// concurrent use.
//
// Locking. mu guards txns, closed, the registration of calls in ops,
// and the rec, pending, fresh and syncing of every txn. It is held for
// steps in memory only. It is never held while waiting for a write of
// transactions.db, a marker write or ProducerIDs; a lazy write is
// queued under it, so that an id's records reach the committer in the
// order their states were taken. No function returns with mu held. A
// function whose name ends in Locked requires its caller to hold mu,
// and every function that requires it is so named (but txn.describe,
// which Read also calls on txns of its own). A txn's produce lock is
// taken before mu, never while holding it; BeginProduce returns holding
// it shared, as the admission its release func ends.
type Coordinator struct {
	path    string
	ids     ProducerIDs
	markers Markers
	cfg     Config
	log     *slog.Logger
	epoch   int32 // the coordinator epoch of this Open
	// opening: Open is finishing decided transactions (their Complete
	// writes are durable, not lazy). Only Open's goroutine runs then.
	opening bool
	w       *committer

	mu     sync.Mutex
	txns   map[string]*txn
	closed bool
	ops    sync.WaitGroup

	stop     chan struct{}
	scanDone chan struct{}
}

// Open opens or creates DIR/transactions.db (converting a bbolt file of
// the previous format), increments the coordinator epoch, writes the
// file anew with its live state, and finishes what a crash left decided: a transaction in
// PrepareCommit or PrepareAbort gets its markers written, then its
// Complete state, before Open returns. Ongoing ones stay ongoing (their
// timeout aborts them later). It starts the timeout scan.
func Open(dir string, ids ProducerIDs, markers Markers, cfg Config) (*Coordinator, error) {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.IDExpiration == 0 {
		cfg.IDExpiration = DefaultIDExpiration
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.CompactBytes <= 0 {
		cfg.CompactBytes = defaultCompactBytes
	}
	path := filepath.Join(dir, FileName)
	lf, res, err := openLog(path, cfg.CompactBytes, max(cfg.Now().UnixMilli(), 0), log)
	if err != nil {
		return nil, fmt.Errorf("txncoord: open %s: %w", path, err)
	}
	c := &Coordinator{
		path: path, ids: ids, markers: markers, cfg: cfg, log: log,
		epoch: res.coordinatorEpoch, txns: map[string]*txn{},
		stop: make(chan struct{}), scanDone: make(chan struct{}),
	}
	if cfg.OnCommit != nil {
		cfg.OnCommit(nil)
	}
	c.w = newCommitter(lf, path, func(err error) {
		c.log.Error("txncoord: a write no caller waits for failed", "err", err)
	}, cfg.OnCommit)
	for id, r := range res.records {
		c.txns[id] = &txn{id: id, rec: r}
	}
	// Finish the decisions a crash left half done, in id order.
	c.opening = true
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if !t.rec.state.prepared() {
			continue
		}
		if err := c.finish(t, t.rec, true, nil); err != nil {
			c.w.close()
			return nil, errors.Join(fmt.Errorf("txncoord: open %s: finishing the decided transaction of %q: %w", path, id, err), lf.close())
		}
		c.log.Info("txncoord: finished a decided transaction", "transactional_id", id, "state", t.rec.state)
	}
	if !res.closed {
		if err := c.reconcile(); err != nil {
			c.w.close()
			return nil, errors.Join(fmt.Errorf("txncoord: open %s: %w", path, err), lf.close())
		}
	}
	c.opening = false
	go c.scan()
	return c, nil
}

// reconcile runs in an Open that follows a crash (the file does not end
// with the close record): AddPartitions is a lazy write, so a crash can
// lose it while the partitions keep the data the producer wrote after
// it. Each transaction a partition holds open whose producer id is a
// transactional id's current one, and which that id's record does not
// list (the id is not Ongoing, or Ongoing without that partition), is
// aborted together with the id's ongoing transaction, if any, and its
// producer fenced (fenceAbort). Its EndTxn was never answered (the
// decision's write would have carried the lost AddPartitions with it),
// so no answer is contradicted; and the epoch bump makes that EndTxn
// fail rather than pass for a retry of the decision the file shows. A
// transaction of a producer id no transactional id maps to is not the
// coordinator's (written by `logstore append`, or in a Kafka directory
// adopted as it was): it is logged and left as it is.
func (c *Coordinator) reconcile() error {
	open, err := c.markers.OpenTransactions()
	if err != nil {
		return fmt.Errorf("listing the partitions' open transactions: %w", err)
	}
	byProducer := make(map[int64]*txn, len(c.txns))
	for _, t := range c.txns {
		byProducer[t.rec.producerID] = t
	}
	unknown := map[string][]TopicPartition{}
	for _, o := range open {
		t := byProducer[o.ProducerID]
		switch {
		case t == nil:
			c.log.Warn("txncoord: a partition holds a transaction of a producer id no transactional id maps to open; it holds the partition's last stable offset back until it ends; end it with logstore abort",
				"topic", o.TP.Topic, "partition", o.TP.Partition, "producer_id", o.ProducerID, "first_offset", o.FirstOffset)
		case t.rec.state != stateOngoing || !t.rec.has(o.TP):
			unknown[t.id] = append(unknown[t.id], o.TP)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(unknown)) {
		t := c.txns[id]
		prep := fenceAbort(t.rec)
		if t.rec.state != stateOngoing {
			prep.partitions, prep.startMs = nil, max(c.nowMs(), 0)
		}
		for _, tp := range unknown[id] {
			prep.add(tp)
		}
		c.log.Warn("txncoord: aborting a transaction whose partitions a crash left unrecorded, and fencing its producer",
			"transactional_id", id, "producer_id", prep.producerID, "epoch", prep.epoch, "unrecorded", unknown[id])
		if err := c.finish(t, prep, false, nil); err != nil {
			return fmt.Errorf("aborting the transaction of %q: %w", id, err)
		}
	}
	return nil
}

// CoordinatorEpoch is the coordinator epoch of this Open, written in
// every marker.
func (c *Coordinator) CoordinatorEpoch() int32 { return c.epoch }

// Path is the coordinator's file.
func (c *Coordinator) Path() string { return c.path }

// Close stops the timeout scan, waits for the calls in progress, and
// closes transactions.db. Later calls return ErrClosed.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.scanDone
	c.ops.Wait()
	c.w.close()
	var mark error
	if unsynced := c.unsynced(); len(unsynced) > 0 {
		// Their records after the decision were never queued: the
		// next Open must look for their data (no close record).
		c.log.Error("txncoord: closing with decisions whose markers are not durable; the next Open finishes them", "transactional_ids", unsynced)
	} else {
		mark = c.w.log.markClosed()
	}
	if err := errors.Join(mark, c.w.log.close()); err != nil {
		return fmt.Errorf("txncoord: close %s: %w", c.path, err)
	}
	return nil
}

// unsynced lists the ids whose last decision's markers are not known
// durable (their background wait failed).
func (c *Coordinator) unsynced() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, t := range c.txns {
		if t.syncing != nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// enterLocked registers a call in progress; it fails once closed.
func (c *Coordinator) enterLocked(op string) error {
	if c.closed {
		return fmt.Errorf("txncoord: %s: %w", op, ErrClosed)
	}
	c.ops.Add(1)
	return nil
}

func (c *Coordinator) event(e Event) {
	if c.cfg.Events != nil {
		c.cfg.Events(e)
	}
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// stamp sets r's last update time to now, before r is written.
func (c *Coordinator) stamp(r *record) { r.lastUpdateMs = max(c.nowMs(), 0) }

// lookupLocked returns the txn of id visible to calls, nil when there
// is none.
func (c *Coordinator) lookupLocked(id string) *txn {
	t := c.txns[id]
	if t == nil || t.fresh {
		return nil
	}
	return t
}

// settle ends a transition of t: it clears pending and, when ok, sets
// rec. The caller does not hold c.mu.
func (c *Coordinator) settle(t *txn, rec *record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec != nil {
		t.rec = *rec
		t.fresh = false
	}
	t.pending = false
}

// InitProducerID maps txnID to a producer id and epoch, as Kafka's
// handleInitProducerId: a new id gets a new producer id at epoch 0;
// otherwise the epoch is bumped (fencing the previous producer), and
// from epoch 32766 on a new producer id at epoch 0 is handed out. An
// ongoing transaction is aborted first: its epoch is bumped, its ABORT
// markers are written with that epoch, then the epoch is bumped again
// for the answer (Kafka answers CONCURRENT_TRANSACTIONS after the abort
// and bumps again on the retry; markers here are written before the
// answer, so one call does both).
//
// producerID and epoch are the ones the producer has (KIP-360,
// InitProducerId v3+), or -1 and -1. Given, they must be the current
// ones (or, after a bump whose answer was lost, the previous epoch, or
// the previous producer id at an exhausted epoch) or the answer is
// ErrProducerFenced. timeout must be above 0 and at most
// Config.MaxTimeout, or ErrInvalidTimeout. The new mapping is durable
// before InitProducerID returns.
func (c *Coordinator) InitProducerID(txnID string, timeout time.Duration, producerID int64, epoch int16) (int64, int16, error) {
	if txnID == "" {
		return 0, 0, ErrInvalidRequest
	}
	if timeout <= 0 || timeout > c.cfg.MaxTimeout || timeout.Milliseconds() <= 0 {
		return 0, 0, fmt.Errorf("%w: %v (the maximum is %v)", ErrInvalidTimeout, timeout, c.cfg.MaxTimeout)
	}
	expected := producerID != noProducerID
	c.mu.Lock()
	if err := c.enterLocked("init producer id"); err != nil {
		c.mu.Unlock()
		return 0, 0, err
	}
	defer c.ops.Done()
	t := c.txns[txnID]
	if t != nil && t.pending {
		c.mu.Unlock()
		return 0, 0, ErrConcurrentTransactions
	}
	if t == nil {
		t = &txn{id: txnID, fresh: true, pending: true, rec: record{
			state: stateEmpty, producerID: noProducerID, epoch: noEpoch,
			prevProducerID: noProducerID, lastEpoch: noEpoch, startMs: -1, lastUpdateMs: -1,
		}}
		c.txns[txnID] = t
		c.mu.Unlock()
		pid, err := c.ids.NewProducerID()
		c.mu.Lock()
		if err != nil {
			delete(c.txns, txnID)
			c.mu.Unlock()
			return 0, 0, fmt.Errorf("txncoord: init producer id: %w", err)
		}
		t.rec.producerID = pid
	}
	t.pending = true
	r := t.rec.clone()
	c.mu.Unlock()

	pid, ep, err := c.initPending(t, r, timeout, expected, producerID, epoch)
	if err != nil {
		c.mu.Lock()
		if t.fresh {
			delete(c.txns, txnID)
		}
		t.pending = false
		c.mu.Unlock()
		return 0, 0, err
	}
	return pid, ep, nil
}

// fenceAbort is the decision that aborts r's ongoing transaction and
// fences its producer: PrepareAbort at the epoch bumped (Kafka's
// prepareFenceProducerEpoch; at the last epoch it stays), so the
// producer's EndTxn gets ErrProducerFenced and its produces
// ErrInvalidProducerEpoch, and the markers written with the new epoch
// fence it in the partitions too.
func fenceAbort(r record) record {
	next := r.clone()
	if next.epoch < math.MaxInt16 {
		next.epoch++
	}
	next.lastEpoch = noEpoch
	next.state = statePrepareAbort
	return next
}

// initPending is InitProducerID of t from r, its record: t is pending,
// marked so by the caller, who does not hold c.mu.
func (c *Coordinator) initPending(t *txn, r record, timeout time.Duration, expected bool, producerID int64, epoch int16) (int64, int16, error) {
	// Kafka's isValidProducerId.
	if expected && !(r.epoch == noEpoch || producerID == r.producerID ||
		(producerID == r.prevProducerID && epochExhausted(epoch))) {
		return 0, 0, fmt.Errorf("%w: transactional id %q maps to producer id %d epoch %d, not producer id %d epoch %d", ErrProducerFenced, t.id, r.producerID, r.epoch, producerID, epoch)
	}
	switch r.state {
	case statePrepareCommit, statePrepareAbort:
		return 0, 0, ErrConcurrentTransactions
	case stateOngoing:
		// Fence the producer and abort its transaction with the bumped
		// epoch (Kafka's prepareFenceProducerEpoch).
		if err := c.finish(t, fenceAbort(r), false, nil); err != nil {
			return 0, 0, err
		}
		c.mu.Lock()
		r = t.rec.clone()
		c.mu.Unlock()
	}
	if err := checkTransition(t.id, r.state, stateEmpty); err != nil {
		return 0, 0, err
	}
	next := r.clone()
	next.state, next.partitions, next.startMs = stateEmpty, nil, -1
	next.timeoutMs = int32(min(timeout.Milliseconds(), math.MaxInt32))
	if epochExhausted(r.epoch) && (!expected || epoch == r.epoch) {
		// Kafka's prepareProducerIdRotation.
		pid, err := c.ids.NewProducerID()
		if err != nil {
			return 0, 0, fmt.Errorf("txncoord: init producer id: %w", err)
		}
		next.prevProducerID, next.producerID, next.epoch = r.producerID, pid, 0
		next.lastEpoch = noEpoch
		if expected {
			next.lastEpoch = r.epoch
		}
	} else {
		// Kafka's prepareIncrementProducerEpoch.
		switch {
		case !expected:
			next.epoch, next.lastEpoch = r.epoch+1, noEpoch
		case r.epoch == noEpoch || epoch == r.epoch:
			next.epoch, next.lastEpoch = r.epoch+1, r.epoch
		case epoch == r.lastEpoch:
			// A retry of a bump whose answer was lost: the same epoch.
		default:
			return 0, 0, fmt.Errorf("%w: transactional id %q is at epoch %d, the producer has %d", ErrProducerFenced, t.id, r.epoch, epoch)
		}
	}
	c.stamp(&next)
	if err := c.writeDurable(t, next); err != nil {
		return 0, 0, err
	}
	c.settle(t, &next)
	return next.producerID, next.epoch, nil
}

// withProducer runs a call of the producer (producerID, epoch) of
// txnID, checked as Kafka checks AddPartitions and EndTxn: the
// coordinator is entered, the id known, the producer id its current one
// (else ErrInvalidProducerIDMapping) and the epoch its current one
// (else ErrProducerFenced). Then locked runs with c.mu held, on the
// id's txn. It returns an error, or what the call does once c.mu is
// released (nil: nothing more), which withProducer runs and returns.
// The call stays registered in c.ops until withProducer returns.
func (c *Coordinator) withProducer(op, txnID string, producerID int64, epoch int16, locked func(t *txn) (then func() error, err error)) error {
	c.mu.Lock()
	if err := c.enterLocked(op); err != nil {
		c.mu.Unlock()
		return err
	}
	defer c.ops.Done()
	t := c.lookupLocked(txnID)
	var err error
	switch {
	case t == nil:
		err = fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, txnID)
	case producerID != t.rec.producerID:
		err = fmt.Errorf("%w: transactional id %q maps to producer id %d, not %d", ErrInvalidProducerIDMapping, txnID, t.rec.producerID, producerID)
	case epoch != t.rec.epoch:
		err = fmt.Errorf("%w: transactional id %q is at epoch %d, the producer has %d", ErrProducerFenced, txnID, t.rec.epoch, epoch)
	}
	var then func() error
	if err == nil {
		then, err = locked(t)
	}
	c.mu.Unlock()
	if err != nil || then == nil {
		return err
	}
	return then()
}

// AddPartitions adds tps, partitions of the store, to the transaction
// of txnID, as Kafka's handleAddPartitionsToTransaction: the
// transaction begins (Ongoing) with its first partition. Partitions
// already in the ongoing transaction are a success with no write. The
// write is lazy: AddPartitions returns before it is durable (it is
// committed with the transaction's decision at the latest). A crash that
// loses it leaves the transaction's data in partitions the file does
// not list, and Open aborts it (see the package doc, Durability).
func (c *Coordinator) AddPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition) error {
	return c.addPartitions(txnID, producerID, epoch, tps, false)
}

// AddPartitionsDurable is AddPartitions for partitions whose
// transactional data Markers.OpenTransactions does not list (the group
// offsets of a transaction, kept by the group coordinator): it returns
// once the partitions are durable, so after a crash the file lists
// every such partition of a transaction.
func (c *Coordinator) AddPartitionsDurable(txnID string, producerID int64, epoch int16, tps []TopicPartition) error {
	return c.addPartitions(txnID, producerID, epoch, tps, true)
}

func (c *Coordinator) addPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition, durable bool) error {
	if txnID == "" {
		return ErrInvalidRequest
	}
	return c.withProducer("add partitions", txnID, producerID, epoch, func(t *txn) (func() error, error) {
		return c.addPartitionsLocked(t, tps, durable)
	})
}

// addPartitionsLocked is AddPartitions of t, its producer checked. The
// lazy write is queued here, under c.mu, so the lazy writes of the id
// reach the committer in the order their states were taken. While the
// last decision's markers are not durable it is not queued at all: the
// record is queued once they are (markersSyncedLocked). When durable,
// t is marked pending, and the write is left to the returned func.
func (c *Coordinator) addPartitionsLocked(t *txn, tps []TopicPartition, durable bool) (then func() error, err error) {
	r := t.rec
	if t.pending || r.state.prepared() {
		return nil, ErrConcurrentTransactions
	}
	next := r.clone()
	if r.state != stateOngoing {
		next.state, next.partitions, next.startMs = stateOngoing, nil, c.nowMs()
	}
	added := false
	for _, tp := range tps {
		if tp.Topic == "" || tp.Partition < 0 || len(tp.Topic) > maxTopicLen {
			return nil, fmt.Errorf("%w: partition %q %d", ErrInvalidRequest, tp.Topic, tp.Partition)
		}
		if next.add(tp) {
			added = true
		}
	}
	if !added {
		// Already in the ongoing transaction (or nothing given while
		// none is ongoing: nothing to begin).
		return nil, nil
	}
	if err := checkTransition(t.id, r.state, next.state); err != nil {
		return nil, err
	}
	c.stamp(&next)
	begun := func() error {
		if r.state != stateOngoing {
			c.event(EventBegun)
		}
		return nil
	}
	if !durable {
		if t.syncing == nil {
			c.w.writeLazy(t.id, next)
		}
		t.rec = next
		return begun, nil
	}
	t.pending = true
	return func() error {
		if err := c.writeDurable(t, next); err != nil {
			c.settle(t, nil)
			return err
		}
		c.settle(t, &next)
		return begun()
	}, nil
}

// EndTxn ends the ongoing transaction of txnID with commit (true) or
// abort, as Kafka's handleEndTransaction: the decision (PrepareCommit or
// PrepareAbort) is made durable, every partition's marker is written,
// and then it returns; the markers are made durable in the background,
// and the Complete state recorded once they are (see finish). A
// retry of the same decision after it completed succeeds; the other
// decision is ErrInvalidTxnState, and so is EndTxn with no transaction
// begun (Empty, as Kafka answers it). A decision whose markers failed
// to write is retried by an EndTxn of the same decision (and by the
// timeout scan).
func (c *Coordinator) EndTxn(txnID string, producerID int64, epoch int16, commit bool) error {
	if txnID == "" {
		return ErrInvalidRequest
	}
	return c.withProducer("end transaction", txnID, producerID, epoch, func(t *txn) (func() error, error) {
		return c.endTxnLocked(t, commit)
	})
}

// endTxnLocked is EndTxn of t, its producer checked: it takes the
// decision, marks t pending, and leaves carrying the decision out
// (finish) to the returned func.
func (c *Coordinator) endTxnLocked(t *txn, commit bool) (then func() error, err error) {
	if t.pending {
		return nil, ErrConcurrentTransactions
	}
	r := t.rec
	decision := statePrepareAbort
	if commit {
		decision = statePrepareCommit
	}
	var next record
	switch {
	case r.state == stateOngoing:
		next = r.clone()
		next.state = decision
	case r.state == decision:
		// A decision whose markers failed: write them again.
		next = r.clone()
	case r.state == stateCompleteCommit && commit, r.state == stateCompleteAbort && !commit:
		// A retry of a completed EndTxn.
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: transactional id %q is %s, EndTxn asks to %s", ErrInvalidTxnState, t.id, r.state, decisionName(commit))
	}
	t.pending = true
	return func() error {
		err := c.finish(t, next, r.state == next.state, nil)
		c.settle(t, nil)
		return err
	}, nil
}

func decisionName(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// finish carries out the decision prep (state PrepareCommit or
// PrepareAbort) of t, whose pending is set (or, at Open, that nobody
// else sees yet): it waits for the produces in flight, persists prep
// durably with the first offsets of its data (unless persisted, when
// prep is already t's persisted state), writes the markers due, sets
// the Complete state in memory and reports the event; a goroutine then
// waits for the markers to be durable and queues the Complete (a lazy
// write, see the package doc). At Open it waits for them itself and
// writes the Complete durably. On error t keeps the last state
// persisted. decided, when not nil, is called once prep is persisted by
// this call, before the markers are written. Both moves (to prep,
// unless persisted, then to the Complete) are checked before anything
// is written.
func (c *Coordinator) finish(t *txn, prep record, persisted bool, decided func()) error {
	commit := prep.state == statePrepareCommit
	complete := stateCompleteAbort
	if commit {
		complete = stateCompleteCommit
	}
	if !persisted {
		c.mu.Lock()
		from := t.rec.state
		c.mu.Unlock()
		if err := checkTransition(t.id, from, prep.state); err != nil {
			return err
		}
	}
	if err := checkTransition(t.id, prep.state, complete); err != nil {
		return err
	}
	t.produce.Lock()
	defer t.produce.Unlock()
	if !persisted {
		// No batch of the transaction is in flight now: where it has
		// data, its first offset is final.
		firsts, err := c.markers.TxnFirstOffsets(prep.partitions, prep.producerID)
		if err != nil {
			return fmt.Errorf("txncoord: transactional id %q: %w", t.id, err)
		}
		prep.firstOffsets = firsts
		c.stamp(&prep)
		if err := c.writeDurable(t, prep); err != nil {
			return err
		}
		c.mu.Lock()
		t.rec = prep.clone()
		c.mu.Unlock()
		if decided != nil {
			decided()
		}
	}
	sync, err := c.markers.WriteMarkers(Decision{
		Partitions: prep.partitions, FirstOffsets: prep.firstOffsets,
		ProducerID: prep.producerID, Epoch: prep.epoch, Commit: commit, CoordinatorEpoch: c.epoch,
	})
	if err != nil {
		return fmt.Errorf("txncoord: transactional id %q: %s markers: %w", t.id, decisionName(commit), err)
	}
	done := prep.clone()
	// The start time stays, as Kafka's prepareComplete keeps it.
	done.state, done.partitions, done.firstOffsets = complete, nil, nil
	c.stamp(&done)
	if c.opening {
		if err := sync(); err != nil {
			return fmt.Errorf("txncoord: transactional id %q: %s markers: %w", t.id, decisionName(commit), err)
		}
		if err := c.w.write(t.id, done); err != nil {
			return err
		}
		c.mu.Lock()
		t.rec = done
		c.mu.Unlock()
	} else {
		// The decision is durable and every marker written: the
		// caller is answered now, and the markers become durable in
		// the background (Kafka, too, answers EndTxn once its
		// decision is logged). Until they are, the file must keep the
		// PrepareX, so Open can write again the markers a crash
		// loses: the id's Complete, and any record after it, is
		// queued only once they are durable (awaitMarkers).
		ms := &markerSync{sync: sync, done: make(chan struct{})}
		c.mu.Lock()
		t.rec, t.syncing = done, ms
		c.ops.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.ops.Done()
			err := sync()
			if err != nil {
				c.log.Error("txncoord: the markers of a decision are not durable; the next write of the transactional id tries again", "transactional_id", t.id, "err", err)
			}
			c.mu.Lock()
			ms.err = err
			if err == nil {
				c.markersSyncedLocked(t, ms)
			}
			close(ms.done)
			c.mu.Unlock()
		}()
	}
	if commit {
		c.event(EventCommitted)
	} else {
		c.event(EventAborted)
	}
	return nil
}

// markersSyncedLocked records that the markers of ms are durable: t's
// record as it is now (the Complete, or a later transaction's Ongoing,
// which AddPartitions did not queue meanwhile) is queued, a lazy write,
// before any later write of the id.
func (c *Coordinator) markersSyncedLocked(t *txn, ms *markerSync) {
	if t.syncing == ms {
		t.syncing = nil
		c.w.writeLazy(t.id, t.rec)
	}
}

// awaitMarkers returns once the markers of t's last decision are
// durable, trying their sync again if the background wait failed; the
// caller (t pending, or holding its produce lock) then writes a record
// of t. An error (the markers still not durable) leaves t as it is.
func (c *Coordinator) awaitMarkers(t *txn) error {
	c.mu.Lock()
	ms := t.syncing
	c.mu.Unlock()
	if ms == nil {
		return nil
	}
	<-ms.done
	if ms.err == nil {
		return nil
	}
	if err := ms.sync(); err != nil {
		return fmt.Errorf("txncoord: transactional id %q: the markers of its last decision: %w", t.id, err)
	}
	c.mu.Lock()
	c.markersSyncedLocked(t, ms)
	c.mu.Unlock()
	return nil
}

// writeDurable writes r as t's record and waits until it is durable,
// once the markers of t's last decision are (awaitMarkers).
func (c *Coordinator) writeDurable(t *txn, r record) error {
	if err := c.awaitMarkers(t); err != nil {
		return err
	}
	return c.w.write(t.id, r)
}

// BeginProduce admits a transactional batch of (producerID, epoch) for
// tp: the transaction of txnID must be Ongoing with tp added. The
// caller appends the batch and then calls release (after the append,
// before waiting for durability); until then no marker can be written
// for that transaction, so a batch can never land after its
// transaction's marker (a fenced producer's batch racing the abort).
// An unknown transactional id or another producer id is
// ErrInvalidProducerIDMapping; an epoch other than the current one (or
// the producer id before a rotation) ErrInvalidProducerEpoch; no
// ongoing transaction, or tp not in it, ErrInvalidTxnState. While the
// markers of the transaction are being written, BeginProduce waits for
// them and then refuses.
func (c *Coordinator) BeginProduce(txnID string, producerID int64, epoch int16, tp TopicPartition) (release func(), err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("txncoord: begin produce: %w", ErrClosed)
	}
	t := c.lookupLocked(txnID)
	c.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("%w: unknown transactional id %q", ErrInvalidProducerIDMapping, txnID)
	}
	t.produce.RLock()
	c.mu.Lock()
	r := &t.rec
	switch {
	case c.closed:
		err = fmt.Errorf("txncoord: begin produce: %w", ErrClosed)
	case producerID == r.prevProducerID && producerID != r.producerID:
		err = fmt.Errorf("%w: producer id %d of transactional id %q was replaced by %d", ErrInvalidProducerEpoch, producerID, txnID, r.producerID)
	case producerID != r.producerID:
		err = fmt.Errorf("%w: transactional id %q maps to producer id %d, not %d", ErrInvalidProducerIDMapping, txnID, r.producerID, producerID)
	case epoch != r.epoch:
		err = fmt.Errorf("%w: transactional id %q is at epoch %d, the batch has %d", ErrInvalidProducerEpoch, txnID, r.epoch, epoch)
	case r.state != stateOngoing:
		err = fmt.Errorf("%w: transactional id %q has no ongoing transaction (%s)", ErrInvalidTxnState, txnID, r.state)
	case !r.has(tp):
		err = fmt.Errorf("%w: partition %s-%d is not in the transaction of %q", ErrInvalidTxnState, tp.Topic, tp.Partition, txnID)
	}
	c.mu.Unlock()
	if err != nil {
		t.produce.RUnlock()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(t.produce.RUnlock) }, nil
}

// Transaction is the state of one transactional id, as Describe and List
// report it.
type Transaction struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	State           string // Kafka's names: "Empty", "Ongoing", "PrepareCommit", ...
	Timeout         time.Duration
	// Start is when the ongoing transaction began, or, once it
	// completed, the last one (Kafka keeps txnStartTimestamp through
	// CompleteCommit and CompleteAbort); zero in Empty.
	Start      time.Time
	Partitions []TopicPartition
}

// StartMs is t.Start in Unix milliseconds, -1 when zero (Kafka's
// RecordBatch.NO_TIMESTAMP, as DescribeTransactions answers it).
func (t Transaction) StartMs() int64 {
	if t.Start.IsZero() {
		return -1
	}
	return t.Start.UnixMilli()
}

// describe reports t; for a txn of the Coordinator, the caller holds
// c.mu.
func (t *txn) describe() Transaction {
	out := Transaction{
		TransactionalID: t.id,
		ProducerID:      t.rec.producerID,
		Epoch:           t.rec.epoch,
		State:           t.rec.state.String(),
		Timeout:         time.Duration(t.rec.timeoutMs) * time.Millisecond,
		Partitions:      slices.Clone(t.rec.partitions),
	}
	if t.rec.startMs >= 0 {
		out.Start = time.UnixMilli(t.rec.startMs)
	}
	return out
}

// Describe returns the state of txnID; false when the id is unknown.
func (c *Coordinator) Describe(txnID string) (Transaction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.lookupLocked(txnID)
	if t == nil {
		return Transaction{}, false
	}
	return t.describe(), true
}

// List returns the state of every transactional id, sorted by id.
func (c *Coordinator) List() []Transaction {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Transaction, 0, len(c.txns))
	for _, t := range c.txns {
		if !t.fresh {
			out = append(out, t.describe())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

// scan aborts, every CheckInterval, the ongoing transactions older than
// their timeout, retries decisions whose markers failed, and expires
// the transactional ids idle past Config.IDExpiration.
func (c *Coordinator) scan() {
	defer close(c.scanDone)
	tick := time.NewTicker(c.cfg.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			c.checkTimeouts()
			c.expireIDs()
		}
	}
}

// checkTimeouts is one timeout scan: each Ongoing transaction whose
// start plus timeout is before now is aborted as Kafka's
// abortTimedOutTransactions does: the epoch is bumped first (so the
// producer is fenced: its EndTxn gets ErrProducerFenced, its produces
// ErrInvalidProducerEpoch), then its ABORT markers are written with the
// bumped epoch. A Prepare state left by a failed marker write is
// finished again.
func (c *Coordinator) checkTimeouts() {
	now := c.nowMs()
	type job struct {
		t         *txn
		prep      record
		persisted bool
	}
	var jobs []job
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	for _, id := range slices.Sorted(maps.Keys(c.txns)) {
		t := c.txns[id]
		if t.pending || t.fresh {
			continue
		}
		r := t.rec
		switch {
		case r.state == stateOngoing && r.startMs+int64(r.timeoutMs) < now:
			jobs = append(jobs, job{t: t, prep: fenceAbort(r)})
		case r.state.prepared():
			jobs = append(jobs, job{t: t, prep: r.clone(), persisted: true})
		default:
			continue
		}
		t.pending = true
	}
	c.ops.Add(len(jobs))
	c.mu.Unlock()
	for _, j := range jobs {
		var decided func()
		if !j.persisted {
			c.log.Info("txncoord: aborting a timed-out transaction", "transactional_id", j.t.id, "producer_id", j.prep.producerID, "epoch", j.prep.epoch, "timeout_ms", j.prep.timeoutMs)
			// Counted once its abort is decided: a failed write
			// leaves it Ongoing, for the next scan to try again.
			decided = func() { c.event(EventTimedOut) }
		}
		if err := c.finish(j.t, j.prep, j.persisted, decided); err != nil {
			c.log.Error("txncoord: finishing a transaction", "transactional_id", j.t.id, "err", err)
		}
		c.settle(j.t, nil)
		c.ops.Done()
	}
}

// expireIDs is one expiration scan, as Kafka's removal of expired
// transactional ids. It takes each id that may move to Dead
// (validPrevious: Empty, CompleteCommit or CompleteAbort, never one
// with a transaction ongoing or being decided), whose last write is
// Config.IDExpiration or more before now, and which no call is
// changing. Each is marked pending (Kafka's pending Dead: a call for it
// meanwhile gets ErrConcurrentTransactions), its tombstone is committed
// durably, and then it is forgotten. An id whose tombstone failed stays
// as it was.
func (c *Coordinator) expireIDs() {
	if c.cfg.IDExpiration < 0 {
		return
	}
	cutoff := c.nowMs() - c.cfg.IDExpiration.Milliseconds()
	var expired []*txn
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	for _, t := range c.txns {
		if t.pending || t.fresh || t.rec.lastUpdateMs > cutoff {
			continue
		}
		if t.rec.state.canMoveTo(stateDead) {
			t.pending = true
			expired = append(expired, t)
		}
	}
	if len(expired) == 0 {
		c.mu.Unlock()
		return
	}
	c.ops.Add(1)
	defer c.ops.Done()
	c.mu.Unlock()
	slices.SortFunc(expired, func(a, b *txn) int { return strings.Compare(a.id, b.id) })
	recs := make([]record, len(expired)) // t.rec cannot change while pending
	errs := make([]error, len(expired))
	var keys []string
	var removing []int
	for i, t := range expired {
		recs[i] = t.rec
		// A tombstone, like any record after a decision, waits for its
		// markers.
		if errs[i] = c.awaitMarkers(t); errs[i] == nil {
			keys = append(keys, t.id)
			removing = append(removing, i)
		}
	}
	for j, err := range c.w.remove(keys) {
		errs[removing[j]] = err
	}
	c.mu.Lock()
	for i, t := range expired {
		t.pending = false
		if errs[i] == nil && c.txns[t.id] == t {
			delete(c.txns, t.id)
		}
	}
	c.mu.Unlock()
	for i, t := range expired {
		if errs[i] != nil {
			c.log.Error("txncoord: expiring a transactional id", "transactional_id", t.id, "err", errs[i])
			continue
		}
		r := recs[i]
		c.log.Info("txncoord: expired an idle transactional id", "transactional_id", t.id, "producer_id", r.producerID, "epoch", r.epoch, "state", r.state, "last_update_ms", r.lastUpdateMs)
		c.event(EventExpired)
	}
}
