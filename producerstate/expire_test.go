package producerstate_test

import (
	"slices"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
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
	// Scenario 13 [PSMT testPidExpirationTimeout], with an injected clock.
	// Expiry is judged on the batch's timestamp, not on when it was
	// appended; after it the producer is unknown, which in this store
	// means its next batch must start at 0 (Kafka takes any sequence).
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: ts0}), now0.Add(time.Minute)), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 2, seq: 0, ts: ts0 + 1}), now0), producerstate.OK)

	edge := now0.Add(time.Hour) // ts0 + ExpireAfter
	justBefore := edge.Add(-time.Millisecond)
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1}), justBefore), producerstate.OK)
	wantDup(t, p.st.Check(data(t, bspec{pid: 1, seq: 0}), justBefore), 0, 0)
	if gone := p.st.ExpireProducers(justBefore); len(gone) != 0 {
		t.Fatalf("expired %v before the time", gone)
	}

	// At ts + ExpireAfter (Kafka's >=) producer 1 is unknown to Check,
	// even before ExpireProducers removes it; producer 2 is a millisecond
	// younger and still known.
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 1}), edge), producerstate.OutOfOrder,
		"producer 1 epoch 0: expired after 1h0m0s idle, so unknown again: must start at sequence 0, got 1")
	want(t, p.st.Check(data(t, bspec{pid: 1, seq: 0}), edge), producerstate.OK) // not a duplicate any more
	want(t, p.st.Check(data(t, bspec{pid: 1, epoch: 0, seq: 0}), edge), producerstate.OK)
	want(t, p.st.Check(data(t, bspec{pid: 2, seq: 1}), edge), producerstate.OK)
	if p.st.Len() != 2 {
		t.Fatal("Check removed a producer")
	}

	late := edge.Add(time.Millisecond)
	if gone := p.st.ExpireProducers(late); !slices.Equal(gone, []int64{1, 2}) {
		t.Fatalf("expired %v, want [1 2]", gone)
	}
	if p.st.Len() != 0 {
		t.Fatal("expired producers remain")
	}
	want(t, p.send(data(t, bspec{pid: 1, seq: 1}), late), producerstate.OutOfOrder, "unknown producer must start at sequence 0, got 1")
	want(t, p.send(data(t, bspec{pid: 1, seq: 0, ts: ts0 + 3600_001}), late), producerstate.OK)
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
	// hour after the marker's timestamp.
	markerTS := ts0 + 10_000
	want(t, p.send(marker(t, 1, 0, true, 0, markerTS), muchLater), producerstate.OK)
	if gone := p.st.ExpireProducers(time.UnixMilli(markerTS).Add(time.Hour - time.Millisecond)); len(gone) != 0 {
		t.Fatalf("expired %v early", gone)
	}
	if gone := p.st.ExpireProducers(time.UnixMilli(markerTS).Add(time.Hour)); !slices.Equal(gone, []int64{1}) {
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

func TestExpiryExtremeTimestamps(t *testing.T) {
	// Timestamps far from the clock neither overflow nor panic: a
	// timestamp in the future is not expired, one from long ago is.
	cfg := producerstate.Config{ExpireAfter: time.Hour}
	st := producerstate.FromSnapshot(cfg, producerstate.Snapshot{Producers: []producerstate.Entry{
		{ProducerID: 1, TxnFirstOffset: -1, LastTimestamp: 1 << 62},
		{ProducerID: 2, TxnFirstOffset: -1, LastTimestamp: -1 << 62},
		{ProducerID: 3, TxnFirstOffset: -1, LastTimestamp: -1},
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

// TestExpiryOnRecordTimestamps pins a consequence of judging expiry on
// record timestamps while an unknown producer must start at 0: a producer
// whose timestamps lag the clock by more than ExpireAfter (here: batches
// without a timestamp, max timestamp -1) is unknown before every batch,
// so only batches starting at sequence 0 are accepted. The package doc
// says so; callers choose LogAppendTime or ExpireAfter 0 for such data.
func TestExpiryOnRecordTimestamps(t *testing.T) {
	p := newPartition(t, producerstate.DefaultConfig())
	b := data(t, bspec{pid: 1, seq: 0, ts: -1})
	if b.MaxTimestamp() != -1 {
		t.Fatalf("max timestamp %d", b.MaxTimestamp())
	}
	want(t, p.send(b, now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 1, seq: 1, ts: -1}), now0), producerstate.OutOfOrder, "expired after 24h0m0s idle")
	// With expiry off the same producer works.
	q := newPartition(t, noExpiry)
	want(t, q.send(b, now0), producerstate.OK)
	want(t, q.send(data(t, bspec{pid: 1, seq: 1, ts: -1}), now0), producerstate.OK)
}

// TestExpiredProducerReturns: a producer that Check judges expired, but
// that ExpireProducers has not removed, comes back at sequence 0 in the
// same epoch. The window starts over (the sequence restarted), and the
// live state still equals a replay of the log, which knows nothing of
// the clock.
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
	if full := replay(t, cfg, p.log); !full.Equal(p.st) {
		t.Fatalf("replay differs:\n%s", diff(full, p.st))
	}
}

func TestCap(t *testing.T) {
	cfg := producerstate.Config{MaxProducers: 3}
	p := newPartition(t, cfg)
	want(t, p.send(data(t, bspec{pid: 10, seq: 0, ts: ts0 + 50}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 11, seq: 0, ts: ts0 + 20}), now0), producerstate.OK)
	want(t, p.send(data(t, bspec{pid: 12, seq: 0, ts: ts0 + 20}), now0), producerstate.OK)
	// Producer 10 writes again: its LastTimestamp is its newest batch's.
	want(t, p.send(data(t, bspec{pid: 10, seq: 1, ts: ts0 + 60}), now0), producerstate.OK)
	if p.st.Len() != 3 {
		t.Fatalf("len %d", p.st.Len())
	}
	// A fourth producer evicts the longest idle: 11 and 12 tie at +20,
	// the lower id goes.
	want(t, p.send(data(t, bspec{pid: 13, seq: 0, ts: ts0 + 70}), now0), producerstate.OK)
	assertProducers(t, p.st, 10, 12, 13)
	// The evicted producer is unknown again.
	want(t, p.st.Check(data(t, bspec{pid: 11, seq: 1}), now0), producerstate.OutOfOrder, "unknown producer")
	// A new producer is never its own victim, even with the oldest
	// timestamp; a marker adds a producer too.
	want(t, p.send(data(t, bspec{pid: 14, seq: 0, ts: ts0}), now0), producerstate.OK)
	assertProducers(t, p.st, 10, 13, 14)
	want(t, p.send(marker(t, 15, 0, true, 0, ts0+80), now0), producerstate.OK)
	assertProducers(t, p.st, 10, 13, 15)
	if full := replay(t, cfg, p.log); !full.Equal(p.st) {
		t.Fatalf("replay differs:\n%s", diff(full, p.st))
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
