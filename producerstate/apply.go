package producerstate

import (
	"fmt"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// Apply records batch b, which was appended to the log at its offsets
// (its base offset stamped), as seen by the store at now, and moves the
// map end offset to b.LastOffset()+1, whether or not b has a producer.
// now is the store's clock: the time of the append, or, when replaying
// the log at startup, the time of the open (a replayed producer counts
// as seen then, so a restart never makes one expire early). It checks nothing:
// it is both the append path, after Check said OK, and the replay path,
// where the log is the truth, so it accepts sequence gaps, duplicates
// and older epochs as they are (Kafka's REPLICATION origin does the
// same).
//
// A data batch with a producer id:
//   - sets the producer's epoch; any change of epoch clears the window;
//   - in the same epoch, clears the window when the batch does not
//     continue the newest remembered one (a gap: the producer was unknown
//     or expired when the batch was accepted), so the window is always
//     one run of consecutive sequences and a live state and a replay
//     agree;
//   - remembers the batch (first and last sequence and offset, max
//     timestamp) as the newest in the window, forgetting the oldest past
//     WindowSize; a batch without a sequence is not remembered;
//   - sets LastTimestamp to the batch's max timestamp (a record
//     timestamp, kept as data), LastSeen to now and LastApplied to the
//     batch's last offset;
//   - opens a transaction at the batch's base offset when it is
//     transactional and none is open.
//
// A control batch with a producer id reads its first record as a COMMIT
// or ABORT marker, sets the epoch (as above), the coordinator epoch,
// LastTimestamp (the record's timestamp, as Kafka does), LastSeen (now)
// and LastApplied, and closes the open transaction. A control batch without records (compaction removed
// them) leaves the producers alone, as in Kafka.
//
// When Apply adds a producer beyond Config.MaxProducers, it forgets the
// longest-idle producers without an open transaction (lowest LastSeen,
// then lowest LastApplied, then lowest id) until the cap holds, never the
// one just added.
//
// The only error is a marker record that cannot be decoded (a log that
// is not valid); then the state, map end offset included, is unchanged,
// and the error wraps recordbatch's *CorruptionError.
func (s *State) Apply(b recordbatch.Batch, now time.Time) error {
	if !b.HasProducerID() {
		s.mapEnd = b.LastOffset() + 1
		return nil
	}
	seen := now.UnixMilli()
	if seen == SeenUnknown {
		s.unknownSeen = true // a clock at 1970: the next ExpireProducers sets it
	}
	if b.Attributes().Control() {
		return s.applyMarker(b, seen)
	}
	pid, epoch, first := b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	e, added := s.entry(pid, epoch, noCoordinatorEpoch)
	if e.Epoch != epoch {
		e.setEpoch(epoch)
	} else if e.n > 0 && first != e.nextSeq() {
		e.clearWindow()
	}
	if first >= 0 {
		e.push(BatchMeta{
			FirstSeq:    first,
			LastSeq:     b.LastSequence(),
			FirstOffset: b.BaseOffset(),
			LastOffset:  b.LastOffset(),
			Timestamp:   b.MaxTimestamp(),
		})
	} else {
		e.clearWindow()
	}
	e.LastTimestamp = b.MaxTimestamp()
	e.LastSeen = seen
	e.LastApplied = b.LastOffset()
	if b.Attributes().Transactional() && !e.hasOpenTxn() {
		e.TxnFirstOffset = b.BaseOffset()
	}
	if added {
		s.enforceCap(pid)
	}
	s.mapEnd = b.LastOffset() + 1
	return nil
}

// applyMarker is Apply for a control batch with a producer id.
func (s *State) applyMarker(b recordbatch.Batch, seen int64) error {
	if b.NumRecords() == 0 {
		s.mapEnd = b.LastOffset() + 1
		return nil
	}
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	m, ts, err := s.readMarker(b)
	if err != nil {
		return fmt.Errorf("producerstate: marker of producer %d at offset %d: %w", pid, b.BaseOffset(), err)
	}
	e, added := s.entry(pid, epoch, m.CoordinatorEpoch)
	e.setEpoch(epoch)
	e.CoordinatorEpoch = m.CoordinatorEpoch
	e.LastTimestamp = ts
	e.LastSeen = seen
	e.LastApplied = b.LastOffset()
	e.TxnFirstOffset = noOffset
	if added {
		s.enforceCap(pid)
	}
	s.mapEnd = b.LastOffset() + 1
	return nil
}

// entry returns the entry of pid for writing, adding a new one at epoch
// when there is none. The pointer is valid until the next entry or
// enforceCap.
func (s *State) entry(pid int64, epoch int16, coordinatorEpoch int32) (e *entry, added bool) {
	if i, ok := s.tab.find(pid); ok {
		return s.tab.mut(i), false
	}
	i := s.tab.add(&entry{
		ProducerID:       pid,
		Epoch:            epoch,
		CoordinatorEpoch: coordinatorEpoch,
		TxnFirstOffset:   noOffset,
		LastApplied:      noOffset,
	})
	return s.tab.mut(i), true
}
