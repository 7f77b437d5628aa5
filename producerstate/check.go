package producerstate

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// Outcome is what the producer check decides about a batch. The zero
// value is not an outcome, so a Decision left unset never reads as OK.
type Outcome uint8

// The outcomes of Check and CheckMarker.
const (
	// OK: append the batch, then Apply it.
	OK Outcome = iota + 1
	// Duplicate: the batch was already appended; answer with the first
	// copy's offsets (Decision.DuplicateFirst, DuplicateLast) and write
	// nothing.
	Duplicate
	// OutOfOrder: the base sequence is not the one the producer must send
	// next. Nothing is written.
	OutOfOrder
	// Fenced: the batch's producer epoch is older than the remembered one
	// (the producer was superseded and must never write again), or a
	// marker's coordinator epoch is older than the remembered one (a
	// zombie coordinator). Nothing is written.
	Fenced
	// InvalidTxnState: a non-transactional batch from a producer whose
	// transaction is open (Kafka's InvalidTxnStateException). Nothing is
	// written. The CLI's outcome list has no word for it; it prints it as
	// INVALID.
	InvalidTxnState
	// Invalid: the batch cannot be judged, such as a marker whose record
	// does not decode as COMMIT or ABORT. Nothing is written.
	Invalid
)

var outcomeNames = [...]string{
	OK:              "OK",
	Duplicate:       "DUPLICATE",
	OutOfOrder:      "OUT_OF_ORDER",
	Fenced:          "FENCED",
	InvalidTxnState: "INVALID_TXN_STATE",
	Invalid:         "INVALID",
}

// String returns the outcome's name as the CLI prints it: OK, DUPLICATE,
// OUT_OF_ORDER, FENCED, INVALID_TXN_STATE or INVALID.
func (o Outcome) String() string {
	if o >= OK && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Refused reports whether the batch must not be written and the producer
// must be told so: every outcome but OK and Duplicate.
func (o Outcome) Refused() bool { return o != OK && o != Duplicate }

// Decision is the answer of the producer check. Reason says, for a
// refusal, what was expected and what came; for a duplicate, what was
// matched. For a refusal, Cause is the rule that refused, and Expected
// and Got the numbers it compared (see Cause); for OK and Duplicate they
// are zero. DuplicateFirst and DuplicateLast are the offsets of the first
// copy of a duplicate, and 0 otherwise.
type Decision struct {
	Outcome        Outcome
	Reason         string
	Cause          Cause
	Expected, Got  int64
	DuplicateFirst int64
	DuplicateLast  int64
}

var accepted = Decision{Outcome: OK}

func refuse(c Cause, expected, got int64, format string, args ...any) Decision {
	return Decision{Outcome: c.Outcome(), Cause: c, Expected: expected, Got: got, Reason: fmt.Sprintf(format, args...)}
}

// Check decides whether batch b may be appended, before anything is
// written. b is a client batch that passed ValidateClient: data, with a
// base sequence when it has a producer id. (A control batch is passed on
// to CheckMarker.) The rules, in this order:
//
//   - No producer id (any negative id): OK, unchecked.
//   - An epoch below -1 (Kafka's "no epoch"): INVALID, as Kafka refuses
//     it.
//   - Unknown producer, or one that has expired against now (see
//     ExpireProducers): the base sequence must be 0, else OUT_OF_ORDER.
//     This store does not take up a producer mid-stream.
//   - Epoch older than the remembered one: FENCED.
//   - Epoch newer: the base sequence must be 0, else OUT_OF_ORDER. Apply
//     clears the window when the batch is appended.
//   - Same epoch: a remembered batch with exactly the same first and last
//     sequence is a DUPLICATE, answered with its original offsets.
//     Otherwise the base sequence must be the newest remembered last
//     sequence + 1, with 2147483647 followed by 0 (or 0 when nothing is
//     remembered in this epoch), else OUT_OF_ORDER. A partial overlap or
//     a retry older than the window is OUT_OF_ORDER, never a duplicate.
//   - Finally, as in Kafka, a non-transactional batch while the
//     producer's transaction is open is INVALID_TXN_STATE.
//
// Check never changes the state: an expired producer is judged unknown
// but stays until ExpireProducers removes it, and only Apply, after the
// batch is appended, records it.
func (s *State) Check(b recordbatch.Batch, now time.Time) Decision {
	if !b.HasProducerID() {
		return accepted
	}
	if b.Attributes().Control() {
		return s.CheckMarker(b, now)
	}
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	if epoch < noEpoch {
		return invalidEpoch(pid, epoch)
	}
	first, last := b.BaseSequence(), b.LastSequence()
	e, expired := s.lookup(pid, now)
	if e == nil {
		if first != 0 && expired {
			return refuse(ExpiredProducer, 0, int64(first), "producer %d epoch %d: expired after %s idle, so unknown again: must start at sequence 0, got %d", pid, epoch, s.cfg.ExpireAfter, first)
		}
		if first != 0 {
			return refuse(UnknownProducer, 0, int64(first), "producer %d epoch %d: unknown producer must start at sequence 0, got %d", pid, epoch, first)
		}
		return accepted
	}
	switch {
	case epoch < e.Epoch:
		return refuse(OlderEpoch, int64(e.Epoch), int64(epoch), "producer %d: epoch %d is older than the current epoch %d", pid, epoch, e.Epoch)
	case epoch > e.Epoch:
		if first != 0 {
			return refuse(NewEpochNotAtZero, 0, int64(first), "producer %d epoch %d: a new epoch (current %d) must start at sequence 0, got %d", pid, epoch, e.Epoch, first)
		}
	default:
		if m, ok := e.findBatch(first, last); ok {
			return Decision{
				Outcome:        Duplicate,
				Reason:         fmt.Sprintf("producer %d epoch %d: sequences %d..%d were written at offsets %d..%d", pid, epoch, first, last, m.FirstOffset, m.LastOffset),
				DuplicateFirst: m.FirstOffset,
				DuplicateLast:  m.LastOffset,
			}
		}
		if want := e.nextSeq(); first != want {
			return refuse(SequenceGap, int64(want), int64(first), "producer %d epoch %d: expected sequence %d, got %d", pid, epoch, want, first)
		}
	}
	if e.hasOpenTxn() && !b.Attributes().Transactional() {
		return refuse(OpenTransaction, e.TxnFirstOffset, 0, "producer %d epoch %d: expected a transactional batch, since the transaction begun at offset %d is open", pid, epoch, e.TxnFirstOffset)
	}
	return accepted
}

// CheckMarker decides whether the COMMIT or ABORT marker batch b may be
// appended, for the coordinator path (logstore writing markers itself).
// As Kafka's appendEndTxnMarker: a marker whose producer epoch is older
// than the remembered one is FENCED; so is one whose coordinator epoch is
// older than the remembered coordinator epoch (a zombie coordinator). A
// newer producer epoch is accepted, and a marker for an unknown (or
// expired) producer too, whether or not a transaction is open. A batch
// without producer id, or a control batch without records, is OK (there
// is nothing to check); a batch that is not a control batch, whose
// producer epoch is below -1, or whose first record is not a COMMIT or
// ABORT marker, is INVALID.
// CheckMarker never changes the state.
func (s *State) CheckMarker(b recordbatch.Batch, now time.Time) Decision {
	if !b.HasProducerID() {
		return accepted
	}
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	if !b.Attributes().Control() {
		return refuse(NotControlBatch, 0, 0, "producer %d epoch %d: not a control batch", pid, epoch)
	}
	if epoch < noEpoch {
		return invalidEpoch(pid, epoch)
	}
	if b.NumRecords() == 0 {
		return accepted
	}
	m, _, err := s.readMarker(b)
	if err != nil {
		return refuse(BadMarker, 0, 0, "producer %d epoch %d: %v", pid, epoch, err)
	}
	e, _ := s.lookup(pid, now)
	if e == nil {
		return accepted
	}
	if epoch < e.Epoch {
		return refuse(OlderEpoch, int64(e.Epoch), int64(epoch), "producer %d: %s marker epoch %d is older than the current epoch %d", pid, m.Type, epoch, e.Epoch)
	}
	if m.CoordinatorEpoch < e.CoordinatorEpoch {
		return refuse(OlderCoordinatorEpoch, int64(e.CoordinatorEpoch), int64(m.CoordinatorEpoch), "producer %d: %s marker coordinator epoch %d is older than the current coordinator epoch %d", pid, m.Type, m.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return accepted
}

// noEpoch is Kafka's NO_PRODUCER_EPOCH: the lowest epoch a batch may
// carry. Kafka refuses a batch with a producer id and a lower epoch.
const noEpoch = -1

// invalidEpoch is the refusal of a batch whose producer epoch is below
// -1.
func invalidEpoch(pid int64, epoch int16) Decision {
	return refuse(InvalidEpoch, noEpoch, int64(epoch), "producer %d: epoch %d is not a producer epoch (the lowest is %d)", pid, epoch, noEpoch)
}

// lookup returns the entry of producer pid as the checks see it: nil when
// the producer is unknown or expired against now, with expired telling
// which.
func (s *State) lookup(pid int64, now time.Time) (e *entry, expired bool) {
	i, ok := s.tab.find(pid)
	if !ok {
		return nil, false
	}
	e = s.tab.at(i)
	if s.expired(e, now) {
		return nil, true
	}
	return e, false
}

// expired reports whether e is past its expiry at now: no open
// transaction, a known seen time, and now at least ExpireAfter after it
// (Kafka's isProducerExpired, on the store's clock instead of a record
// timestamp). time.Time.Sub saturates, so no seen time can overflow.
func (s *State) expired(e *entry, now time.Time) bool {
	return s.cfg.ExpireAfter > 0 && !e.hasOpenTxn() && e.LastSeen != SeenUnknown &&
		now.Sub(time.UnixMilli(e.LastSeen)) >= s.cfg.ExpireAfter
}

// readMarker decodes the first record of control batch b as an end
// transaction marker, and returns it with the record's timestamp.
func (s *State) readMarker(b recordbatch.Batch) (recordbatch.EndTxnMarker, int64, error) {
	if err := s.rr.Reset(b, 0); err != nil {
		return recordbatch.EndTxnMarker{}, 0, err
	}
	if !s.rr.Next() {
		err := s.rr.Err()
		if err == nil {
			err = errors.New("control batch has no record")
		}
		return recordbatch.EndTxnMarker{}, 0, err
	}
	rec := s.rr.Record()
	m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
	return m, rec.Timestamp, err
}
