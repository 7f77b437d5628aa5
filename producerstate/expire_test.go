package producerstate_test

import (
	"slices"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

func TestDefaultConfig(t *testing.T) {
	if producerstate.DefaultExpireAfter != 24*time.Hour {
		t.Fatal("DefaultExpireAfter is not one day")
	}
	if c := producerstate.DefaultConfig(); c.ExpireAfter != producerstate.DefaultExpireAfter || c.MaxProducers != 0 {
		t.Fatalf("DefaultConfig %+v", c)
	}
	if c := producerstate.New(producerstate.DefaultConfig()).Config(); c != producerstate.DefaultConfig() {
		t.Fatalf("Config %+v", c)
	}
}

func TestExpiry(t *testing.T) {
	// Scenario 13 [PSMT testPidExpirationTimeout], with an injected clock,
	// but judged on the store's clock: the time the batch was accepted,
	// not its timestamp. After expiry the producer is unknown, which in
	// this store means its next batch must start at 0 (Kafka takes any
	// sequence).
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	p := newPartition(t, cfg)
	// Producer 1's records say ts0 but the store takes them a minute
	// later; producer 2's say a minute later but the store takes them at
	// now0.
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: ts0}), now0.Add(time.Minute)), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, seq: 0, ts: ts0 + 60_000}), now0), producerstate.OK)

	edge := now0.Add(time.Hour) // producer 2 seen + ExpireAfter
	justBefore := edge.Add(-time.Millisecond)
	want(t, p.st.Check(data(t, bspec{pid: 2, seq: 1}), justBefore), producerstate.OK)
	wantDup(t, p.st.Check(data(t, bspec{pid: 2, seq: 0}), justBefore), 1, 1)
	if gone := p.st.ExpireProducers(justBefore); len(gone) != 0 {
		t.Fatalf("expired %v before the time", gone)
	}

	// At seen + ExpireAfter (Kafka's >=) producer 2 is unknown to Check,
	// even before ExpireProducers removes it; producer 1, seen a minute
	// later although its timestamps are older, is still known.
	want(t, p.st.Check(data(t, bspec{pid: 2, seq: 1}), edge), producerstate.OutOfOrder,
		"producer 2 epoch 0: expired after 1h0m0s idle, so unknown again: must start at sequence 0, got 1")
	want(t, p.st.Check(data(t, bspec{pid: 2, seq: 0}), edge), producerstate.OK) // not a duplicate any more
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1}), edge), producerstate.OK)
	wantDup(t, p.st.Check(data(t, bspec{pid: 1, seq: 0}), edge), 0, 0)
	if gone := p.st.ExpireProducers(edge); !slices.Equal(gone, []int64{2}) || p.st.Len() != 1 {
		t.Fatalf("expired %v, want [2]; %d left", gone, p.st.Len())
	}

	late := now0.Add(time.Hour + time.Minute)
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1}), late), producerstate.OutOfOrder, "expired after 1h0m0s idle")
	if gone := p.st.ExpireProducers(late); !slices.Equal(gone, []int64{1}) {
		t.Fatalf("expired %v, want [1]", gone)
	}
	if p.st.Len() != 0 {
		t.Fatal("expired producers remain")
	}
	want(t, p.send(data(t, bspec{pid: 1, seq: 1}), late), producerstate.OutOfOrder, "unknown producer must start at sequence 0, got 1")
	want(t, p.send(data(t, bspec{pid: 1, seq: 0}), late), producerstate.OK)
}

// TestExpiryIgnoresRecordTimestamps: a producer whose record timestamps
// lag the store's clock by more than ExpireAfter, lead it, or are
// missing (-1) is remembered like any other. Judged on its timestamps
// (Kafka's rule) it would be unknown before every batch: its next
// sequence refused OUT_OF_ORDER, a retry of its first batch written
// twice.
func TestExpiryIgnoresRecordTimestamps(t *testing.T) {
	for name, ts := range map[string]int64{
		"no timestamp":    -1,
		"two days behind": now0.Add(-48 * time.Hour).UnixMilli(),
		"a year behind":   now0.Add(-365 * 24 * time.Hour).UnixMilli(),
		"two days ahead":  now0.Add(48 * time.Hour).UnixMilli(),
	} {
		t.Run(name, func(t *testing.T) {
			p := newPartition(t, producerstate.DefaultConfig())
			first := data(t, bspec{pid: 1, seq: 0, n: 2, ts: ts})
			if first.MaxTimestamp() != ts {
				t.Fatalf("max timestamp %d, want %d", first.MaxTimestamp(), ts)
			}
			want(t, p.send(first, now0), producerstate.OK)
			// The retry a second later is the same batch: DUPLICATE.
			wantDup(t, p.send(first, now0.Add(time.Second)), 0, 1)
			want(t, p.send(data(t, bspec{pid: 1, seq: 2, ts: ts}), now0.Add(time.Minute)), producerstate.OK)
			if gone := p.st.ExpireProducers(now0.Add(time.Hour)); len(gone) != 0 {
				t.Fatalf("expired %v an hour after its last batch", gone)
			}
			e := mustProducer(t, p.st, 1)
			if e.LastTimestamp != ts || e.LastSeen != now0.Add(time.Minute).UnixMilli() {
				t.Fatalf("last timestamp %d, seen %d: want the record's %d and the store's %d", e.LastTimestamp, e.LastSeen, ts, now0.Add(time.Minute).UnixMilli())
			}
			// A day after the store last saw it, it expires, whatever
			// its timestamps say.
			dayLater := now0.Add(time.Minute + 24*time.Hour)
			want(t, p.st.Check(data(t, bspec{pid: 1, seq: 3, ts: ts}), dayLater.Add(-time.Millisecond)), producerstate.OK)
			want(t, p.st.Check(data(t, bspec{pid: 1, seq: 3, ts: ts}), dayLater), producerstate.OutOfOrder, "expired after 24h0m0s idle")
		})
	}
}

func TestExpiryKeepsOpenTransactions(t *testing.T) {
	// Scenario 13 [PSMT testProducersWithOngoingTransactionsDontExpire].
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, seq: 0}), now0), producerstate.OK)
	muchLater := now0.Add(30 * 24 * time.Hour)
	if gone := p.st.ExpireProducers(muchLater); !slices.Equal(gone, []int64{2}) {
		t.Fatalf("expired %v, want [2]", gone)
	}
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1, txn: true}), muchLater), producerstate.OK)
	// The marker closes the transaction; the producer then expires an
	// hour after the store took the marker, whatever its timestamp.
	markerTS := ts0 + 10_000
	want(t, p.send(marker(t, 1, 0, true, 0, markerTS), muchLater), producerstate.OK)
	if gone := p.st.ExpireProducers(muchLater.Add(time.Hour - time.Millisecond)); len(gone) != 0 {
		t.Fatalf("expired %v early", gone)
	}
	if gone := p.st.ExpireProducers(muchLater.Add(time.Hour)); !slices.Equal(gone, []int64{1}) {
		t.Fatalf("expired %v, want [1]", gone)
	}
}

func TestExpiryOff(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Hour} {
		p := newPartition(t, producerstate.Config{ExpireAfter: d})
		want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: 1}), now0), producerstate.OK)
		far := now0.Add(100 * 365 * 24 * time.Hour)
		if gone := p.st.ExpireProducers(far); gone != nil {
			t.Fatalf("ExpireAfter %v: expired %v", d, gone)
		}
		want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1}), far), producerstate.OK)
	}
}

func TestExpiryExtremeSeenTimes(t *testing.T) {
	// Seen times far from the clock neither overflow nor panic: one in
	// the future is not expired, one from long ago is; record timestamps
	// play no part.
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	st := producerstate.FromSnapshot(cfg, producerstate.Snapshot{Producers: []producerstate.Entry{
		{ProducerID: 1, TxnFirstOffset: -1, LastTimestamp: -1 << 62, LastSeen: 1 << 62},
		{ProducerID: 2, TxnFirstOffset: -1, LastTimestamp: 1 << 62, LastSeen: -1 << 62},
		{ProducerID: 3, TxnFirstOffset: -1, LastTimestamp: ts0, LastSeen: -1},
	}})
	for _, now := range []time.Time{now0, {}, time.Unix(1<<40, 0)} {
		for pid := int64(1); pid <= 3; pid++ {
			st.Check(data(t, bspec{pid: pid, seq: 1}), now)
		}
	}
	if gone := st.ExpireProducers(now0); !slices.Equal(gone, []int64{2, 3}) {
		t.Fatalf("expired %v, want [2 3]", gone)
	}
}

// TestUnknownSeen: a producer loaded without a seen time (from a snapshot
// written before seen times were kept, or from Kafka's file) is never
// judged expired by Check, and ExpireProducers counts it as seen at its
// now: it is remembered a full ExpireAfter from there, then forgotten.
func TestUnknownSeen(t *testing.T) {
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	st := producerstate.FromSnapshot(cfg, producerstate.Snapshot{Offset: 10, Producers: []producerstate.Entry{
		{ProducerID: 1, TxnFirstOffset: -1, LastTimestamp: -1, LastSeen: producerstate.SeenUnknown,
			Batches: []producerstate.BatchMeta{{FirstSeq: 0, LastSeq: 1, FirstOffset: 8, LastOffset: 9, Timestamp: -1}}},
		{ProducerID: 2, TxnFirstOffset: -1, LastTimestamp: ts0, LastSeen: ts0},
	}})
	open := now0.Add(30 * 24 * time.Hour)
	want(t, st.Check(data(t, bspec{pid: 1, seq: 2}), open), producerstate.OK)
	want(t, st.Check(data(t, bspec{pid: 2, seq: 1}), open), producerstate.OutOfOrder, "expired")
	if gone := st.ExpireProducers(open); !slices.Equal(gone, []int64{2}) {
		t.Fatalf("expired %v, want [2]", gone)
	}
	if e := mustProducer(t, st, 1); e.LastSeen != open.UnixMilli() {
		t.Fatalf("seen %d, want the time of ExpireProducers %d", e.LastSeen, open.UnixMilli())
	}
	wantDup(t, st.Check(data(t, bspec{pid: 1, seq: 0, n: 2}), open.Add(time.Hour-time.Millisecond)), 8, 9)
	if gone := st.ExpireProducers(open.Add(time.Hour)); !slices.Equal(gone, []int64{1}) {
		t.Fatalf("expired %v, want [1]", gone)
	}
}

// TestExpiredProducerReturns: a producer that Check judges expired, but
// that ExpireProducers has not removed, comes back at sequence 0 in the
// same epoch. The window starts over (the sequence restarted), and the
// live state still equals a replay of the log but for the seen times,
// which the log does not hold.
func TestExpiredProducerReturns(t *testing.T) {
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	p := newPartition(t, cfg)
	for seq := int32(0); seq < 9; seq += 3 {
		want(t, p.send(data(t, bspec{pid: 1, seq: seq, n: 3}), now0), producerstate.OK)
	}
	want(t, p.send(marker(t, 1, 0, true, 4, ts0), now0), producerstate.OK)
	later := now0.Add(2 * time.Hour)
	tsLater := later.UnixMilli()
	want(t, p.send(data(t, bspec{pid: 1, seq: 3, n: 3, ts: tsLater}), later), producerstate.OutOfOrder)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, n: 3, ts: tsLater}), later), producerstate.OK)
	e := mustProducer(t, p.st, 1)
	if got := fmtWindow(e.Batches); got != "[0..2]@10..12" {
		t.Fatalf("window %s, want only the new run", got)
	}
	if e.CoordinatorEpoch != 4 {
		t.Fatalf("coordinator epoch %d: a returning producer keeps it", e.CoordinatorEpoch)
	}
	wantDup(t, p.send(data(t, bspec{pid: 1, seq: 0, n: 3, ts: tsLater}), later), 10, 12)
	want(t, p.send(data(t, bspec{pid: 1, seq: 3, n: 3, ts: tsLater}), later), producerstate.OK)
	if full := replay(t, cfg, p.log); !sameButSeen(full, p.st) {
		t.Fatalf("replay differs:\n%s", diff(full, p.st))
	}
	// Replayed at a restart, the producer counts as seen then.
	restart := later.Add(time.Minute)
	full := replayAt(t, producerstate.New(cfg), p.log, restart)
	if e := mustProducer(t, full, 1); e.LastSeen != restart.UnixMilli() {
		t.Fatalf("seen %d after the replay, want the restart's %d", e.LastSeen, restart.UnixMilli())
	}
}

// TestCapBySeenTime: the cap forgets the producer the store has not
// seen for longest, whatever the record timestamps say.
func TestCapBySeenTime(t *testing.T) {
	cfg := producerstate.Config{MaxProducers: 2}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: ts0 + 1000}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, seq: 0, ts: -1}), now0.Add(time.Second)), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 3, seq: 0, ts: ts0}), now0.Add(2*time.Second)), producerstate.OK)
	assertProducers(t, p.st, 2, 3)
}

func TestCap(t *testing.T) {
	// Every batch at one store time (now0): the longest idle is then the
	// one whose newest batch is oldest in the log; record timestamps play
	// no part.
	cfg := producerstate.Config{MaxProducers: 3}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 10, seq: 0, ts: ts0 + 50}), now0), producerstate.OK) // offset 0
	want(t, p.send(data(t, bspec{pid: 11, seq: 0, ts: ts0 + 90}), now0), producerstate.OK) // 1
	want(t, p.send(data(t, bspec{pid: 12, seq: 0, ts: ts0 + 20}), now0), producerstate.OK) // 2
	// Producer 10 writes again: its LastApplied is its newest batch's.
	want(t, p.send(data(t, bspec{pid: 10, seq: 1, ts: ts0 + 60}), now0), producerstate.OK) // 3
	if p.st.Len() != 3 {
		t.Fatalf("len %d", p.st.Len())
	}
	// A fourth producer evicts the longest idle: 11, last at offset 1,
	// although its timestamp is the newest.
	want(t, p.send(data(t, bspec{pid: 13, seq: 0, ts: ts0 + 70}), now0), producerstate.OK) // 4
	assertProducers(t, p.st, 10, 12, 13)
	// The evicted producer is unknown again.
	want(t, p.st.Check(data(t, bspec{pid: 11, seq: 1}), now0), producerstate.OutOfOrder, "unknown producer")
	// A new producer is never its own victim; a marker adds a producer
	// too.
	want(t, p.send(data(t, bspec{pid: 14, seq: 0, ts: ts0}), now0), producerstate.OK) // 5: 12 goes
	assertProducers(t, p.st, 10, 13, 14)
	want(t, p.send(marker(t, 15, 0, true, 0, ts0+80), now0), producerstate.OK) // 6: 10 goes
	assertProducers(t, p.st, 13, 14, 15)
	if full := replay(t, cfg, p.log); !full.Equal(p.st) {
		t.Fatalf("replay differs:\n%s", diff(full, p.st))
	}
}

// TestCapReplayEvictsAsLive: with the cap, a replay at one time evicts
// the producers the live state evicted by seen time, also when record
// timestamps do not follow the clock (a lagging client; a retry accepted
// after an eviction carries its old timestamp), after every batch, from
// empty and from a snapshot.
func TestCapReplayEvictsAsLive(t *testing.T) {
	cfg := producerstate.Config{MaxProducers: 2}
	p := newPartition(t, cfg)
	var live []producerstate.Snapshot // after each batch
	send := func(b recordbatch.Batch, now time.Time, ids ...int64) {
		t.Helper()
		want(t, p.send(b, now), producerstate.OK)
		assertProducers(t, p.st, ids...)
		live = append(live, p.st.Snapshot())
	}
	first := data(t, bspec{pid: 1, seq: 0, ts: ts0})
	send(first, now0, 1)
	send(data(t, bspec{pid: 2, seq: 0, ts: ts0 - 5000}), now0.Add(time.Second), 1, 2)   // its clock lags
	send(data(t, bspec{pid: 3, seq: 0, ts: ts0 + 2000}), now0.Add(2*time.Second), 2, 3) // 1 goes, seen first
	// Producer 1 retries its first batch: unknown, so it is written again
	// with its old timestamp, and 2 goes.
	send(first, now0.Add(3*time.Second), 1, 3)
	open := now0.Add(time.Hour)
	for k := 1; k <= len(p.log); k++ {
		if got := replayAt(t, producerstate.New(cfg), p.log[:k], open).Snapshot(); !got.EqualIgnoringSeen(live[k-1]) {
			t.Errorf("replay of %d batches from empty:\n got %+v\nwant %+v", k, got, live[k-1])
		}
		for j := 1; j < k; j++ {
			from := producerstate.FromSnapshot(cfg, live[j-1])
			if got := replayAt(t, from, p.log[j:k], open).Snapshot(); !got.EqualIgnoringSeen(live[k-1]) {
				t.Errorf("replay of %d batches from the snapshot after %d:\n got %+v\nwant %+v", k, j, got, live[k-1])
			}
		}
	}
}

func TestCapSparesOpenTransactions(t *testing.T) {
	cfg := producerstate.Config{MaxProducers: 2}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: ts0, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, seq: 0, ts: ts0 + 1, txn: true}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 3, seq: 0, ts: ts0 + 2}), now0), producerstate.OK)
	// Every other producer has an open transaction: the cap is exceeded
	// rather than a transaction forgotten.
	assertProducers(t, p.st, 1, 2, 3)
	want(t, p.send(data(t, bspec{pid: 4, seq: 0, ts: ts0 + 3}), now0), producerstate.OK)
	assertProducers(t, p.st, 1, 2, 4)
	// Once the transactions close, the next new producer brings the count
	// back to the cap.
	want(t, p.send(marker(t, 1, 0, true, 0, ts0+4), now0), producerstate.OK)
	want(t, p.send(marker(t, 2, 0, false, 0, ts0+5), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 5, seq: 0, ts: ts0 + 6}), now0), producerstate.OK)
	assertProducers(t, p.st, 2, 5)
	if full := replay(t, cfg, p.log); !full.Equal(p.st) {
		t.Fatalf("replay differs:\n%s", diff(full, p.st))
	}
}

func assertProducers(t testing.TB, st *producerstate.State, ids ...int64) {
	t.Helper()
	var got []int64
	for _, e := range st.Snapshot().Producers {
		got = append(got, e.ProducerID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("producers %v, want %v", got, ids)
	}
}
