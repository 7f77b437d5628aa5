package logstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/vfs"
)

// TestAppendWrittenDoesNotSync: under SyncAlways, AppendWritten returns
// with the batch written and not fsynced (DurableEnd has not moved);
// WaitAcked fsyncs it. A duplicate of a batch whose fsync is held is
// answered by AppendWritten at once with the first copy's offsets, and
// its WaitAcked does not return before that fsync ends.
func TestAppendWrittenDoesNotSync(t *testing.T) {
	h := testutil.NewHeldSyncFS(vfs.OS)
	s := openStore(t, t.TempDir(), logstore.Options{}.WithFS(h))
	p := openPartition(t, s, "events", 0)
	before := h.Syncs.Load()
	first := producerBatch(7, 0, 0, 2, 1_700_000_000_000)
	res, err := p.AppendWritten(first)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 1 || res.Duplicate {
		t.Fatalf("AppendWritten: %+v, want offsets 0..1", res)
	}
	if d, n := p.DurableEnd(), h.Syncs.Load()-before; d != 0 || n != 0 {
		t.Fatalf("after AppendWritten: DurableEnd %d, %d fsyncs; want 0 and 0", d, n)
	}

	// The first copy's fsync is held; its retry must wait for it.
	h.Hold.Store(true)
	acked := make(chan error, 1)
	go func() { acked <- p.WaitAcked(res) }()
	<-h.Entered
	dup, err := p.AppendWritten(producerBatch(7, 0, 0, 2, 1_700_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if !dup.Duplicate || dup.BaseOffset != 0 || dup.LastOffset != 1 {
		t.Fatalf("retry: %+v, want a duplicate of 0..1", dup)
	}
	dupAcked := make(chan error, 1)
	go func() { dupAcked <- p.WaitAcked(dup) }()
	select {
	case err := <-dupAcked:
		close(h.Release)
		t.Fatalf("WaitAcked of the duplicate returned (%v) while the first copy's fsync was held", err)
	default:
	}
	if d := p.DurableEnd(); d != 0 {
		t.Fatalf("DurableEnd %d while the fsync is held", d)
	}
	close(h.Release)
	for _, c := range []chan error{acked, dupAcked} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if d := p.DurableEnd(); d != 2 {
		t.Fatalf("DurableEnd %d after WaitAcked, want 2", d)
	}
}

// TestAppendWrittenRefusal: AppendWritten refuses as Append does.
func TestAppendWrittenRefusal(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	_, err := p.AppendWritten(producerBatch(7, 0, 3, 1, 1_700_000_000_000))
	var r *logstore.RefusedError
	if !errors.As(err, &r) || r.Kind != logstore.RefusedUnknownProducer {
		t.Fatalf("AppendWritten of an unknown producer at sequence 3: %v, want RefusedUnknownProducer", err)
	}
	if p.EndOffset() != 0 {
		t.Fatal("a refused batch was written")
	}
}

// TestAppendMarkerWritten: the marker is checked and applied as
// AppendMarker does, but returns before it is durable: its transaction
// stays below the last stable offset until SyncTo makes the marker
// durable.
func TestAppendMarkerWritten(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode})
			p := openPartition(t, s, "txn", 0)
			mustAppend(t, p, txnDataBatch(1, 3, 0, 2)) // 0-1
			if err := p.SyncTo(p.EndOffset()); err != nil {
				t.Fatal(err)
			}
			if _, err := p.AppendMarkerWritten(1, 2, false, 5); !errors.Is(err, logstore.ErrFenced) {
				t.Fatalf("older producer epoch: %v", err)
			}
			res, err := p.AppendMarkerWritten(1, 3, false, 5)
			if err != nil {
				t.Fatal(err)
			}
			if res.BaseOffset != 2 || res.LastOffset != 2 || p.EndOffset() != 3 {
				t.Fatalf("marker at %+v, end %d", res, p.EndOffset())
			}
			if mode == logstore.SyncAlways {
				// Not synced: the transaction is not stable yet. (Under
				// SyncNever a written offset counts as durable.)
				if d := p.DurableEnd(); d > res.LastOffset {
					t.Fatalf("durable end %d: the marker was synced", d)
				}
				wantLSO(t, p, 0)
			}
			// Applied: the abort is in the .txnindex already.
			if got, _ := p.AbortedTransactions(0, 3); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 {
				t.Fatalf("aborted transactions %+v", got)
			}
			if err := p.SyncTo(res.LastOffset + 1); err != nil {
				t.Fatal(err)
			}
			wantLSO(t, p, 3)
		})
	}
}

// txnBatch builds a transactional batch of one record.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, epoch, seq, true
	if err := b.Append(recent, nil, []byte("t"), nil); err != nil {
		t.Fatal(err)
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRefusals: every refusal of Append is a *RefusedError that says why
// as data (kind, producer rule, the numbers compared, the check's error),
// with a reason that names no package, partition or store, and still
// matches its sentinels; the error around it names the partition and the
// store, with one package prefix.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	now := time.UnixMilli(recent)
	clock := func() time.Time { return now }
	s := openStore(t, dir, logstore.Options{ProducerExpiry: time.Hour}.WithClock(clock))
	p := openPartition(t, s, "events", 0)
	for _, b := range [][]byte{
		producerBatch(31, 1, 0, 2, recent), // offsets 0..1, next sequence 2
		producerBatch(40, 0, 0, 1, recent), // offset 2, expires after an hour
		txnBatch(t, 50, 0, 0),              // offset 3 opens a transaction
	} {
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	good := batchOf("x", "y")
	badCRC := slices.Clone(good)
	badCRC[len(badCRC)-1] ^= 0x40
	control, err := recordbatch.AppendEndTxnBatch(nil, 0, recent, -1, 7, 0, recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit})
	if err != nil {
		t.Fatal(err)
	}

	type want struct {
		kind          logstore.Refusal
		cause         producerstate.Cause
		expected, got int64
		reason        string // whole, or its beginning when it ends in "..."
		sentinel      error
		check         error // a sentinel Err matches; nil when Err is nil
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		later bool // after the producer of id 40 expired
		want  want
	}{
		{"bad CRC", badCRC, false, want{logstore.RefusedInvalid, producerstate.NoCause, 0, 0,
			"crc mismatch: Record is corrupt (stored crc = ...", logstore.ErrInvalidBatch, recordbatch.ErrCRC}},
		{"control batch", control, false, want{logstore.RefusedInvalid, producerstate.NoCause, 0, 0,
			"invalid control batch: a producer may not send control batches", logstore.ErrInvalidBatch, recordbatch.ErrControl}},
		{"two batches", append(slices.Clone(good), good...), false, want{logstore.RefusedInvalid, producerstate.NoCause, 0, 0,
			fmt.Sprintf("%d bytes follow the batch of %d bytes", len(good), len(good)), logstore.ErrInvalidBatch, nil}},
		{"unknown producer", producerBatch(32, 0, 5, 1, recent), false, want{logstore.RefusedUnknownProducer, producerstate.UnknownProducer, 0, 5,
			"producer 32 epoch 0: unknown producer must start at sequence 0, got 5", logstore.ErrOutOfOrder, nil}},
		{"expired producer", producerBatch(40, 0, 1, 1, recent), true, want{logstore.RefusedUnknownProducer, producerstate.ExpiredProducer, 0, 1,
			"producer 40 epoch 0: expired after 1h0m0s idle, so unknown again: must start at sequence 0, got 1", logstore.ErrOutOfOrder, nil}},
		{"sequence gap", producerBatch(31, 1, 7, 1, recent), false, want{logstore.RefusedSequenceGap, producerstate.SequenceGap, 2, 7,
			"producer 31 epoch 1: expected sequence 2, got 7", logstore.ErrOutOfOrder, nil}},
		{"new epoch not at 0", producerBatch(31, 2, 2, 1, recent), false, want{logstore.RefusedNewEpochNotAtZero, producerstate.NewEpochNotAtZero, 0, 2,
			"producer 31 epoch 2: a new epoch (current 1) must start at sequence 0, got 2", logstore.ErrOutOfOrder, nil}},
		{"older epoch", producerBatch(31, 0, 2, 1, recent), false, want{logstore.RefusedOlderEpoch, producerstate.OlderEpoch, 1, 0,
			"producer 31: epoch 0 is older than the current epoch 1", logstore.ErrFenced, nil}},
		{"open transaction", producerBatch(50, 0, 1, 1, recent), false, want{logstore.RefusedOpenTransaction, producerstate.OpenTransaction, 3, 0,
			"INVALID_TXN_STATE: producer 50 epoch 0: expected a transactional batch, since the transaction begun at offset 3 is open", logstore.ErrInvalidBatch, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.later {
				now = time.UnixMilli(recent).Add(2 * time.Hour)
				defer func() { now = time.UnixMilli(recent) }()
			}
			checkRefusal(t, p, dir, tc.data, tc.want.kind, tc.want.cause, tc.want.expected, tc.want.got, tc.want.reason, tc.want.sentinel, tc.want.check)
		})
	}
	if p.EndOffset() != 4 {
		t.Errorf("EndOffset %d after the refusals, want 4", p.EndOffset())
	}

	// Failures are not refusals.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var refused *logstore.RefusedError
	if _, err := p.Append(good); !errors.Is(err, logstore.ErrClosed) || errors.As(err, &refused) {
		t.Errorf("Append after Close = %v; want ErrClosed and no refusal", err)
	}
}

// TestRefusedTooLarge: a batch above either limit is RefusedTooLarge,
// with its size and the limit it broke.
func TestRefusedTooLarge(t *testing.T) {
	big := batchOf(strings.Repeat("x", 300))
	for _, tc := range []struct {
		name   string
		opts   logstore.Options
		reason string
		check  error
	}{
		{"above MaxMessageBytes", logstore.Options{MaxMessageBytes: 200},
			fmt.Sprintf("batch size above the limit: size %d, limit 200", len(big)), recordbatch.ErrBatchTooLarge},
		{"above SegmentBytes", logstore.Options{SegmentBytes: 200},
			fmt.Sprintf("batch too large: %d bytes, limits %d per batch and 200 per segment", len(big), segment.DefaultMaxBatchBytes), segment.ErrBatchTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, tc.opts)
			p := openPartition(t, s, "events", 0)
			checkRefusal(t, p, dir, slices.Clone(big), logstore.RefusedTooLarge, producerstate.NoCause, 200, int64(len(big)), tc.reason, logstore.ErrInvalidBatch, tc.check)
		})
	}
}

func checkRefusal(t *testing.T, p *logstore.Partition, dir string, data []byte, kind logstore.Refusal, cause producerstate.Cause,
	expected, got int64, reason string, sentinel, check error) {
	t.Helper()
	_, err := p.Append(data)
	var r *logstore.RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("Append = %v; want a *RefusedError", err)
	}
	if r.Kind != kind || r.Cause != cause || r.Expected != expected || r.Got != got {
		t.Errorf("refusal %s, cause %s, expected %d, got %d; want %s, %s, %d, %d", r.Kind, r.Cause, r.Expected, r.Got, kind, cause, expected, got)
	}
	if prefix, ok := strings.CutSuffix(reason, "..."); ok && !strings.HasPrefix(r.Reason, prefix) || !ok && r.Reason != reason {
		t.Errorf("reason %q, want %q", r.Reason, reason)
	}
	if strings.Contains(r.Reason, "logstore") || strings.Contains(r.Reason, dir) {
		t.Errorf("reason %q names a package or the store", r.Reason)
	}
	if !errors.Is(err, sentinel) || (check != nil && !errors.Is(err, check)) || (check == nil) != (r.Err == nil) {
		t.Errorf("%v (Err %v): want it to match %v and %v", err, r.Err, sentinel, check)
	}
	for _, s := range []error{logstore.ErrInvalidBatch, logstore.ErrOutOfOrder, logstore.ErrFenced} {
		if s != sentinel && errors.Is(err, s) {
			t.Errorf("%v matches %v too", err, s)
		}
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "logstore: append (partition events-0, store "+dir+"): "+sentinel.Error()+": ") ||
		strings.Count(msg, "logstore: ") != 1 {
		t.Errorf("error %q, want the operation, partition, store and %q, with one package prefix", msg, sentinel)
	}
}

func TestRefusalString(t *testing.T) {
	for k, s := range map[logstore.Refusal]string{
		logstore.RefusedInvalid:         "INVALID",
		logstore.RefusedTooLarge:        "TOO_LARGE",
		logstore.RefusedUnknownProducer: "UNKNOWN_PRODUCER",
		logstore.RefusedOpenTransaction: "OPEN_TRANSACTION",
		0:                               "Refusal(0)",
		99:                              "Refusal(99)",
	} {
		if got := k.String(); got != s {
			t.Errorf("%d: %q, want %q", k, got, s)
		}
	}
}

// Issue 11: a batch whose header and CRC are valid but whose records no
// reader can decode is refused at Append as INVALID, naming the record
// and its byte position, and nothing is written; reads and check stay
// clean.
func TestUndecodableBatchRefused(t *testing.T) {
	const bound = 1 << 20
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{MaxRecordsBytes: bound})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("first")); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "events-0")
	end, size := p.EndOffset(), logBytes(t, pdir)
	for _, c := range testutil.PoisonBatches(4 * bound) {
		_, err := p.Append(slices.Clone(c.Batch))
		if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.Is(err, c.Sentinel) || !errors.Is(err, recordbatch.ErrCorrupt) {
			t.Errorf("%s: Append = %v; want ErrInvalidBatch wrapping %v", c.Name, err, c.Sentinel)
			continue
		}
		for _, w := range c.Want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.Name, err, w)
			}
		}
		if p.EndOffset() != end || logBytes(t, pdir) != size {
			t.Fatalf("%s: written: end offset %d, log %d bytes; want %d, %d", c.Name, p.EndOffset(), logBytes(t, pdir), end, size)
		}
	}
	res, err := p.Append(batchOf("after"))
	if err != nil || res.BaseOffset != end {
		t.Fatalf("a good batch after the refusals: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	chkNoProblems(t, got, stats)
}

// The default bound is the readers' own, recordbatch.DefaultMaxRecordsBytes:
// a gzip bomb past it (65 MiB of zeros in a 65 KB batch) is refused once
// that much is out.
func TestUndecodableBombDefaultBound(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 64 MiB")
	}
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	bomb := testutil.PoisonBatches(recordbatch.DefaultMaxRecordsBytes + 1<<20)[10]
	if bomb.Name != "gzip bomb" || len(bomb.Batch) > segment.DefaultMaxBatchBytes {
		t.Fatalf("%s: %d bytes", bomb.Name, len(bomb.Batch))
	}
	_, err := p.Append(bomb.Batch)
	if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.Is(err, recordbatch.ErrTooLarge) || !strings.Contains(err.Error(), "exceed 67108864 bytes") {
		t.Fatalf("Append = %v", err)
	}
	if p.EndOffset() != 0 {
		t.Fatalf("end offset %d", p.EndOffset())
	}
}

func TestMaxRecordsBytesOption(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{-1, recordbatch.DefaultMaxRecordsBytes + 1} {
		if s, err := logstore.Open(dir, logstore.Options{MaxRecordsBytes: n}); err == nil {
			s.Close()
			t.Errorf("MaxRecordsBytes %d: Open succeeded", n)
		} else if !strings.Contains(err.Error(), "MaxRecordsBytes") {
			t.Errorf("MaxRecordsBytes %d: %v", n, err)
		}
	}
	// A batch that inflates to more than a lowered bound is refused; one
	// within it passes.
	s := openStore(t, dir, logstore.Options{MaxRecordsBytes: 4 << 10})
	p := openPartition(t, s, "events", 0)
	big := recordbatch.NewBuilder(0)
	big.Compression = recordbatch.CodecZstd
	if err := big.Append(1700000000000, nil, make([]byte, 8<<10), nil); err != nil {
		t.Fatal(err)
	}
	raw, err := big.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(raw); !errors.Is(err, recordbatch.ErrTooLarge) {
		t.Fatalf("8 KiB of records under a 4 KiB bound: %v", err)
	}
	if _, err := p.Append(batchOf("small")); err != nil {
		t.Fatal(err)
	}
}

// Issue 11: check decodes every record. Batches written around Append's
// checks (straight into the segment log) are each CORRUPT at their byte
// position, naming the record; the batches before them are fine.
func TestCheckFindsUndecodableBatches(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("first", "second")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "events-0")
	log, _, err := segment.Open(pdir, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		name string
		file string
		pos  int64
		want string
	}
	var poisons []stored
	for _, c := range testutil.PoisonBatches(1 << 10) {
		if c.Sentinel == recordbatch.ErrTooLarge {
			continue // check's bound is the readers' 64 MiB: below
		}
		info, err := log.Append(slices.Clone(c.Batch))
		if err != nil {
			t.Fatal(err)
		}
		want := c.Want[0]
		if c.OffsetDeltas {
			want = "offset delta 0, want above"
		}
		// The batch claiming 2^31-1 records rolls: its offsets do not
		// fit the first segment.
		file := fmt.Sprintf("events-0/%020d.log", info.Segment)
		poisons = append(poisons, stored{c.Name, file, info.Position, want})
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	t.Logf("findings:\n%s", chkText(got))
	var corrupt []logstore.Problem
	for _, pr := range got {
		if pr.Kind != logstore.ProblemNote {
			corrupt = append(corrupt, pr)
		}
	}
	if len(corrupt) != len(poisons) || stats.Problems != len(poisons) {
		t.Fatalf("want %d CORRUPT findings, got:\n%s", len(poisons), chkText(got))
	}
	for i, c := range poisons {
		pr := corrupt[i]
		if pr.Kind != logstore.ProblemCorrupt || pr.File != c.file || pr.Pos != c.pos ||
			!strings.Contains(pr.Detail, "cannot be decoded") || !strings.Contains(pr.Detail, c.want) {
			t.Errorf("%s: %s; want CORRUPT %s at byte %d saying %q", c.name, pr, c.file, c.pos, c.want)
		}
	}
}

// clockOptions are the options of a store whose clock is *now.
func clockOptions(now *time.Time) logstore.Options {
	return logstore.Options{Sync: logstore.SyncNever}.WithClock(func() time.Time { return *now })
}

// TestExpiryOnStoreClock: with the default expiry of a day, a producer
// whose record timestamps lag the store's clock by days, lead it, or are
// -1 keeps its sequence: its next batch is OK and a retry of its first
// is DUPLICATE. Judged on its record timestamps (Kafka's rule) it was
// unknown before every batch here: the retry was written twice.
func TestExpiryOnStoreClock(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	for name, ts := range map[string]int64{
		"no timestamp":    -1,
		"two days behind": now.Add(-48 * time.Hour).UnixMilli(),
		"two days ahead":  now.Add(48 * time.Hour).UnixMilli(),
	} {
		t.Run(name, func(t *testing.T) {
			clock := now
			s := openStore(t, t.TempDir(), clockOptions(&clock))
			p := openPartition(t, s, "skew", 0)
			steps := []struct {
				seq        int32
				want       string
				base, last int64
			}{
				{0, "OK", 0, 1},
				{2, "OK", 2, 3},
				{0, "DUPLICATE", 0, 1},
				{4, "OK", 4, 5},
			}
			for i, st := range steps {
				clock = clock.Add(time.Second)
				got, res := outcome(p, producerBatch(7, 0, st.seq, 2, ts))
				if got != st.want || res.BaseOffset != st.base || res.LastOffset != st.last {
					t.Fatalf("step %d: %s %d..%d, want %s %d..%d", i+1, got, res.BaseOffset, res.LastOffset, st.want, st.base, st.last)
				}
			}
			if p.EndOffset() != 6 {
				t.Fatalf("log end %d, want 6: a batch was written twice", p.EndOffset())
			}
			// A day after the store last took a batch of it, the producer
			// is forgotten, whatever its timestamps say.
			clock = clock.Add(24 * time.Hour)
			if got, _ := outcome(p, producerBatch(7, 0, 6, 1, ts)); got != "OUT_OF_ORDER" {
				t.Fatalf("a day idle: %s, want OUT_OF_ORDER", got)
			}
		})
	}
}

// TestExpiryAfterRestart: the seen time survives a clean close in the
// snapshot, so a producer idle for over a day across a restart expires
// although its record timestamps are recent; and a producer met while
// replaying the log at open counts as seen at the open, so old
// timestamps in the tail forget no one.
func TestExpiryAfterRestart(t *testing.T) {
	start := time.UnixMilli(1700000000000)
	clock := start
	dir := t.TempDir()
	opts := clockOptions(&clock)
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "restart", 0)
	// Producer 1 stamps its records ten days ahead, producer 2 ten days
	// behind.
	ahead, behind := start.Add(240*time.Hour).UnixMilli(), start.Add(-240*time.Hour).UnixMilli()
	for _, b := range [][]byte{producerBatch(1, 0, 0, 1, ahead), producerBatch(2, 0, 0, 1, behind)} {
		if got, _ := outcome(p, b); got != "OK" {
			t.Fatal(got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// 23 hours later both are known, from the close snapshot: their seen
	// times are the store's, not their timestamps.
	clock = start.Add(23 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	snap := p.ProducerSnapshot()
	if len(snap.Producers) != 2 || snap.Producers[0].LastSeen != start.UnixMilli() || snap.Producers[1].LastSeen != start.UnixMilli() {
		t.Fatalf("after a restart: %+v, want both seen at %d", snap.Producers, start.UnixMilli())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// 25 hours after their last batch both have expired, even producer 1
	// whose timestamps are in the future.
	clock = start.Add(25 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	if n := p.Startup().Producers; n != 0 {
		t.Fatalf("%d producers after 25 idle hours, want 0", n)
	}
	for pid := int64(1); pid <= 2; pid++ {
		if got, _ := outcome(p, producerBatch(pid, 0, 1, 1, ahead)); got != "OUT_OF_ORDER" {
			t.Fatalf("producer %d after 25 idle hours: %s", pid, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the snapshot db the whole log is replayed at open: every
	// producer in it counts as seen at the open, so none is forgotten, a
	// retry is DUPLICATE and the sequence goes on.
	if err := os.Remove(filepath.Join(dir, "restart-0", snapshot.FileName)); err != nil {
		t.Fatal(err)
	}
	clock = start.Add(30 * 24 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	if rep := p.Startup(); rep.SnapshotOffset != -1 || rep.ReplayedBatches != 2 || rep.Producers != 2 {
		t.Fatalf("startup %+v, want a replay of 2 batches keeping 2 producers", rep)
	}
	for _, e := range p.ProducerSnapshot().Producers {
		if e.LastSeen != clock.UnixMilli() {
			t.Fatalf("producer %d seen at %d, want the open's %d", e.ProducerID, e.LastSeen, clock.UnixMilli())
		}
	}
	clock = clock.Add(23 * time.Hour)
	if got, res := outcome(p, producerBatch(2, 0, 0, 1, behind)); got != "DUPLICATE" || res.BaseOffset != 1 {
		t.Fatalf("retry of producer 2's batch: %s at %d, want DUPLICATE at 1", got, res.BaseOffset)
	}
	if got, _ := outcome(p, producerBatch(2, 0, 1, 1, behind)); got != "OK" {
		t.Fatalf("producer 2's next batch: %s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEpochBelowMinusOneRefused: a batch with a producer id and epoch
// -2 is refused as INVALID, and nothing is written.
func TestEpochBelowMinusOneRefused(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	p := openPartition(t, s, "epoch", 0)
	if got, _ := outcome(p, producerBatch(5, -2, 0, 1, recent)); got != "INVALID" || p.EndOffset() != 0 {
		t.Fatalf("epoch -2: %s, log end %d; want INVALID and nothing written", got, p.EndOffset())
	}
	_, err := p.Append(producerBatch(5, -2, 0, 1, recent))
	var refused *logstore.RefusedError
	if !errors.As(err, &refused) || refused.Kind != logstore.RefusedInvalid || refused.Cause != producerstate.InvalidEpoch || refused.Got != -2 {
		t.Fatalf("epoch -2: %v (%+v); want a RefusedInvalid with cause INVALID_EPOCH and Got -2", err, refused)
	}
	if got, _ := outcome(p, producerBatch(5, 0, 0, 1, recent)); got != "OK" {
		t.Fatalf("epoch 0 afterwards: %s", got)
	}
}
