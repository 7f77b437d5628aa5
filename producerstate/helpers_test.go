package producerstate_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// ts0 is the record timestamp (ms) the tests start from, and now0 the
// clock at the same instant.
const ts0 int64 = 1_700_000_000_000

var now0 = time.UnixMilli(ts0)

// noExpiry is the configuration of tests that are not about expiry.
var noExpiry = producerstate.Config{}

// bspec describes a data batch from a producer.
type bspec struct {
	pid   int64
	epoch int16
	seq   int32
	n     int   // records
	ts    int64 // timestamp of every record; 0 means ts0
	txn   bool
}

// data builds the batch bs describes, at base offset 0 as a client sends
// it, with n records of consecutive offsets.
func data(t testing.TB, bs bspec) recordbatch.Batch {
	t.Helper()
	if bs.n == 0 {
		bs.n = 1
	}
	if bs.ts == 0 {
		bs.ts = ts0
	}
	bl := recordbatch.NewBuilder(0)
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = bs.pid, bs.epoch, bs.seq
	bl.Transactional = bs.txn
	for i := range bs.n {
		if err := bl.Append(bs.ts, nil, fmt.Appendf(nil, "v%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	return build(t, bl)
}

// spread builds a batch whose two records are lastDelta offsets apart, as
// compaction leaves them: its last sequence is seq advanced by lastDelta.
// It lets a test reach the int32 wrap without 2^31 records.
func spread(t testing.TB, pid int64, epoch int16, seq, lastDelta int32, ts int64) recordbatch.Batch {
	t.Helper()
	bl := recordbatch.NewBuilder(0)
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = pid, epoch, seq
	if err := bl.Append(ts, nil, []byte("a"), nil); err != nil {
		t.Fatal(err)
	}
	if lastDelta > 0 {
		if err := bl.AppendWithOffset(int64(lastDelta), ts, nil, []byte("b"), nil); err != nil {
			t.Fatal(err)
		}
	}
	return build(t, bl)
}

// plain builds a batch without a producer id.
func plain(t testing.TB, n int) recordbatch.Batch {
	t.Helper()
	bl := recordbatch.NewBuilder(0)
	for range n {
		if err := bl.Append(ts0, nil, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	return build(t, bl)
}

// marker builds a COMMIT (commit) or ABORT marker batch.
func marker(t testing.TB, pid int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) recordbatch.Batch {
	t.Helper()
	typ := recordbatch.ControlAbort
	if commit {
		typ = recordbatch.ControlCommit
	}
	raw, err := recordbatch.AppendEndTxnBatch(nil, 0, ts, -1, pid, epoch, recordbatch.EndTxnMarker{Type: typ, CoordinatorEpoch: coordinatorEpoch})
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, raw)
}

// emptyControl builds a control batch without records, as compaction
// leaves a marker whose transaction was cleaned away.
func emptyControl(t testing.TB, pid int64, epoch int16) recordbatch.Batch {
	t.Helper()
	h := recordbatch.Header{
		Attributes:    recordbatch.MakeAttributes(recordbatch.CodecNone, recordbatch.CreateTime, true, true, false),
		BaseTimestamp: ts0,
		MaxTimestamp:  ts0,
		ProducerID:    pid,
		ProducerEpoch: epoch,
		BaseSequence:  -1,
	}
	return parse(t, recordbatch.AppendBatch(nil, h, nil))
}

// leaderChange builds a control batch of producer pid whose record is a
// LEADER_CHANGE record, not a transaction marker.
func leaderChange(t testing.TB, pid int64, epoch int16) recordbatch.Batch {
	t.Helper()
	bl := recordbatch.NewBuilder(0)
	bl.Control, bl.Transactional = true, true
	bl.ProducerID, bl.ProducerEpoch = pid, epoch
	if err := bl.Append(ts0, recordbatch.AppendControlKey(nil, recordbatch.ControlLeaderChange), []byte{0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	return build(t, bl)
}

func build(t testing.TB, bl *recordbatch.Builder) recordbatch.Batch {
	t.Helper()
	raw, err := bl.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, raw)
}

func parse(t testing.TB, raw []byte) recordbatch.Batch {
	t.Helper()
	b, err := recordbatch.Parse(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// partition simulates one partition: a log of appended batches, its end
// offset, and the live producer state. It is what the root package does,
// without files.
type partition struct {
	t   testing.TB
	cfg producerstate.Config
	st  *producerstate.State
	log []recordbatch.Batch
	// clock is the store's clock: the time of the newest send (now0
	// before any), at which appendBatch applies.
	clock time.Time
}

func newPartition(t testing.TB, cfg producerstate.Config) *partition {
	return &partition{t: t, cfg: cfg, st: producerstate.New(cfg), clock: now0}
}

// send runs b through the check at now and, when it is OK, appends a copy
// at the log end and applies it. b itself is left as the client holds it,
// so a test can send it again.
func (p *partition) send(b recordbatch.Batch, now time.Time) producerstate.Decision {
	p.t.Helper()
	p.clock = now
	d := p.st.Check(b, now)
	if d.Outcome == producerstate.OK {
		p.appendBatch(b)
	}
	return d
}

// appendBatch appends a copy of b at the log end and applies it at the
// clock, without any check.
func (p *partition) appendBatch(b recordbatch.Batch) recordbatch.Batch {
	p.t.Helper()
	c := recordbatch.Batch(bytes.Clone(b))
	c.SetBaseOffset(p.st.MapEndOffset())
	if err := p.st.Apply(c, p.clock); err != nil {
		p.t.Fatalf("Apply at offset %d: %v", c.BaseOffset(), err)
	}
	p.log = append(p.log, c)
	return c
}

// restart replaces the live state with FromSnapshot of its snapshot, as a
// clean close and reopen does.
func (p *partition) restart() {
	p.t.Helper()
	before := p.st
	p.st = producerstate.FromSnapshot(p.cfg, before.Snapshot())
	if !p.st.Equal(before) {
		p.t.Fatalf("FromSnapshot(Snapshot()) differs:\n%s", diff(before, p.st))
	}
}

// replay applies log to a new state from empty, as startup without a
// snapshot does, at now0 (the time of the open).
func replay(t testing.TB, cfg producerstate.Config, log []recordbatch.Batch) *producerstate.State {
	t.Helper()
	return replayOnto(t, producerstate.New(cfg), log)
}

func replayOnto(t testing.TB, st *producerstate.State, log []recordbatch.Batch) *producerstate.State {
	t.Helper()
	return replayAt(t, st, log, now0)
}

// replayAt applies log onto st as a startup at now does: every producer
// replayed counts as seen at now.
func replayAt(t testing.TB, st *producerstate.State, log []recordbatch.Batch, now time.Time) *producerstate.State {
	t.Helper()
	for _, b := range log {
		if err := st.Apply(b, now); err != nil {
			t.Fatalf("replay at offset %d: %v", b.BaseOffset(), err)
		}
	}
	return st
}

// sameButSeen reports whether a and b hold the same producers with the
// same entries and map end offset, their seen times aside: what a replay
// of the log determines.
func sameButSeen(a, b *producerstate.State) bool {
	return a.Snapshot().EqualIgnoringSeen(b.Snapshot())
}

// diff describes how two states differ, through their snapshots.
func diff(a, b *producerstate.State) string {
	sa, sb := a.Snapshot(), b.Snapshot()
	var out strings.Builder
	if sa.Offset != sb.Offset {
		fmt.Fprintf(&out, "map end offset %d vs %d\n", sa.Offset, sb.Offset)
	}
	ids := map[int64]bool{}
	for _, e := range sa.Producers {
		ids[e.ProducerID] = true
	}
	for _, e := range sb.Producers {
		ids[e.ProducerID] = true
	}
	find := func(s producerstate.Snapshot, id int64) (producerstate.Entry, bool) {
		i := slices.IndexFunc(s.Producers, func(e producerstate.Entry) bool { return e.ProducerID == id })
		if i < 0 {
			return producerstate.Entry{}, false
		}
		return s.Producers[i], true
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		ea, oka := find(sa, id)
		eb, okb := find(sb, id)
		if oka != okb || !ea.Equal(eb) {
			fmt.Fprintf(&out, "producer %d:\n  %s\n  %s\n", id, fmtEntry(ea, oka), fmtEntry(eb, okb))
		}
	}
	return out.String()
}

func fmtEntry(e producerstate.Entry, ok bool) string {
	if !ok {
		return "(absent)"
	}
	return fmt.Sprintf("epoch %d coord %d txn %d ts %d seen %d applied %d window %s", e.Epoch, e.CoordinatorEpoch, e.TxnFirstOffset, e.LastTimestamp, e.LastSeen, e.LastApplied, fmtWindow(e.Batches))
}

// fmtWindow prints a window as the issue does: [0..2] [3..4], with the
// offsets after @.
func fmtWindow(w []producerstate.BatchMeta) string {
	parts := make([]string, len(w))
	for i, m := range w {
		parts[i] = fmt.Sprintf("[%d..%d]@%d..%d", m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset)
	}
	return strings.Join(parts, " ")
}

// seqs prints a producer's window as sequence ranges only: "[0..2] [3..4]".
func seqs(t testing.TB, st *producerstate.State, pid int64) string {
	t.Helper()
	e, ok := st.Producer(pid)
	if !ok {
		return "(unknown)"
	}
	parts := make([]string, len(e.Batches))
	for i, m := range e.Batches {
		parts[i] = fmt.Sprintf("[%d..%d]", m.FirstSeq, m.LastSeq)
	}
	return strings.Join(parts, " ")
}

// want asserts a decision's outcome, and that its reason contains each of
// reasons.
func want(t testing.TB, d producerstate.Decision, o producerstate.Outcome, reasons ...string) {
	t.Helper()
	if d.Outcome != o {
		t.Fatalf("outcome %s (%q), want %s", d.Outcome, d.Reason, o)
	}
	for _, r := range reasons {
		if !strings.Contains(d.Reason, r) {
			t.Fatalf("reason %q does not contain %q", d.Reason, r)
		}
	}
}

// wantDup asserts a DUPLICATE answered with offsets first..last.
func wantDup(t testing.TB, d producerstate.Decision, first, last int64) {
	t.Helper()
	if d.Outcome != producerstate.Duplicate || d.DuplicateFirst != first || d.DuplicateLast != last {
		t.Fatalf("got %s %d..%d (%q), want DUPLICATE %d..%d", d.Outcome, d.DuplicateFirst, d.DuplicateLast, d.Reason, first, last)
	}
}
