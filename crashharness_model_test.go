package logstore_test

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

// crashTS is the record timestamp base of the crash workloads; producer
// expiry is off, so the clock plays no part.
const crashTS = 1_700_000_000_000

// crashClock is the segment clock of the crash workloads: fixed, so runs
// repeat exactly.
func crashClock() time.Time { return time.UnixMilli(crashTS) }

// written is one batch a workload got into the log (or was getting into
// it when a crash came: the batch in flight), at the offsets it was given.
type written struct {
	data       []byte // as stored: the base offset stamped in
	pid        int64
	epoch      int16
	seq        int32
	base, last int64
}

// timeline is every batch written to a partition, in offset order, with
// contiguous offsets from 0. It only grows: a batch lost in a crash is
// sent again by its producer and lands at the same offsets.
type timeline []written

// index returns the position of the batch whose base offset is off, or
// len(tl) when off is the end of the timeline, or -1.
func (tl timeline) index(off int64) int {
	if off == tl.end() {
		return len(tl)
	}
	i := sort.Search(len(tl), func(i int) bool { return tl[i].base >= off })
	if i < len(tl) && tl[i].base == off {
		return i
	}
	return -1
}

// end is the offset after the last batch.
func (tl timeline) end() int64 {
	if len(tl) == 0 {
		return 0
	}
	return tl[len(tl)-1].last + 1
}

// stamp returns a copy of batch with its base offset set to base.
func stamp(batch []byte, base int64) []byte {
	c := bytes.Clone(batch)
	recordbatch.Batch(c).SetBaseOffset(base)
	return c
}

// newWritten describes batch, about to be appended at base.
func newWritten(batch []byte, base int64) written {
	b := recordbatch.Batch(stamp(batch, base))
	return written{data: b, pid: b.ProducerID(), epoch: b.ProducerEpoch(), seq: b.BaseSequence(), base: base, last: b.LastOffset()}
}

// expect says what a crashed image must hold.
type expect struct {
	tl    timeline // what was written up to the crash (in flight included)
	acked int      // tl[:acked] were acknowledged
	// durable: acknowledged batches must survive this crash (SyncAlways,
	// or a crash of the process only).
	durable bool
}

// checkOptions are what the oracle does besides looking.
type checkOptions struct {
	resend    bool // send the lost batches again: each must be accepted at its old offsets
	newAppend bool // then append new batches
	reopen    bool // then close, reopen, and compare
	// diverge: instead of the lost batches, a new producer writes past
	// the old end; then the process dies and the store is reopened. A
	// snapshot of the first life left above the recovered end must not
	// be used for the second.
	diverge bool
}

// oracle checks partition p of a store opened on a crashed image against
// e: the log is a valid prefix of the timeline (offsets contiguous, every
// batch valid and the one written there) holding every acknowledged
// batch when e.durable; the producer state is a full replay of the log;
// a retry of each batch in a producer's window is a DUPLICATE with its
// original offsets. With o.resend the lost batches are sent again, in
// order, and must be accepted at their old offsets.
func oracle(p *logstore.Partition, e expect, o checkOptions) error {
	start, end := p.StartOffset(), p.EndOffset()
	log, err := readLog(p)
	if err != nil {
		return err
	}
	// A valid prefix of what was written.
	if end > e.tl.end() {
		return fmt.Errorf("log ends at %d, beyond the %d written", end, e.tl.end())
	}
	next := start
	for _, b := range log {
		if b.BaseOffset() != next {
			return fmt.Errorf("batch at %d where %d was expected: offsets not contiguous", b.BaseOffset(), next)
		}
		i := e.tl.index(b.BaseOffset())
		if i < 0 || i >= len(e.tl) || !bytes.Equal(b, e.tl[i].data) {
			return fmt.Errorf("batch at %d (producer %d seq %d) is not the batch written there", b.BaseOffset(), b.ProducerID(), b.BaseSequence())
		}
		next = b.LastOffset() + 1
	}
	if next != end {
		return fmt.Errorf("batches end at %d, the log end is %d", next, end)
	}
	if start > 0 && e.tl.index(start) < 0 || start > end {
		return fmt.Errorf("log starts at %d, not a batch boundary at or below the end %d", start, end)
	}
	// Every acknowledged batch is there, once: the log is a prefix of the
	// timeline, so its end must be past them.
	if e.durable && e.acked > 0 && end < e.tl[e.acked-1].last+1 {
		lost := e.tl.index(end)
		w := e.tl[lost]
		return fmt.Errorf("acknowledged batch lost: producer %d epoch %d seq %d at %d..%d (log ends at %d, %d batches acknowledged)",
			w.pid, w.epoch, w.seq, w.base, w.last, end, e.acked)
	}

	// The producer state is a full replay: of everything below the end
	// when a snapshot was loaded (it remembers producers whose batches
	// retention deleted), of the log left otherwise. The store's clock is
	// crashClock, fixed, so every append and every replay at open saw
	// its producers at the same time, and the seen times must be equal
	// too: the replay runs at that clock.
	want := producerstate.New(producerstate.Config{})
	if p.Startup().SnapshotOffset >= 0 {
		for _, w := range e.tl[:e.tl.index(end)] {
			if err := want.Apply(w.data, crashClock()); err != nil {
				return err
			}
		}
	} else {
		want.SetMapEndOffset(start)
		for _, b := range log {
			if err := want.Apply(b, crashClock()); err != nil {
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
			i := e.tl.index(m.FirstOffset)
			if i < 0 || i >= len(e.tl) {
				return fmt.Errorf("producer %d: window entry at %d is not a batch written", pe.ProducerID, m.FirstOffset)
			}
			res, err := p.Append(bytes.Clone(e.tl[i].data))
			if err != nil || !res.Duplicate || res.BaseOffset != m.FirstOffset || res.LastOffset != m.LastOffset {
				return fmt.Errorf("retry of producer %d epoch %d seq %d (at %d..%d): %+v, %v; want DUPLICATE",
					pe.ProducerID, pe.Epoch, m.FirstSeq, m.FirstOffset, m.LastOffset, res, err)
			}
		}
	}
	if p.EndOffset() != end {
		return fmt.Errorf("retries moved the log end from %d to %d", end, p.EndOffset())
	}

	if o.resend {
		if err := resendLost(p, e.tl); err != nil {
			return err
		}
	}
	if o.newAppend {
		at := p.EndOffset()
		res, err := p.Append(producerBatch(1<<40, 0, 0, 2, crashTS))
		if err != nil || res.Duplicate || res.BaseOffset != at {
			return fmt.Errorf("new producer's first batch after recovery: %+v, %v; want OK at %d", res, err, at)
		}
		if res, err = p.Append(batchOf("after recovery")); err != nil || res.BaseOffset != at+2 {
			return fmt.Errorf("plain batch after recovery: %+v, %v; want OK at %d", res, err, at+2)
		}
	}
	return nil
}

// resendLost sends the batches of tl past the log end again, in order, as
// their producers retry what was not acknowledged: each must be accepted
// (not a duplicate, not refused) at the offsets it had.
func resendLost(p *logstore.Partition, tl timeline) error {
	i := tl.index(p.EndOffset())
	if i < 0 {
		return fmt.Errorf("log end %d is not a batch boundary of what was written", p.EndOffset())
	}
	for _, w := range tl[i:] {
		res, err := p.Append(bytes.Clone(w.data))
		if err != nil || res.Duplicate || res.BaseOffset != w.base || res.LastOffset != w.last {
			return fmt.Errorf("re-send of lost batch producer %d epoch %d seq %d: %+v, %v; want OK at %d..%d", w.pid, w.epoch, w.seq, res, err, w.base, w.last)
		}
	}
	return nil
}

// readLog returns copies of every batch of p, each parsed and validated
// (CRC included).
func readLog(p *logstore.Partition) ([]recordbatch.Batch, error) {
	return readBatches(p, true)
}

// readBatches returns copies of every batch of p, each parsed, and
// validated (CRC included) when validate is set.
func readBatches(p *logstore.Partition, validate bool) ([]recordbatch.Batch, error) {
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

// crashEnv is a real directory where stores are opened on crashed images:
// the store's root (and .lock) on the OS, the partition directory on the
// image, and the bbolt snapshot db, which the FS seam does not reach, in
// the real partition directory.
type crashEnv struct {
	root  string
	topic string
	opts  logstore.Options // the filesystem (WithFS) is set per image
}

func (e *crashEnv) pdir() string { return filepath.Join(e.root, e.topic+"-0") }

func (e *crashEnv) dbPath() string { return filepath.Join(e.pdir(), snapshot.FileName) }

// readDB returns the snapshot db's bytes, nil when there is none.
func (e *crashEnv) readDB() ([]byte, error) {
	data, err := os.ReadFile(e.dbPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// setDB makes the real partition directory hold exactly db as its
// snapshot db (none when nil), and nothing else.
func (e *crashEnv) setDB(db []byte) error {
	if err := os.RemoveAll(e.pdir()); err != nil {
		return err
	}
	if err := os.MkdirAll(e.pdir(), 0o755); err != nil {
		return err
	}
	if db == nil {
		return nil
	}
	return os.WriteFile(e.dbPath(), db, 0o644)
}

// open opens the store on img with db as its snapshot db, and the
// partition.
func (e *crashEnv) open(img *crashfs.FS, db []byte) (*logstore.Store, *logstore.Partition, error) {
	if err := e.setDB(db); err != nil {
		return nil, nil, err
	}
	return e.reopenAsIs(img)
}

// checkImage opens a store on img (db as its snapshot db), runs the
// oracle, and closes it cleanly.
func (e *crashEnv) checkImage(img *crashfs.FS, db []byte, ex expect, o checkOptions) error {
	pred, predicted, err := e.predictOpen(img)
	if err != nil {
		return err
	}
	before := img.Files()
	s, p, err := e.open(img, db)
	if err != nil {
		return err
	}
	err = checkNothingThrownAway(before, img.Files(), p.StartOffset())
	if err == nil && predicted {
		err = e.checkPrediction(pred, p.Recovery(), img.Files())
	}
	if err == nil {
		err = oracle(p, ex, o)
	}
	if err == nil && o.diverge {
		return e.diverge(s, p, img, ex.tl)
	}
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after the checks: %w", cerr)
	}
	if err != nil || !o.reopen {
		return err
	}
	// Recovery is idempotent and the clean close complete: a reopen
	// finds the same log and state, with nothing to replay.
	end := p.EndOffset()
	state := p.ProducerSnapshot()
	s, p, err = e.reopenAsIs(img)
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
func (e *crashEnv) diverge(s *logstore.Store, p *logstore.Partition, img *crashfs.FS, tl timeline) error {
	recovered := p.EndOffset()
	history := slices.Clone(tl[:tl.index(recovered)])
	for seq := int32(0); p.EndOffset() <= tl.end(); seq += 5 {
		b := producerBatch(1<<41, 0, seq, 5, crashTS)
		w := newWritten(b, p.EndOffset())
		if _, err := p.Append(b); err != nil {
			return errors.Join(fmt.Errorf("second life: %w", err), s.Close())
		}
		history = append(history, w)
	}
	killed := img.Crash(crashfs.KeepAll, nil)
	db, err := e.readDB()
	if err != nil {
		return errors.Join(err, s.Close())
	}
	s.Close() // its close snapshot goes to the db, which setDB puts back
	s, p, err = e.open(killed, db)
	if err != nil {
		return fmt.Errorf("second life: reopen: %w", err)
	}
	defer s.Close()
	if err := oracle(p, expect{tl: history, acked: len(history), durable: true}, checkOptions{}); err != nil {
		return fmt.Errorf("second life, after writing past a recovered end of %d: %w", recovered, err)
	}
	return nil
}

// reopenAsIs opens the store on img without touching the snapshot db.
func (e *crashEnv) reopenAsIs(img *crashfs.FS) (*logstore.Store, *logstore.Partition, error) {
	opts := e.opts.WithFS(img)
	opts.LockTimeout = -1
	s, err := logstore.Open(e.root, opts)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.Partition(e.topic, 0)
	if err != nil {
		return nil, nil, errors.Join(err, s.Close())
	}
	return s, p, nil
}

// withCrashSegments returns o with the segment layout of the crash
// workloads, on the crash clock: small segments, so rolls (and
// snapshots) come every few batches, an index entry every few batches,
// and retention when asked.
func withCrashSegments(o logstore.Options, segBytes, retention int64) logstore.Options {
	o.SegmentBytes, o.IndexIntervalBytes, o.RetentionBytes = segBytes, 200, retention
	return o.WithClock(crashClock)
}
