package crashtest

// The model and the oracle of the crash-recovery suite: what a workload
// wrote, and what a store reopened on any crashed image of it must hold.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// Timestamp is the record timestamp base of the crash workloads; producer
// expiry is off, so the clock plays no part.
const Timestamp = 1_700_000_000_000

// Clock is the segment clock of the crash workloads: fixed, so runs
// repeat exactly.
func Clock() time.Time { return time.UnixMilli(Timestamp) }

// Written is one batch a workload got into the log (or was getting into
// it when a crash came: the batch in flight), at the offsets it was given.
type Written struct {
	Data       []byte // as stored: the base offset stamped in
	PID        int64
	Epoch      int16
	Seq        int32
	Base, Last int64
}

// Timeline is every batch written to a partition, in offset order, with
// contiguous offsets from 0. It only grows: a batch lost in a crash is
// sent again by its producer and lands at the same offsets.
type Timeline []Written

// Index returns the position of the batch whose base offset is off, or
// len(tl) when off is the end of the timeline, or -1.
func (tl Timeline) Index(off int64) int {
	if off == tl.End() {
		return len(tl)
	}
	i := sort.Search(len(tl), func(i int) bool { return tl[i].Base >= off })
	if i < len(tl) && tl[i].Base == off {
		return i
	}
	return -1
}

// End is the offset after the last batch.
func (tl Timeline) End() int64 {
	if len(tl) == 0 {
		return 0
	}
	return tl[len(tl)-1].Last + 1
}

// Stamp returns a copy of batch with its base offset set to base.
func Stamp(batch []byte, base int64) []byte {
	c := bytes.Clone(batch)
	recordbatch.Batch(c).SetBaseOffset(base)
	return c
}

// NewWritten describes batch, about to be appended at base.
func NewWritten(batch []byte, base int64) Written {
	b := recordbatch.Batch(Stamp(batch, base))
	return Written{Data: b, PID: b.ProducerID(), Epoch: b.ProducerEpoch(), Seq: b.BaseSequence(), Base: base, Last: b.LastOffset()}
}

// Expect says what a crashed image must hold.
type Expect struct {
	Timeline Timeline // what was written up to the crash (in flight included)
	Acked    int      // Timeline[:Acked] were acknowledged
	// Durable: acknowledged batches must survive this crash (SyncAlways,
	// or a crash of the process only).
	Durable bool
}

// CheckOptions are what the oracle does besides looking.
type CheckOptions struct {
	Resend    bool // send the lost batches again: each must be accepted at its old offsets
	NewAppend bool // then append new batches
	Reopen    bool // then close, reopen, and compare
	// Diverge: instead of the lost batches, a new producer writes past
	// the old end; then the process dies and the store is reopened. A
	// snapshot of the first life left above the recovered end must not
	// be used for the second.
	Diverge bool
}

// Oracle checks partition p of a store opened on a crashed image against
// e: the log is a valid prefix of the timeline (offsets contiguous, every
// batch valid and the one written there) holding every acknowledged
// batch when e.Durable; the producer state is a full replay of the log;
// a retry of each batch in a producer's window is a DUPLICATE with its
// original offsets. With o.Resend the lost batches are sent again, in
// order, and must be accepted at their old offsets.
func Oracle(p *logstore.Partition, e Expect, o CheckOptions) error {
	start, end := p.StartOffset(), p.EndOffset()
	log, err := ReadLog(p)
	if err != nil {
		return err
	}
	// A valid prefix of what was written.
	if end > e.Timeline.End() {
		return fmt.Errorf("log ends at %d, beyond the %d written", end, e.Timeline.End())
	}
	next := start
	for _, b := range log {
		if b.BaseOffset() != next {
			return fmt.Errorf("batch at %d where %d was expected: offsets not contiguous", b.BaseOffset(), next)
		}
		i := e.Timeline.Index(b.BaseOffset())
		if i < 0 || i >= len(e.Timeline) || !bytes.Equal(b, e.Timeline[i].Data) {
			return fmt.Errorf("batch at %d (producer %d seq %d) is not the batch written there", b.BaseOffset(), b.ProducerID(), b.BaseSequence())
		}
		next = b.LastOffset() + 1
	}
	if next != end {
		return fmt.Errorf("batches end at %d, the log end is %d", next, end)
	}
	if start > 0 && e.Timeline.Index(start) < 0 || start > end {
		return fmt.Errorf("log starts at %d, not a batch boundary at or below the end %d", start, end)
	}
	// Every acknowledged batch is there, once: the log is a prefix of the
	// timeline, so its end must be past them.
	if e.Durable && e.Acked > 0 && end < e.Timeline[e.Acked-1].Last+1 {
		lost := e.Timeline.Index(end)
		w := e.Timeline[lost]
		return fmt.Errorf("acknowledged batch lost: producer %d epoch %d seq %d at %d..%d (log ends at %d, %d batches acknowledged)",
			w.PID, w.Epoch, w.Seq, w.Base, w.Last, end, e.Acked)
	}

	// The producer state is a full replay: of everything below the end
	// when a snapshot was loaded (it remembers producers whose batches
	// retention deleted), of the log left otherwise. The store's clock is
	// Clock, fixed, so every append and every replay at open saw
	// its producers at the same time, and the seen times must be equal
	// too: the replay runs at that clock.
	want := producerstate.New(producerstate.Config{})
	if p.Startup().SnapshotOffset >= 0 {
		for _, w := range e.Timeline[:e.Timeline.Index(end)] {
			if err := want.Apply(w.Data, Clock()); err != nil {
				return err
			}
		}
	} else {
		want.SetMapEndOffset(start)
		for _, b := range log {
			if err := want.Apply(b, Clock()); err != nil {
				return err
			}
		}
	}
	want.SetMapEndOffset(end)
	if got, w := p.ProducerSnapshot(), want.Snapshot(); !got.Equal(w) {
		return fmt.Errorf("producer state after open (snapshot at %d + %d batches replayed) differs from a full replay:\n got %+v\nwant %+v",
			p.Startup().SnapshotOffset, p.Startup().ReplayedBatches, got, w)
	}

	// Retries of every batch a producer's window holds: DUPLICATE, with
	// the first copy's offsets.
	for _, pe := range want.Snapshot().Producers {
		for _, m := range pe.Batches {
			i := e.Timeline.Index(m.FirstOffset)
			if i < 0 || i >= len(e.Timeline) {
				return fmt.Errorf("producer %d: window entry at %d is not a batch written", pe.ProducerID, m.FirstOffset)
			}
			res, err := p.Append(bytes.Clone(e.Timeline[i].Data))
			if err != nil || !res.Duplicate || res.BaseOffset != m.FirstOffset || res.LastOffset != m.LastOffset {
				return fmt.Errorf("retry of producer %d epoch %d seq %d (at %d..%d): %+v, %v; want DUPLICATE",
					pe.ProducerID, pe.Epoch, m.FirstSeq, m.FirstOffset, m.LastOffset, res, err)
			}
		}
	}
	if p.EndOffset() != end {
		return fmt.Errorf("retries moved the log end from %d to %d", end, p.EndOffset())
	}

	if o.Resend {
		if err := ResendLost(p, e.Timeline); err != nil {
			return err
		}
	}
	if o.NewAppend {
		at := p.EndOffset()
		res, err := p.Append(ProducerBatch(1<<40, 0, 0, 2, Timestamp))
		if err != nil || res.Duplicate || res.BaseOffset != at {
			return fmt.Errorf("new producer's first batch after recovery: %+v, %v; want OK at %d", res, err, at)
		}
		if res, err = p.Append(PlainBatch("after recovery")); err != nil || res.BaseOffset != at+2 {
			return fmt.Errorf("plain batch after recovery: %+v, %v; want OK at %d", res, err, at+2)
		}
	}
	return nil
}

// ResendLost sends the batches of tl past the log end again, in order, as
// their producers retry what was not acknowledged: each must be accepted
// (not a duplicate, not refused) at the offsets it had.
func ResendLost(p *logstore.Partition, tl Timeline) error {
	i := tl.Index(p.EndOffset())
	if i < 0 {
		return fmt.Errorf("log end %d is not a batch boundary of what was written", p.EndOffset())
	}
	for _, w := range tl[i:] {
		res, err := p.Append(bytes.Clone(w.Data))
		if err != nil || res.Duplicate || res.BaseOffset != w.Base || res.LastOffset != w.Last {
			return fmt.Errorf("re-send of lost batch producer %d epoch %d seq %d: %+v, %v; want OK at %d..%d", w.PID, w.Epoch, w.Seq, res, err, w.Base, w.Last)
		}
	}
	return nil
}

// ReadLog returns copies of every batch of p, each parsed and validated
// (CRC included).
func ReadLog(p *logstore.Partition) ([]recordbatch.Batch, error) {
	return ReadBatches(p, true)
}

// ReadBatches returns copies of every batch of p, each parsed, and
// validated (CRC included) when validate is set.
func ReadBatches(p *logstore.Partition, validate bool) ([]recordbatch.Batch, error) {
	var out []recordbatch.Batch
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("read at %d: %w", off, err)
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("read at %d (end %d): nothing", off, p.EndOffset())
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err == nil && validate {
				err = b.Validate()
			}
			if err != nil {
				return nil, fmt.Errorf("batch read at %d: %w", off, err)
			}
			out = append(out, recordbatch.Batch(bytes.Clone(b)))
			off = b.LastOffset() + 1
			data = data[b.Size():]
		}
	}
	return out, nil
}

// Env is a real directory where stores are opened on crashed images:
// the store's root (and .lock) on the OS, the partition directory on the
// image, and the bbolt snapshot db, which the FS seam does not reach, in
// the real partition directory.
type Env struct {
	Root  string
	Topic string
	Opts  logstore.Options // the filesystem (WithFS) is set per image
}

// PartitionDir is the directory of the partition, topic e.Topic,
// partition 0.
func (e *Env) PartitionDir() string { return filepath.Join(e.Root, e.Topic+"-0") }

// DBPath is the path of the partition's snapshot db.
func (e *Env) DBPath() string { return filepath.Join(e.PartitionDir(), snapshot.FileName) }

// ReadDB returns the snapshot db's bytes, nil when there is none.
func (e *Env) ReadDB() ([]byte, error) {
	data, err := os.ReadFile(e.DBPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// SetDB makes the real partition directory hold exactly db as its
// snapshot db (none when nil), and nothing else.
func (e *Env) SetDB(db []byte) error {
	if err := os.RemoveAll(e.PartitionDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(e.PartitionDir(), 0o755); err != nil {
		return err
	}
	if db == nil {
		return nil
	}
	return os.WriteFile(e.DBPath(), db, 0o644)
}

// Open opens the store on img with db as its snapshot db, and the
// partition.
func (e *Env) Open(img *crashfs.FS, db []byte) (*logstore.Store, *logstore.Partition, error) {
	if err := e.SetDB(db); err != nil {
		return nil, nil, err
	}
	return e.ReopenAsIs(img)
}

// CheckImage opens a store on img (db as its snapshot db), runs the
// oracle, and closes it cleanly.
func (e *Env) CheckImage(img *crashfs.FS, db []byte, ex Expect, o CheckOptions) error {
	pred, predicted, err := e.predictOpen(img)
	if err != nil {
		return err
	}
	before := img.Files()
	s, p, err := e.Open(img, db)
	if err != nil {
		return err
	}
	err = CheckNothingThrownAway(before, img.Files(), p.StartOffset())
	if err == nil && predicted {
		err = e.checkPrediction(pred, p.Recovery(), img.Files())
	}
	if err == nil {
		err = Oracle(p, ex, o)
	}
	if err == nil && o.Diverge {
		return e.diverge(s, p, img, ex.Timeline)
	}
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after the checks: %w", cerr)
	}
	if err != nil || !o.Reopen {
		return err
	}
	// Recovery is idempotent and the clean close complete: a reopen
	// finds the same log and state, with nothing to replay.
	end := p.EndOffset()
	state := p.ProducerSnapshot()
	s, p, err = e.ReopenAsIs(img)
	if err != nil {
		return fmt.Errorf("reopen after a clean close: %w", err)
	}
	defer s.Close()
	if !p.Recovery().Clean || p.EndOffset() != end || p.Startup().ReplayedBatches != 0 || !p.ProducerSnapshot().Equal(state) {
		return fmt.Errorf("reopen after a clean close: clean %t, end %d (want %d), %d batches replayed, same state %t",
			p.Recovery().Clean, p.EndOffset(), end, p.Startup().ReplayedBatches, p.ProducerSnapshot().Equal(state))
	}
	return nil
}

// diverge writes new batches past the end of tl (what the first life
// wrote), kills the process (the image as it is, the db as committed),
// reopens, and checks the producer state against the history of the
// second life: the first life's batches below the recovered end, then the
// new ones. It closes s.
func (e *Env) diverge(s *logstore.Store, p *logstore.Partition, img *crashfs.FS, tl Timeline) error {
	recovered := p.EndOffset()
	history := slices.Clone(tl[:tl.Index(recovered)])
	for seq := int32(0); p.EndOffset() <= tl.End(); seq += 5 {
		b := ProducerBatch(1<<41, 0, seq, 5, Timestamp)
		w := NewWritten(b, p.EndOffset())
		if _, err := p.Append(b); err != nil {
			return errors.Join(fmt.Errorf("second life: %w", err), s.Close())
		}
		history = append(history, w)
	}
	killed := img.Crash(crashfs.KeepAll, nil)
	db, err := e.ReadDB()
	if err != nil {
		return errors.Join(err, s.Close())
	}
	s.Close() // its close snapshot goes to the db, which setDB puts back
	s, p, err = e.Open(killed, db)
	if err != nil {
		return fmt.Errorf("second life: reopen: %w", err)
	}
	defer s.Close()
	if err := Oracle(p, Expect{Timeline: history, Acked: len(history), Durable: true}, CheckOptions{}); err != nil {
		return fmt.Errorf("second life, after writing past a recovered end of %d: %w", recovered, err)
	}
	return nil
}

// ReopenAsIs opens the store on img without touching the snapshot db.
func (e *Env) ReopenAsIs(img *crashfs.FS) (*logstore.Store, *logstore.Partition, error) {
	opts := WithFS(e.Opts, img)
	opts.LockTimeout = -1
	s, err := logstore.Open(e.Root, opts)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.Partition(e.Topic, 0)
	if err != nil {
		return nil, nil, errors.Join(err, s.Close())
	}
	return s, p, nil
}

// WithSegments returns o with the segment layout of the crash
// workloads, on the crash clock: small segments, so rolls (and
// snapshots) come every few batches, an index entry every few batches,
// and retention when asked.
func WithSegments(o logstore.Options, segBytes, retention int64) logstore.Options {
	o.SegmentBytes, o.IndexIntervalBytes, o.RetentionBytes = segBytes, 200, retention
	return WithClock(o, Clock)
}
