package logstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

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
