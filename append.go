package logstore

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// AppendResult is what an accepted append was assigned.
type AppendResult struct {
	BaseOffset int64 // offset of the batch's first record
	LastOffset int64 // offset of its last record
	// Duplicate is set when the batch was a retry of one the producer's
	// window remembers: nothing was written, and the offsets are the
	// first copy's.
	Duplicate bool
}

// Append checks batch as a producer must send it, appends it, and returns
// once it is as durable as the store's sync mode promises (see the
// package doc). batch must hold exactly one Kafka v2 record batch. Append
// stamps the assigned base offset into batch in place (the CRC does not
// cover it); the caller must not change batch while Append runs.
//
// A batch that fails the checks is refused with a *RefusedError, which
// says why as data (see Refusal) and matches ErrInvalidBatch,
// ErrOutOfOrder or ErrFenced, and, for a batch that failed a check of its
// own, the recordbatch sentinel of that check or segment.ErrBatchTooLarge;
// nothing is written. Any other error is a failure, not a refusal: after
// a failed write or sync, this and every later call return an error
// matching segment.ErrPoisoned.
func (p *Partition) Append(batch []byte) (AppendResult, error) {
	return p.append(batch, true)
}

// append is Append, and with waitDurable false AppendWritten: under
// SyncAlways it then returns once the batch is written, and the caller's
// WaitAcked moves DurableEnd past it.
func (p *Partition) append(batch []byte, waitDurable bool) (AppendResult, error) {
	b, err := p.checkBatch(batch)
	if err != nil {
		return AppendResult{}, p.wrap("append", err)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return AppendResult{}, p.wrap("append", ErrClosed)
	}
	res, err := p.appendChecked(b)
	if err != nil {
		return AppendResult{}, p.wrap("append", err)
	}
	if p.mode.kind == syncAlways {
		if !waitDurable {
			return res, nil
		}
		// Group commit: see segment.Log.SyncTo.
		if err := p.log.SyncTo(res.LastOffset + 1); err != nil {
			return AppendResult{}, p.wrap("append", err)
		}
	}
	p.durableSig.notify()
	return res, nil
}

// checkBatch is step 1 of an append: the batch alone, before any state.
func (p *Partition) checkBatch(data []byte) (recordbatch.Batch, error) {
	maxBatch := int(p.maxBatch.Load())
	b, err := recordbatch.Parse(data, maxBatch)
	if err != nil {
		r := refuseBatch(err)
		if r.Kind == RefusedTooLarge {
			r.Got, r.Expected = int64(len(data)), int64(maxBatch)
		}
		return nil, r
	}
	if extra := len(data) - b.Size(); extra != 0 {
		return nil, &RefusedError{Kind: RefusedInvalid, Reason: fmt.Sprintf("%d bytes follow the batch of %d bytes", extra, b.Size())}
	}
	if err := b.ValidateClient(); err != nil {
		return nil, refuseBatch(err)
	}
	// Every record, as Kafka's log validator decodes them: a batch whose
	// CRC is right but whose records no reader can decode would fail
	// every read of the partition from its offset on.
	if err := recordbatch.ValidateClientRecords(b, p.maxRecords); err != nil {
		return nil, refuseBatch(err)
	}
	return b, nil
}

// appendChecked is steps 2 to 4 of an append, under appendMu: the
// producer decision, then the write. It does not sync.
func (p *Partition) appendChecked(b recordbatch.Batch) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()

	if err := p.saveFailed(); err != nil {
		return AppendResult{}, err
	}
	// The store's clock for this batch: the check judges expiry on it,
	// and the state records it as the producer's seen time.
	now := p.now()
	dup, isDup, err := p.checkProducer(b, now)
	if err != nil {
		return AppendResult{}, err
	}
	if isDup {
		// The first copy's offsets. Under SyncAlways the caller still
		// waits until they are durable: the first copy may be in flight.
		return dup, nil
	}

	if b.HasProducerID() && b.Attributes().Transactional() && !b.Attributes().Control() {
		// The mark goes first: a crash after the write finds it.
		if err := p.MarkTransactional(); err != nil {
			return AppendResult{}, err
		}
	}
	opened := p.openTxnBefore(b)
	info, err := p.log.Append(b)
	if err != nil && opened {
		p.closeTxn(b.ProducerID())
	}
	if errors.Is(err, segment.ErrBatchTooLarge) {
		// Larger than a segment: refused, and nothing was written.
		return AppendResult{}, refuseBatch(err)
	}
	if err != nil {
		return AppendResult{}, err
	}
	// The batch is in the log at its offsets: the state follows it.
	if err := p.state.Apply(b, now); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: info.BaseOffset, LastOffset: info.LastOffset}, nil
}

// checkProducer decides on a batch against the producer state (see
// DESIGN.md, "Producer checks") before anything touches the log: the
// first copy's offsets and true for a DUPLICATE, a *RefusedError for a
// refusal, and nothing for a batch to write, judged at now. The caller
// holds appendMu.
func (p *Partition) checkProducer(b recordbatch.Batch, now time.Time) (dup AppendResult, isDup bool, err error) {
	d := p.state.Check(b, now)
	switch d.Outcome {
	case producerstate.OK:
		return AppendResult{}, false, nil
	case producerstate.Duplicate:
		return AppendResult{BaseOffset: d.DuplicateFirst, LastOffset: d.DuplicateLast, Duplicate: true}, true, nil
	default:
		return AppendResult{}, false, refuseProducer(d)
	}
}

// AppendWritten is Append without the wait for durability: it checks
// batch, appends it (or finds it a duplicate) and returns once it is
// written, whatever the sync mode. It is for a caller that acknowledges
// later, such as the Kafka server, which must not hold the next
// request's append while this one waits for group commit.
//
// Before acknowledging an accepted batch as durable under the store's
// sync mode, the caller waits for SyncTo(res.LastOffset+1) under
// SyncAlways (Partition.WaitAcked does this for every mode). That wait is
// needed for a DUPLICATE too: its first copy may have been written by an
// append whose fsync has not ended yet, so a retry on another connection
// could otherwise be acknowledged before the data is durable.
//
// Refusals and failures are Append's.
func (p *Partition) AppendWritten(batch []byte) (AppendResult, error) {
	return p.append(batch, false)
}

// WaitAcked returns once res, a result of AppendWritten, is as durable as
// the store's sync mode promises an acknowledged batch to be: under
// SyncAlways it is SyncTo(res.LastOffset+1) (group commit), in the other
// modes it returns at once, since the batch is written.
func (p *Partition) WaitAcked(res AppendResult) error {
	if p.mode.kind != syncAlways {
		return nil
	}
	return p.SyncTo(res.LastOffset + 1)
}

// Mode returns the partition's sync mode.
func (p *Partition) Mode() SyncMode { return p.mode }

// AppendMarker ends the open transaction of producer id at epoch by
// writing Kafka's COMMIT (commit true) or ABORT marker batch, with
// coordinatorEpoch, as a transaction coordinator does (clients may not
// write control batches: Append refuses them). The marker is checked as
// Kafka's appendEndTxnMarker checks it (an older producer epoch or
// coordinator epoch is refused with a *RefusedError, nothing written),
// appended, applied to the producer state, and, for an ABORT that ends
// an open transaction, recorded in the .txnindex of the segment holding
// it, with the last stable offset Kafka computes at that moment. It
// returns once the marker is durable, in every sync mode: it is
// AppendMarkerWritten, then SyncTo past the marker.
func (p *Partition) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (AppendResult, error) {
	res, err := p.AppendMarkerWritten(producerID, epoch, commit, coordinatorEpoch)
	if err != nil {
		return AppendResult{}, err
	}
	if err := p.SyncTo(res.LastOffset + 1); err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

func (p *Partition) appendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.saveFailed(); err != nil {
		return AppendResult{}, err
	}
	m := recordbatch.EndTxnMarker{Type: recordbatch.ControlAbort, CoordinatorEpoch: coordinatorEpoch}
	if commit {
		m.Type = recordbatch.ControlCommit
	}
	now := p.now()
	// Partition leader epoch 0: the one the server stamps into every
	// batch it appends (a single node is always the leader of epoch 0).
	b, err := recordbatch.AppendEndTxnBatch(nil, p.log.EndOffset(), now.UnixMilli(), p.LeaderEpoch(), producerID, epoch, m)
	if err != nil {
		return AppendResult{}, err
	}
	batch := recordbatch.Batch(b)
	if d := p.state.CheckMarker(batch, now); d.Outcome.Refused() {
		return AppendResult{}, refuseProducer(d)
	}
	info, err := p.log.Append(batch)
	if err != nil {
		return AppendResult{}, err
	}
	if err := p.state.Apply(batch, now); err != nil {
		return AppendResult{}, err
	}
	if first, open := p.txns.open[producerID]; open && !commit {
		lso := firstOpen(p.txns.open, producerID)
		if lso < 0 {
			lso = info.LastOffset + 1
		}
		t := segment.AbortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: info.LastOffset, LastStableOffset: lso}
		if err := p.log.AppendAbortedTxn(t); err != nil {
			return AppendResult{}, err
		}
	}
	if first, open := p.txns.open[producerID]; open {
		p.noteDecided(first, info.LastOffset+1)
		p.closeTxn(producerID)
	}
	return AppendResult{BaseOffset: info.BaseOffset, LastOffset: info.LastOffset}, nil
}

// AppendMarkerWritten is AppendMarker without the wait for durability:
// the marker is checked, appended and applied exactly as AppendMarker
// does (the same refusals, the same .txnindex entry), and it returns
// once the marker is written, in every sync mode. It is for a
// coordinator that ends a transaction in several partitions: it writes
// every partition's marker, then waits for all of them at once.
//
// The caller makes the marker durable with SyncTo(res.LastOffset+1) (in
// every sync mode, as AppendMarker does), and until it is, must be able
// to write it again after a crash: txncoord answers EndTxn before that
// sync, with its decision durable, and keeps the decision on file until
// the markers are. Until then the transaction's data stays above the
// last stable offset (a read_committed consumer does not see it), as for
// any marker not yet durable.
func (p *Partition) AppendMarkerWritten(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (AppendResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return AppendResult{}, p.wrap("append marker", ErrClosed)
	}
	res, err := p.appendMarker(producerID, epoch, commit, coordinatorEpoch)
	if err != nil {
		return AppendResult{}, p.wrap("append marker", err)
	}
	return res, nil
}

// Refusal is the kind of a refused append: the answer a producer gets.
// The comment of each says the word `logstore append` prints for it and
// the Kafka error code a broker answers it with.
type Refusal uint8

const (
	// RefusedInvalid: the bytes are not a batch a producer may send. Err
	// is the check's error: a *recordbatch.CorruptionError, which
	// matches the recordbatch sentinel of the check that failed, or nil
	// when the batch is followed by more bytes. INVALID. Kafka:
	// CORRUPT_MESSAGE (2) for bytes that do not decode (recordbatch.ErrCRC,
	// ErrTruncated, ErrBatchTooSmall, ErrMagic, ErrUnknownCodec,
	// ErrDecompress), INVALID_RECORD (87) for a batch that decodes but a
	// producer may not send (ErrControl, ErrRecordCount, ErrSequence,
	// ErrRecord), INVALID_TIMESTAMP (32) for ErrTimestamp. A producer
	// epoch below -1 is refused so too, with Cause
	// producerstate.InvalidEpoch and Err nil.
	RefusedInvalid Refusal = iota + 1
	// RefusedTooLarge: the batch is larger than Options.MaxMessageBytes or
	// Options.SegmentBytes. Got is its size, Expected the limit it
	// broke; Err a *recordbatch.CorruptionError (recordbatch.ErrBatchTooLarge)
	// or a *segment.BatchTooLargeError. INVALID. Kafka: MESSAGE_TOO_LARGE
	// (10); Kafka answers RECORD_LIST_TOO_LARGE (18) for a batch larger
	// than a segment.
	RefusedTooLarge
	// RefusedUnknownProducer: the partition does not know the producer
	// (never seen, forgotten, or expired: Cause says which) and the base
	// sequence is not 0. Expected 0, Got the base sequence. OUT_OF_ORDER.
	// Kafka: UNKNOWN_PRODUCER_ID (59).
	RefusedUnknownProducer
	// RefusedSequenceGap: the base sequence of a known producer is not
	// the next one, nor a retry of a batch its window remembers. Expected
	// the next sequence, Got the base sequence. OUT_OF_ORDER. Kafka:
	// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	RefusedSequenceGap
	// RefusedNewEpochNotAtZero: a newer epoch than the partition
	// remembers, whose base sequence is not 0. Expected 0, Got the base
	// sequence. OUT_OF_ORDER. Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	RefusedNewEpochNotAtZero
	// RefusedOlderEpoch: the producer epoch is older than the one the
	// partition remembers: the producer was fenced. Expected the
	// remembered epoch, Got the batch's. FENCED. Kafka:
	// INVALID_PRODUCER_EPOCH (47).
	RefusedOlderEpoch
	// RefusedOpenTransaction: a non-transactional batch while the
	// producer's transaction is open. Expected the offset the transaction
	// began at. INVALID. Kafka: INVALID_TXN_STATE (48).
	RefusedOpenTransaction
)

var refusalNames = [...]string{
	RefusedInvalid:           "INVALID",
	RefusedTooLarge:          "TOO_LARGE",
	RefusedUnknownProducer:   "UNKNOWN_PRODUCER",
	RefusedSequenceGap:       "SEQUENCE_GAP",
	RefusedNewEpochNotAtZero: "NEW_EPOCH_NOT_AT_ZERO",
	RefusedOlderEpoch:        "OLDER_EPOCH",
	RefusedOpenTransaction:   "OPEN_TRANSACTION",
}

// String returns the refusal's name, such as SEQUENCE_GAP.
func (k Refusal) String() string {
	if k > 0 && int(k) < len(refusalNames) {
		return refusalNames[k]
	}
	return "Refusal(" + strconv.Itoa(int(k)) + ")"
}

// sentinel is the sentinel error a refusal of kind k matches.
func (k Refusal) sentinel() error {
	switch k {
	case RefusedUnknownProducer, RefusedSequenceGap, RefusedNewEpochNotAtZero:
		return ErrOutOfOrder
	case RefusedOlderEpoch:
		return ErrFenced
	}
	return ErrInvalidBatch
}

// RefusedError is Partition.Append's refusal of a batch: nothing was
// written, and the partition goes on. Find it with errors.As; it also
// matches ErrInvalidBatch, ErrOutOfOrder or ErrFenced (see Refusal), and
// Err's sentinels. Any other error of Append is not a refusal, but a
// failure of the partition (closed, or poisoned by an I/O error).
type RefusedError struct {
	Kind Refusal
	// Cause is the producer rule that refused, for the producer kinds
	// (finer than Kind: an expired producer is
	// producerstate.ExpiredProducer); producerstate.NoCause for the
	// others.
	Cause producerstate.Cause
	// Expected and Got are the numbers the check compared; see Kind.
	Expected, Got int64
	// Reason says what was wrong, without the partition, the store, the
	// package or the position in the batch: what `logstore append`
	// prints after the outcome word.
	Reason string
	// Err is the error of the batch's own check that failed, for
	// RefusedInvalid and RefusedTooLarge; nil otherwise.
	Err error
}

func (e *RefusedError) Error() string {
	if e.Err != nil {
		return e.Kind.sentinel().Error() + ": " + e.Err.Error()
	}
	return e.Kind.sentinel().Error() + ": " + e.Reason
}

// Unwrap returns the sentinel of the refusal's kind, and Err.
func (e *RefusedError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind.sentinel(), e.Err}
	}
	return []error{e.Kind.sentinel()}
}

// refuseBatch is the refusal of a batch that failed a check of its own
// with err: a recordbatch check, or the log's size limit. For Parse's
// size limit (recordbatch.ErrBatchTooLarge) the caller sets Got and
// Expected: the error does not carry them.
func refuseBatch(err error) *RefusedError {
	r := &RefusedError{Kind: RefusedInvalid, Reason: err.Error(), Err: err}
	var ce *recordbatch.CorruptionError
	var tl *segment.BatchTooLargeError
	switch {
	case errors.As(err, &tl):
		r.Kind, r.Reason = RefusedTooLarge, tl.Reason()
		r.Got, r.Expected = int64(tl.Size), min(int64(tl.MaxBatchBytes), tl.SegmentBytes)
	case errors.As(err, &ce):
		r.Reason = ce.Reason()
		if errors.Is(err, recordbatch.ErrBatchTooLarge) {
			r.Kind = RefusedTooLarge
		}
	}
	return r
}

// refuseProducer is the refusal of the producer check's decision d.
func refuseProducer(d producerstate.Decision) *RefusedError {
	r := &RefusedError{Cause: d.Cause, Expected: d.Expected, Got: d.Got, Reason: d.Reason}
	switch d.Cause {
	case producerstate.UnknownProducer, producerstate.ExpiredProducer:
		r.Kind = RefusedUnknownProducer
	case producerstate.SequenceGap:
		r.Kind = RefusedSequenceGap
	case producerstate.NewEpochNotAtZero:
		r.Kind = RefusedNewEpochNotAtZero
	case producerstate.OlderEpoch, producerstate.OlderCoordinatorEpoch:
		r.Kind = RefusedOlderEpoch
	case producerstate.OpenTransaction:
		r.Kind = RefusedOpenTransaction
		r.Reason = d.Outcome.String() + ": " + d.Reason
	default:
		// An epoch below -1, or a marker that does not decode (only
		// CheckMarker decides so, and Append never sends it a batch:
		// ValidateClient refuses control batches).
		r.Kind = RefusedInvalid
		r.Reason = d.Outcome.String() + ": " + d.Reason
	}
	return r
}

// Record returns the index from 0, in the refused batch, of the record
// the refusal is about, and whether there is one: for RefusedInvalid,
// when the batch's own check named a record (see
// recordbatch.CorruptionError.Record); never for the other kinds. A
// broker answers it in the ProduceResponse's RecordErrors.
func (e *RefusedError) Record() (index int, ok bool) {
	var ce *recordbatch.CorruptionError
	if e.Kind != RefusedInvalid || !errors.As(e.Err, &ce) {
		return 0, false
	}
	return ce.Record()
}
