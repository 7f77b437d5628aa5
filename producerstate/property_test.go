package producerstate_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// The property test drives a simulated partition with random workloads of
// several producers: batches in sequence, retries of recent and old
// batches, sequence gaps, epoch bumps good and bad, fenced writers,
// transactions with markers and zombie coordinators, batches without a
// producer, huge batches that wrap the sequence, snapshots and restarts.
// A workload generator knows what each producer sent and what it must be
// told, so every decision is checked against it. At every restart the
// state rebuilt from a random earlier snapshot plus the log after it must
// equal a full replay from empty, and both must equal the live state.

// sentBatch is a batch a producer got OK for: the bytes as the client
// holds them, and the offsets the log gave it.
type sentBatch struct {
	b           recordbatch.Batch
	first, last int32
	offFirst    int64
	offLast     int64
}

// genProducer is what the generator knows of one producer.
type genProducer struct {
	pid     int64
	epoch   int16
	known   bool        // the partition should remember it
	run     []sentBatch // batches accepted in the current epoch, oldest first
	txnMode bool        // the client writes transactional batches
	open    bool        // a transaction is open
	coord   int32       // coordinator epoch the partition remembers
	seen    int64       // the store's clock (ms) when it last took a batch or marker of it
}

func (g *genProducer) next() int32 {
	if len(g.run) == 0 {
		return 0
	}
	return recordbatch.IncrementSequence(g.run[len(g.run)-1].last, 1)
}

type savedSnapshot struct {
	snap   producerstate.Snapshot
	logLen int
	run    int // restarts before it was taken
}

type workload struct {
	t     *testing.T
	r     *rand.Rand
	p     *partition
	prods []*genProducer
	snaps []savedSnapshot
	clock time.Time
	stats map[string]int
}

func TestPropertySnapshotReplay(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	wraps := 0
	for _, cfg := range []producerstate.Config{
		{},                             // no expiry, no cap
		{MaxProducers: 4},              // eviction by seen time, then log order, which a replay reproduces
		{ExpireAfter: 2 * time.Second}, // judged by Check on the store's clock; nothing removed
	} {
		total := map[string]int{}
		for seed := range uint64(seeds) {
			w := runWorkload(t, cfg, seed, 400)
			for k, v := range w.stats {
				total[k] += v
			}
		}
		t.Logf("config %+v: %v", cfg, total)
		for _, k := range []string{"OK", "DUPLICATE", "OUT_OF_ORDER", "FENCED", "INVALID_TXN_STATE", "restart"} {
			if total[k] == 0 {
				t.Errorf("config %+v: no %s in any workload", cfg, k)
			}
		}
		wraps += total["wrap"]
	}
	if wraps == 0 {
		t.Error("no workload wrapped a sequence")
	}
}

func runWorkload(t *testing.T, cfg producerstate.Config, seed uint64, ops int) *workload {
	w := &workload{
		t:     t,
		r:     rand.New(rand.NewPCG(seed, 0x5eed)),
		p:     newPartition(t, cfg),
		clock: now0,
		stats: map[string]int{},
	}
	for i := range 7 {
		w.prods = append(w.prods, &genProducer{pid: int64(100 + i*7), coord: -1})
	}
	for i := range ops {
		w.clock = w.clock.Add(time.Duration(w.r.IntN(50)) * time.Millisecond)
		w.step(seed, i)
	}
	w.restart(seed, ops)
	return w
}

// ts is the timestamp of a record the workload sends: the client's
// clock, which may lag the store's by days, lead it, or be missing (-1);
// neither expiry nor the cap may care.
func (w *workload) ts() int64 {
	switch w.r.IntN(4) {
	case 0:
		return -1
	case 1:
		return w.clock.Add(-48 * time.Hour).UnixMilli()
	case 2:
		return w.clock.Add(time.Duration(w.r.IntN(5000)) * time.Millisecond).UnixMilli()
	}
	return w.clock.UnixMilli()
}

func (w *workload) fail(seed uint64, step int, format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
}

// send sends b and checks the decision against what the generator
// expects; dupFirst and dupLast matter for a DUPLICATE.
func (w *workload) send(seed uint64, step int, what string, b recordbatch.Batch, expect producerstate.Outcome, dupFirst, dupLast int64) bool {
	w.t.Helper()
	d := w.p.send(b, w.clock)
	w.stats[d.Outcome.String()]++
	if d.Outcome != expect {
		w.fail(seed, step, "%s: %s (%q), want %s", what, d.Outcome, d.Reason, expect)
	}
	if expect == producerstate.Duplicate && (d.DuplicateFirst != dupFirst || d.DuplicateLast != dupLast) {
		w.fail(seed, step, "%s: DUPLICATE %d..%d, want %d..%d", what, d.DuplicateFirst, d.DuplicateLast, dupFirst, dupLast)
	}
	if d.Outcome.Refused() && d.Reason == "" {
		w.fail(seed, step, "%s: refusal without a reason", what)
	}
	return d.Outcome == producerstate.OK
}

// expired reports whether the partition must judge g expired now.
func (w *workload) expired(g *genProducer) bool {
	e := w.p.cfg.ExpireAfter
	return e > 0 && !g.open && w.clock.Sub(time.UnixMilli(g.seen)) >= e
}

// live reports whether the partition must judge g known now.
func (w *workload) live(g *genProducer) bool { return g.known && !w.expired(g) }

// accepted records an appended data batch in the generator's model. A
// producer that was expired, but not removed, keeps its window only when
// the batch continues it.
func (w *workload) accepted(g *genProducer, b recordbatch.Batch) {
	switch {
	case !g.known:
		g.run, g.coord = nil, -1
	case b.ProducerEpoch() != g.epoch:
		g.run = nil
	case len(g.run) > 0 && b.BaseSequence() != g.next():
		g.run = nil
		w.stats["expired-return"]++
	}
	g.epoch = b.ProducerEpoch()
	g.known = true
	g.seen = w.clock.UnixMilli()
	app := w.p.log[len(w.p.log)-1]
	g.run = append(g.run, sentBatch{b: b, first: b.BaseSequence(), last: b.LastSequence(), offFirst: app.BaseOffset(), offLast: app.LastOffset()})
	if b.Attributes().Transactional() && !g.open {
		g.open = true
	}
}

// markerAccepted records an appended marker in the model.
func (w *workload) markerAccepted(g *genProducer, epoch int16, coord int32) {
	if !g.known || epoch != g.epoch {
		g.run = nil
		g.epoch = epoch
	}
	g.known, g.open, g.coord, g.seen = true, false, coord, w.clock.UnixMilli()
}

// syncEvictions forgets, in the model, the producers the cap evicted.
// When the step added a producer, the cap must hold, except that it
// spares open transactions and the producer just added.
func (w *workload) syncEvictions(seed uint64, step int, added bool) {
	for _, g := range w.prods {
		if _, ok := w.p.st.Producer(g.pid); g.known && !ok {
			if g.open {
				w.fail(seed, step, "producer %d evicted with an open transaction", g.pid)
			}
			g.known, g.run, g.coord = false, nil, -1
			w.stats["evicted"]++
		}
	}
	if limit := w.p.cfg.MaxProducers; limit > 0 && added {
		open := 0
		for _, g := range w.prods {
			if g.open {
				open++
			}
		}
		if n := w.p.st.Len(); n > max(limit, open+1) {
			w.fail(seed, step, "%d producers, cap %d, %d open transactions", n, limit, open)
		}
	}
}

// verify compares the partition's entry of g with the model.
func (w *workload) verify(seed uint64, step int, g *genProducer) {
	w.t.Helper()
	e, ok := w.p.st.Producer(g.pid)
	if ok != g.known {
		w.fail(seed, step, "producer %d known %v, model %v", g.pid, ok, g.known)
	}
	if !ok {
		return
	}
	if e.Epoch != g.epoch || (e.TxnFirstOffset >= 0) != g.open || e.CoordinatorEpoch != g.coord || e.LastSeen != g.seen {
		w.fail(seed, step, "producer %d: %s; model epoch %d open %v coord %d seen %d", g.pid, fmtEntry(e, true), g.epoch, g.open, g.coord, g.seen)
	}
	win := g.run[max(0, len(g.run)-producerstate.WindowSize):]
	if len(e.Batches) != len(win) {
		w.fail(seed, step, "producer %d window %s, model has %d", g.pid, fmtWindow(e.Batches), len(win))
	}
	for i, m := range e.Batches {
		s := win[i]
		if m.FirstSeq != s.first || m.LastSeq != s.last || m.FirstOffset != s.offFirst || m.LastOffset != s.offLast {
			w.fail(seed, step, "producer %d window %s, model entry %d is [%d..%d]@%d..%d", g.pid, fmtWindow(e.Batches), i, s.first, s.last, s.offFirst, s.offLast)
		}
	}
}

func (w *workload) step(seed uint64, step int) {
	t, r := w.t, w.r
	g := w.prods[r.IntN(len(w.prods))]
	_, wasKnown := w.p.st.Producer(g.pid)
	defer func() {
		_, isKnown := w.p.st.Producer(g.pid)
		w.syncEvictions(seed, step, !wasKnown && isKnown)
		w.verify(seed, step, g)
	}()
	live := w.live(g)
	op := r.IntN(100)
	switch {
	case op < 30: // the next batch in sequence
		seq, epoch := g.next(), g.epoch
		if !live {
			seq = 0
		}
		b := data(t, bspec{pid: g.pid, epoch: epoch, seq: seq, n: 1 + r.IntN(4), ts: w.ts(), txn: g.txnMode})
		expect := producerstate.OK
		if live && g.open && !g.txnMode {
			expect = producerstate.InvalidTxnState
		}
		if w.send(seed, step, "next", b, expect, 0, 0) {
			w.accepted(g, b)
		}
	case op < 45: // a retry of one of the last 5 batches
		if !live || len(g.run) == 0 {
			return
		}
		k := 1 + r.IntN(min(len(g.run), producerstate.WindowSize))
		s := g.run[len(g.run)-k]
		w.send(seed, step, fmt.Sprintf("retry of the %d-th newest", k), s.b, producerstate.Duplicate, s.offFirst, s.offLast)
	case op < 50: // a retry older than the window
		if !live || len(g.run) <= producerstate.WindowSize {
			return
		}
		s := g.run[r.IntN(len(g.run)-producerstate.WindowSize)]
		if s.first == g.next() {
			return // the sequence came round: it would be in order
		}
		w.send(seed, step, "retry older than the window", s.b, producerstate.OutOfOrder, 0, 0)
	case op < 56: // a sequence gap
		gap := int32(1 + r.IntN(10))
		seq := recordbatch.IncrementSequence(g.next(), gap)
		if !live {
			seq = gap
		}
		w.send(seed, step, "gap", data(t, bspec{pid: g.pid, epoch: g.epoch, seq: seq, ts: w.ts(), txn: g.txnMode}), producerstate.OutOfOrder, 0, 0)
	case op < 62: // an epoch bump, through a marker when a transaction is open
		if !live {
			return
		}
		epoch := g.epoch + 1
		if g.open {
			m := marker(t, g.pid, epoch, false, g.coord, w.ts())
			if w.send(seed, step, "abort with a bumped epoch", m, producerstate.OK, 0, 0) {
				w.markerAccepted(g, epoch, g.coord)
			}
			return
		}
		b := data(t, bspec{pid: g.pid, epoch: epoch, seq: 0, n: 1 + r.IntN(3), ts: w.ts(), txn: g.txnMode})
		if w.send(seed, step, "bump", b, producerstate.OK, 0, 0) {
			w.accepted(g, b)
		}
	case op < 65: // a bumped epoch that does not start at 0
		if !live {
			return
		}
		b := data(t, bspec{pid: g.pid, epoch: g.epoch + 1, seq: int32(1 + r.IntN(5)), ts: w.ts(), txn: g.txnMode})
		w.send(seed, step, "bump not at 0", b, producerstate.OutOfOrder, 0, 0)
	case op < 69: // a fenced writer
		if !live || g.epoch == 0 {
			return
		}
		b := data(t, bspec{pid: g.pid, epoch: g.epoch - 1 - int16(r.IntN(int(g.epoch))), seq: int32(r.IntN(20)), ts: w.ts(), txn: g.txnMode})
		w.send(seed, step, "older epoch", b, producerstate.Fenced, 0, 0)
	case op < 77: // a COMMIT or ABORT from the coordinator
		coord := max(g.coord, 0) + int32(r.IntN(2))
		m := marker(t, g.pid, g.epoch, r.IntN(2) == 0, coord, w.ts())
		if w.send(seed, step, "marker", m, producerstate.OK, 0, 0) {
			w.markerAccepted(g, g.epoch, coord)
		}
	case op < 80: // a zombie coordinator
		if !live || g.coord < 1 {
			return
		}
		m := marker(t, g.pid, g.epoch, true, g.coord-1-int32(r.IntN(int(g.coord))), w.ts())
		w.send(seed, step, "zombie coordinator", m, producerstate.Fenced, 0, 0)
	case op < 85: // the client switches between transactional and not
		g.txnMode = !g.txnMode
	case op < 88: // a batch without producer
		w.send(seed, step, "no producer", plain(t, 1+r.IntN(3)), producerstate.OK, 0, 0)
	case op < 90: // a huge batch, to cross the int32 wrap within a few steps
		if !live || g.txnMode || g.open {
			return
		}
		first := g.next()
		b := spread(t, g.pid, g.epoch, first, int32(1<<30+r.IntN(1<<30)), w.ts())
		if b.LastSequence() < first {
			w.stats["wrap"]++
		}
		if w.send(seed, step, "huge batch", b, producerstate.OK, 0, 0) {
			w.accepted(g, b)
		}
	case op < 93:
		snap := w.p.st.Snapshot()
		w.snaps = append(w.snaps, savedSnapshot{snap: snap, logLen: len(w.p.log), run: w.stats["restart"]})
		open := map[int64]int64{}
		for _, e := range snap.Producers {
			if e.TxnFirstOffset >= 0 {
				open[e.ProducerID] = e.TxnFirstOffset
			}
		}
		if got := w.p.st.OpenTransactions(); !maps.Equal(got, open) {
			t.Fatalf("seed %d step %d: OpenTransactions %v, the snapshot's open transactions %v", seed, step, got, open)
		}
	case op < 96: // a pause, long enough for expiry
		w.clock = w.clock.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
	default:
		w.restart(seed, step)
	}
}

// restart checks the invariant and continues from a state rebuilt from a
// random snapshot (or from empty) plus the tail of the log.
func (w *workload) restart(seed uint64, step int) {
	w.t.Helper()
	// The restart happens at the clock: every producer replayed counts as
	// seen then. The log holds no seen times, so states are compared
	// without them; the seen times are checked against the model below.
	full := replayAt(w.t, producerstate.New(w.p.cfg), w.p.log, w.clock)
	if !sameButSeen(full, w.p.st) {
		w.fail(seed, step, "full replay differs from the live state:\n%s", diff(full, w.p.st))
	}
	// The restart continues from a snapshot taken since the last restart
	// (as a store loads its newest), or from empty; every saved snapshot
	// is compared below.
	rebuilt := producerstate.New(w.p.cfg)
	from := 0
	var recent []savedSnapshot
	for _, s := range w.snaps {
		if s.run == w.stats["restart"] {
			recent = append(recent, s)
		}
	}
	if len(recent) > 0 {
		s := recent[w.r.IntN(len(recent))]
		rebuilt, from = producerstate.FromSnapshot(w.p.cfg, s.snap), s.logLen
	}
	replayAt(w.t, rebuilt, w.p.log[from:], w.clock)
	if !sameButSeen(rebuilt, full) {
		w.fail(seed, step, "snapshot at log entry %d + tail differs from the full replay:\n%s", from, diff(rebuilt, full))
	}
	// Every saved snapshot, not only the one chosen.
	for _, s := range w.snaps {
		st := replayAt(w.t, producerstate.FromSnapshot(w.p.cfg, s.snap), w.p.log[s.logLen:], w.clock)
		if !sameButSeen(st, full) {
			w.fail(seed, step, "snapshot at log entry %d + tail differs from the full replay:\n%s", s.logLen, diff(st, full))
		}
	}
	// In the model, a producer with a batch or marker in the tail was
	// seen at the restart; the others keep the time the live state saw
	// them. No producer is seen earlier than it was live.
	for _, b := range w.p.log[from:] {
		if b.HasProducerID() {
			for _, g := range w.prods {
				if g.pid == b.ProducerID() {
					g.seen = w.clock.UnixMilli()
				}
			}
		}
	}
	for _, g := range w.prods {
		if e, ok := rebuilt.Producer(g.pid); ok {
			if live, _ := w.p.st.Producer(g.pid); e.LastSeen < live.LastSeen {
				w.fail(seed, step, "producer %d seen at %d after the restart, before the %d it was seen live", g.pid, e.LastSeen, live.LastSeen)
			}
		}
	}
	w.p.st = rebuilt
	w.stats["restart"]++
	for _, g := range w.prods {
		w.verify(seed, step, g)
	}
}

// TestPropertyWrapHelper checks the helper the workload uses to cross the
// wrap: spread's last sequence is its base advanced with wrap.
func TestPropertyWrapHelper(t *testing.T) {
	b := spread(t, 1, 0, math.MaxInt32-1, 5, ts0)
	if b.LastSequence() != 3 || b.LastOffsetDelta() != 5 {
		t.Fatalf("last sequence %d, delta %d", b.LastSequence(), b.LastOffsetDelta())
	}
}
