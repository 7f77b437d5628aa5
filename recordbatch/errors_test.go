package recordbatch_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// sampleBatch builds a small valid client batch of two records.
func sampleBatch(t testing.TB) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(100)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 31, 0, 0
	if err := b.Append(1700000000000, []byte("k"), []byte("v1"), []recordbatch.RecordHeader{{Key: []byte("h"), Value: nil}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(1700000000005, nil, []byte("v2"), nil); err != nil {
		t.Fatal(err)
	}
	raw, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// withRecords wraps a hand-made records section in a batch with a valid
// CRC, so the record decoder itself is what sees the bad bytes.
func withRecords(count int32, records []byte) []byte {
	h := recordbatch.Header{
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: count - 1, NumRecords: count,
	}
	return recordbatch.AppendBatch(nil, h, records)
}

// mutate returns a copy of b changed by f, with the CRC recomputed when
// fixCRC is set.
func mutate(b []byte, fixCRC bool, f func(b []byte)) []byte {
	c := append([]byte(nil), b...)
	f(c)
	if fixCRC {
		binary.BigEndian.PutUint32(c[17:], recordbatch.Checksum(c[21:]))
	}
	return c
}

func wantErr(t *testing.T, name string, err error, sentinel error, offset int64) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got %v, want %v", name, err, sentinel)
		return
	}
	if !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Errorf("%s: %v does not match ErrCorrupt", name, err)
	}
	var ce *recordbatch.CorruptionError
	if !errors.As(err, &ce) {
		t.Errorf("%s: %v is not a *CorruptionError", name, err)
	} else if offset >= 0 && ce.Offset != offset {
		t.Errorf("%s: error at byte %d, want %d (%v)", name, ce.Offset, offset, err)
	}
}

// TestParseErrors feeds Parse every prefix of a valid batch and broken
// length and magic fields.
func TestParseErrors(t *testing.T) {
	good := sampleBatch(t)
	for n := 0; n < len(good); n++ {
		_, err := recordbatch.Parse(good[:n], 0)
		wantErr(t, "prefix", err, recordbatch.ErrTruncated, int64(n))
	}
	if b, err := recordbatch.Parse(append(append([]byte(nil), good...), 0xde, 0xad), 0); err != nil || len(b) != len(good) || cap(b) != len(good) {
		t.Fatalf("Parse with trailing bytes: len %d cap %d err %v", len(b), cap(b), err)
	}
	setLen := func(l int32) func([]byte) {
		return func(b []byte) { binary.BigEndian.PutUint32(b[8:], uint32(l)) }
	}
	for _, c := range []struct {
		name     string
		b        []byte
		max      int
		sentinel error
		offset   int64
	}{
		{"length below header", mutate(good, false, setLen(48)), 0, recordbatch.ErrBatchTooSmall, 8},
		{"negative length", mutate(good, false, setLen(-1)), 0, recordbatch.ErrBatchTooSmall, 8},
		{"most negative length", mutate(good, false, setLen(-1<<31)), 0, recordbatch.ErrBatchTooSmall, 8},
		{"length past the end", mutate(good, false, setLen(int32(len(good)))), 0, recordbatch.ErrTruncated, int64(len(good))},
		{"huge length", mutate(good, false, setLen(1<<31-1)), 0, recordbatch.ErrTruncated, int64(len(good))},
		{"above the caller's limit", good, len(good) - 1, recordbatch.ErrBatchTooLarge, 8},
		{"magic 1", mutate(good, false, func(b []byte) { b[16] = 1 }), 0, recordbatch.ErrMagic, 16},
		{"magic 3", mutate(good, false, func(b []byte) { b[16] = 3 }), 0, recordbatch.ErrMagic, 16},
	} {
		_, err := recordbatch.Parse(c.b, c.max)
		wantErr(t, c.name, err, c.sentinel, c.offset)
	}
}

func TestValidateErrors(t *testing.T) {
	good := sampleBatch(t)
	put32 := func(off int, v int32) func([]byte) {
		return func(b []byte) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }
	}
	for _, c := range []struct {
		name     string
		b        []byte
		client   bool
		sentinel error
		offset   int64
	}{
		{"crc", mutate(good, false, func(b []byte) { b[len(b)-1] ^= 0x80 }), false, recordbatch.ErrCRC, 17},
		{"codec 5", mutate(good, true, func(b []byte) { b[22] |= 5 }), false, recordbatch.ErrUnknownCodec, 21},
		{"codec 7", mutate(good, true, func(b []byte) { b[22] |= 7 }), false, recordbatch.ErrUnknownCodec, 21},
		{"negative count", mutate(good, true, put32(57, -1)), false, recordbatch.ErrRecordCount, 57},
		{"zero count", mutate(good, true, put32(57, 0)), true, recordbatch.ErrRecordCount, 57},
		{"count and delta disagree", mutate(good, true, put32(23, 5)), true, recordbatch.ErrRecordCount, 23},
		{"producer without sequence", mutate(good, true, put32(53, -1)), true, recordbatch.ErrSequence, 53},
		{"control batch from a client", mutate(good, true, func(b []byte) { b[22] |= 0x20 }), true, recordbatch.ErrControl, 21},
		{"negative timestamp", mutate(good, true, func(b []byte) { binary.BigEndian.PutUint64(b[27:], uint64(1<<64-2)) }), true, recordbatch.ErrTimestamp, 27},
	} {
		b, err := recordbatch.Parse(c.b, 0)
		if err != nil {
			t.Fatalf("%s: Parse: %v", c.name, err)
		}
		if c.client {
			if err := b.Validate(); err != nil {
				t.Errorf("%s: Validate: %v, want nil (only ValidateClient refuses it)", c.name, err)
			}
			err = b.ValidateClient()
		} else {
			err = b.Validate()
		}
		wantErr(t, c.name, err, c.sentinel, c.offset)
	}
	b, _ := recordbatch.Parse(good, 0)
	if err := b.ValidateClient(); err != nil {
		t.Fatalf("good batch: %v", err)
	}
}

// TestRecordErrors hands the record decoder broken records sections in
// batches whose CRC is right.
func TestRecordErrors(t *testing.T) {
	// One good record: len 7, attr 0, tsΔ 0, offΔ 0, null key, value "a", no headers.
	rec := []byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, 'a', 0x00}
	for _, c := range []struct {
		name    string
		count   int32
		records []byte
		offset  int64
	}{
		{"premature end", 2, rec, 8},
		{"records remaining", 1, append(append([]byte(nil), rec...), rec...), 8},
		{"empty section", 1, nil, 0},
		{"length past the end", 1, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x02, 'a', 0x00}, 0},
		{"negative length", 1, []byte{0x01}, 0},
		{"length varint too long", 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0},
		{"length varint cut", 1, []byte{0xff}, 0},
		{"timestamp varlong too long", 1, append([]byte{0x18, 0x00}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}...), 2},
		{"key longer than record", 1, []byte{0x0a, 0x00, 0x00, 0x00, 0x08, 0x00}, 4},
		{"value longer than record", 1, []byte{0x0c, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00}, 5},
		{"negative header count", 1, []byte{0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01}, 6},
		{"header count beyond the bytes", 1, []byte{0x14, 0x00, 0x00, 0x00, 0x01, 0x01, 0xfe, 0xff, 0xff, 0xff, 0x0f}, 6},
		{"header count varint cut", 1, []byte{0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0xfe}, 6},
		{"negative header key length", 1, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x00}, 7},
		{"header key longer than record", 1, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x10, 0x00}, 7},
		{"bytes left in the record", 1, []byte{0x10, 0x00, 0x00, 0x00, 0x01, 0x02, 'a', 0x00, 0x00}, 0},
	} {
		b, err := recordbatch.Parse(withRecords(c.count, c.records), 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = b.DecodeRecords(0)
		wantErr(t, c.name, err, recordbatch.ErrRecord, c.offset)
	}
}

// TestNoAllocationFromClaims: counts and lengths that claim gigabytes
// are refused without allocating anything near what they claim.
func TestNoAllocationFromClaims(t *testing.T) {
	claims := map[string][]byte{
		"record count 2^31-1":      withRecords(1<<31-1, []byte{0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, 'a', 0x00}),
		"header count 2^30":        withRecords(1, []byte{0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x80, 0x80, 0x80, 0x80, 0x08}),
		"key length 2^30":          withRecords(1, []byte{0x0c, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x08}),
		"record length 2^30 bytes": withRecords(1, []byte{0x80, 0x80, 0x80, 0x80, 0x08, 0x00}),
	}
	for name, raw := range claims {
		b, err := recordbatch.Parse(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		var r recordbatch.RecordReader
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := r.Reset(b, 0); err != nil {
			t.Fatal(err)
		}
		for r.Next() {
		}
		runtime.ReadMemStats(&after)
		if r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("%s: allocated %d bytes", name, grew)
		}
	}
}

func TestControlRecords(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want recordbatch.ControlType
		err  bool
	}{
		{[]byte{0, 0, 0, 0}, recordbatch.ControlAbort, false},
		{[]byte{0, 0, 0, 1}, recordbatch.ControlCommit, false},
		{[]byte{0, 0, 0, 2}, recordbatch.ControlLeaderChange, false},
		{[]byte{0, 0, 0, 6}, recordbatch.ControlKRaftVoters, false},
		{[]byte{0, 0, 0, 7}, recordbatch.ControlUnknown, false},
		{[]byte{0, 0, 0x80, 0}, recordbatch.ControlUnknown, false},
		{[]byte{0, 1, 0, 1}, recordbatch.ControlCommit, false}, // a newer version reads as v0
		{[]byte{0xff, 0xff, 0, 1}, recordbatch.ControlUnknown, true},
		{[]byte{0, 0, 0}, recordbatch.ControlUnknown, true},
	} {
		got, err := recordbatch.ParseControlKey(c.key)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseControlKey(%x) = %v, %v; want %v, error %t", c.key, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, recordbatch.ErrControl) {
			t.Errorf("ParseControlKey(%x): %v is not ErrControl", c.key, err)
		}
	}
	if _, err := recordbatch.ParseEndTxnMarker([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 1}); !errors.Is(err, recordbatch.ErrControl) {
		t.Errorf("short marker value: %v", err)
	}
	if _, err := recordbatch.ParseEndTxnMarker([]byte{0, 0, 0, 2}, []byte{0, 0, 0, 0, 0, 1}); !errors.Is(err, recordbatch.ErrControl) {
		t.Errorf("LEADER_CHANGE read as a marker: %v", err)
	}
	for _, typ := range []recordbatch.ControlType{recordbatch.ControlCommit, recordbatch.ControlAbort} {
		raw, err := recordbatch.AppendEndTxnBatch(nil, 42, 1700000000000, 3, 9, 2, recordbatch.EndTxnMarker{Type: typ, CoordinatorEpoch: 77})
		if err != nil {
			t.Fatal(err)
		}
		b, err := recordbatch.Parse(raw, 0)
		if err != nil || b.Validate() != nil || len(raw) != 78 || b.Attributes() != 0x30 || b.BaseSequence() != -1 {
			t.Fatalf("%v marker batch: len %d attrs %#x seq %d, %v", typ, len(raw), b.Attributes(), b.BaseSequence(), err)
		}
		recs, err := b.DecodeRecords(0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := recordbatch.ParseEndTxnMarker(recs[0].Key, recs[0].Value)
		if err != nil || m.Type != typ || m.CoordinatorEpoch != 77 {
			t.Fatalf("marker decodes to %+v, %v", m, err)
		}
	}
	if _, err := recordbatch.AppendEndTxnBatch(nil, 0, 0, 0, 1, 0, recordbatch.EndTxnMarker{Type: recordbatch.ControlLeaderChange}); !errors.Is(err, recordbatch.ErrBuild) {
		t.Errorf("LEADER_CHANGE as an end marker: %v", err)
	}
}
