package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

func TestValueRoundTrip(t *testing.T) {
	cases := map[string]producerstate.Snapshot{
		"empty":          {Offset: 0},
		"empty-slice":    {Offset: 7, Producers: []producerstate.Entry{}},
		"max-offset":     {Offset: math.MaxInt64},
		"one-no-batches": {Offset: 3, Producers: []producerstate.Entry{{ProducerID: -1, Epoch: -1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: -1, Batches: []producerstate.BatchMeta{}}}},
		"wrap": {Offset: 12, Producers: []producerstate.Entry{{
			ProducerID: 31, TxnFirstOffset: 5, LastTimestamp: 1700000000013,
			Batches: []producerstate.BatchMeta{
				{FirstSeq: 2147483645, LastSeq: 2147483647, FirstOffset: 0, LastOffset: 2, Timestamp: 1700000000010},
				{FirstSeq: 0, LastSeq: 0, FirstOffset: 3, LastOffset: 3, Timestamp: 1700000000011},
				{FirstSeq: 1, LastSeq: 2147483646, FirstOffset: 4, LastOffset: math.MaxInt64, Timestamp: math.MinInt64},
				{FirstSeq: 2147483647, LastSeq: 1, FirstOffset: math.MinInt64, LastOffset: -1, Timestamp: math.MaxInt64},
				{FirstSeq: -5, LastSeq: math.MinInt32, FirstOffset: 0, LastOffset: 0, Timestamp: 1700000000013},
			},
		}}},
		"rich-200":  richSnapshot(1, 123456789, 200),
		"rich-3":    richSnapshot(2, 0, 3),
		"full-1000": fullSnapshot(1<<40, 1000),
	}
	for name, snap := range cases {
		t.Run(name, func(t *testing.T) {
			v := mustEncode(t, snap)
			got, err := snapshot.DecodeValue(v)
			if err != nil {
				t.Fatal(err)
			}
			if !sameSnapshot(got, snap) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, snap)
			}
			if again := mustEncode(t, got); !bytes.Equal(again, v) {
				t.Fatal("re-encoding the decoded snapshot gives other bytes")
			}
			// Appending to a buffer leaves what was there.
			prefixed, err := snapshot.AppendValue([]byte("xyz"), snap)
			if err != nil || !bytes.Equal(prefixed[:3], []byte("xyz")) || !bytes.Equal(prefixed[3:], v) {
				t.Fatalf("AppendValue to a non-empty buffer: %v", err)
			}
			// The result shares no memory with the value.
			clear(v)
			if !sameSnapshot(got, snap) {
				t.Fatal("decoded snapshot changed when the value's bytes did")
			}
		})
	}
}

func TestValueLayout(t *testing.T) {
	// The smallest interesting value, byte by byte, as the package doc
	// draws it.
	snap := producerstate.Snapshot{Offset: 300, Producers: []producerstate.Entry{
		{ProducerID: 5, Epoch: 1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 1000, LastSeen: 1003, LastApplied: 13, Batches: []producerstate.BatchMeta{
			{FirstSeq: 0, LastSeq: 2, FirstOffset: 10, LastOffset: 12, Timestamp: 999},
			{FirstSeq: 3, LastSeq: 3, FirstOffset: 13, LastOffset: 13, Timestamp: 1000},
		}},
		{ProducerID: 8, Epoch: 0, CoordinatorEpoch: 2, TxnFirstOffset: 20, LastTimestamp: 1, LastSeen: producerstate.SeenUnknown, LastApplied: 299},
	}}
	body := []byte{
		0xac, 0x02, // offset 300
		0x02,       // 2 producers
		0x0a,       // id 5 (zigzag)
		0x02,       // epoch 1
		0x01,       // coordinator epoch -1
		0x01,       // txn first offset -1
		0xd0, 0x0f, // last timestamp 1000
		0x06,       // last seen 1003 = 1000 + 3
		0xbc, 0x04, // last applied 13 = 300 - 1 - 286
		0x02,                         // 2 batches
		0x00, 0x04, 0x14, 0x04, 0x01, // seq 0, span 2, offset 10, span 2, ts 1000-1
		0x00, 0x00, 0x00, 0x00, 0x02, // gap 0, span 0, gap 0, span 0, ts +1
		0x03,                   // id delta 3 (unsigned)
		0x00, 0x04, 0x28, 0x02, // epoch 0, coordinator epoch 2, txn 20, last timestamp 1
		0x01, // last seen 0 (not known) = 1 - 1
		0x00, // last applied 299 = 300 - 1 - 0
		0x00, // no batches
	}
	want := binary.BigEndian.AppendUint16(nil, 2)
	want = binary.BigEndian.AppendUint32(want, recordbatch.Checksum(body))
	want = append(want, body...)
	if got := mustEncode(t, snap); !bytes.Equal(got, want) {
		t.Fatalf("encoding:\n got % x\nwant % x", got, want)
	}
	// A full window of ordinary batches costs a byte or two per field.
	full := fullSnapshot(1<<40, 10000)
	if per := float64(len(mustEncode(t, full))) / 10000; per > 60 {
		t.Errorf("%.1f bytes per producer with a full window, want at most 60", per)
	}
}

// TestDecodeVersion1: a value written by the build before seen times
// were kept (format version 1, testdata/value-v1.bin) still decodes, its
// producers without a seen time, and re-encodes as version 2 with the
// same fields.
func TestDecodeVersion1(t *testing.T) {
	v1, err := os.ReadFile(filepath.Join("testdata", "value-v1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint16(v1) != 1 {
		t.Fatalf("testdata is version %d", binary.BigEndian.Uint16(v1))
	}
	got, err := snapshot.DecodeValue(v1)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSnapshot(got, v1Snapshot) {
		t.Fatalf("version 1 value decodes as\n%+v\nwant\n%+v", got, v1Snapshot)
	}
	for _, p := range got.Producers {
		if p.LastSeen != producerstate.SeenUnknown {
			t.Fatalf("producer %d: seen %d, want not known", p.ProducerID, p.LastSeen)
		}
	}
	v2 := mustEncode(t, got)
	if binary.BigEndian.Uint16(v2) != snapshot.ValueVersion || len(v2) <= len(v1) {
		t.Fatalf("re-encoded as version %d in %d bytes", binary.BigEndian.Uint16(v2), len(v2))
	}
	if again, err := snapshot.DecodeValue(v2); err != nil || !sameSnapshot(again, got) {
		t.Fatalf("version 2 of it: %v", err)
	}
	// A cut or damaged version 1 value fails as a version 2 one does.
	if _, err := snapshot.DecodeValue(withCRC(v1[:len(v1)-1])); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("cut version 1 value: %v", err)
	}
}

func TestAppendValueRefuses(t *testing.T) {
	six := make([]producerstate.BatchMeta, producerstate.WindowSize+1)
	for name, snap := range map[string]producerstate.Snapshot{
		"negative offset": {Offset: -1},
		"unsorted":        {Producers: []producerstate.Entry{{ProducerID: 2}, {ProducerID: 1}}},
		"duplicate":       {Producers: []producerstate.Entry{{ProducerID: 2}, {ProducerID: 2}}},
		"window of 6":     {Producers: []producerstate.Entry{{ProducerID: 2, Batches: six}}},
	} {
		dst, err := snapshot.AppendValue([]byte("x"), snap)
		if !errors.Is(err, snapshot.ErrInvalidSnapshot) {
			t.Errorf("%s: err = %v, want ErrInvalidSnapshot", name, err)
		}
		if string(dst) != "x" {
			t.Errorf("%s: dst changed to %q", name, dst)
		}
	}
}

// withCRC returns v with its CRC recomputed, so damage reaches the field
// checks behind it.
func withCRC(v []byte) []byte {
	v = bytes.Clone(v)
	if len(v) >= 6 {
		binary.BigEndian.PutUint32(v[2:], recordbatch.Checksum(v[6:]))
	}
	return v
}

func TestDecodeValueErrors(t *testing.T) {
	// Bytes 9-17 are the first producer (id, epoch, coordinator epoch,
	// transaction, last timestamp in two, last seen, last applied, window
	// length 17), its batch 18-22, the second producer 23-30.
	good := mustEncode(t, producerstate.Snapshot{Offset: 300, Producers: []producerstate.Entry{
		{ProducerID: 5, Epoch: 1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 1000, LastSeen: 1000, LastApplied: 299, Batches: []producerstate.BatchMeta{
			{FirstSeq: 0, LastSeq: 2, FirstOffset: 10, LastOffset: 12, Timestamp: 999},
		}},
		{ProducerID: 8, Epoch: 0, CoordinatorEpoch: 2, TxnFirstOffset: 20, LastTimestamp: 1, LastSeen: 1, LastApplied: 299},
	}})
	if len(good) != 31 {
		t.Fatalf("%d bytes, the cases below expect 31", len(good))
	}
	edit := func(f func(v []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name  string
		value []byte
		is    error
		pos   int
		text  string
	}{
		{"empty", nil, snapshot.ErrCorrupt, 0, "shorter than the 6-byte header"},
		{"header cut", good[:5], snapshot.ErrCorrupt, 5, "shorter than the 6-byte header"},
		{"version 3", edit(func(v []byte) []byte { v[1] = 3; return v }), snapshot.ErrVersion, 0, "format version 3, this build reads 1 and 2"},
		{"version 0", edit(func(v []byte) []byte { v[1] = 0; return v }), snapshot.ErrVersion, 0, "format version 0"},
		{"flipped bit", edit(func(v []byte) []byte { v[12] ^= 0x10; return v }), snapshot.ErrCorrupt, 2, "crc32c mismatch"},
		{"flipped crc", edit(func(v []byte) []byte { v[3] ^= 1; return v }), snapshot.ErrCorrupt, 2, "crc32c mismatch"},
		{"cut body", withCRC(good[:len(good)-3]), snapshot.ErrCorrupt, len(good) - 3, "cut off"},
		{"cut in window", withCRC(append(append(bytes.Clone(good[:8]), 0x01), good[9:20]...)), snapshot.ErrCorrupt, 17, "1 batches cannot fit"},
		{"trailing byte", withCRC(append(bytes.Clone(good), 0)), snapshot.ErrCorrupt, len(good), "1 trailing bytes"},
		{"huge count", withCRC(append(append(bytes.Clone(good[:8]), 0xff, 0xff, 0xff, 0xff, 0x0f), good[9:]...)), snapshot.ErrCorrupt, 8, "cannot fit"},
		{"overlong varint", withCRC(append(append(bytes.Clone(good[:8]), 0x82, 0x00), good[9:]...)), snapshot.ErrCorrupt, 8, "varint of 2 bytes"},
		{"varint overflow", withCRC(append(append(bytes.Clone(good[:6]), bytes.Repeat([]byte{0xff}, 10)...), 0x01)), snapshot.ErrCorrupt, 6, "overflows"},
		{"offset above int64", withCRC(append(append(bytes.Clone(good[:6]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), good[8:]...)), snapshot.ErrCorrupt, 6, "does not fit an int64"},
		{"window of 6", withCRC(edit(func(v []byte) []byte { v[17] = 6; return v })), snapshot.ErrCorrupt, 17, "window of 6"},
		{"seen overflows", withCRC(append(append(bytes.Clone(good[:15]), bytes.Repeat([]byte{0xff}, 10)...), good[16:]...)), snapshot.ErrCorrupt, 15, "last seen: varint overflows"},
		{"epoch out of range", withCRC(append(append(bytes.Clone(good[:10]), 0x80, 0x80, 0x04), good[11:]...)), snapshot.ErrCorrupt, 10, "epoch 32768 is out of range"},
		{"id not ascending", withCRC(edit(func(v []byte) []byte { v[23] = 0; return v })), snapshot.ErrCorrupt, 23, "producer id delta 0"},
		{"applied overflows", withCRC(append(append(bytes.Clone(good[:16]), bytes.Repeat([]byte{0x80}, 10)...), good[17:]...)), snapshot.ErrCorrupt, 16, "last applied: varint overflows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := snapshot.DecodeValue(c.value)
			var de *snapshot.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("err = %v, want it to match %v", err, c.is)
			}
			if errors.Is(err, snapshot.ErrCorrupt) == errors.Is(err, snapshot.ErrVersion) {
				t.Errorf("err = %v matches both or neither of ErrCorrupt and ErrVersion", err)
			}
			if de.Pos != c.pos || de.Offset != -1 {
				t.Errorf("err at offset %d byte %d, want -1 and %d: %v", de.Offset, de.Pos, c.pos, err)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("err = %q, want it to say %q", err, c.text)
			}
		})
	}
}

// FuzzDecodeSnapshot feeds the value decoder arbitrary bytes, each input
// twice: as is, and with its CRC made right so the fuzzer reaches the
// field checks. Whatever decodes must re-encode to the same bytes (the
// encoding is canonical; a version 1 value re-encodes as version 2) and
// decode again to the same snapshot; whatever
// does not must fail with a *DecodeError inside the value; and decoding
// must never allocate more than a small multiple of the input.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte{})
	f.Add(mustEncode(f, producerstate.Snapshot{}))
	f.Add(mustEncode(f, richSnapshot(3, 99, 4)))
	f.Add(mustEncode(f, richSnapshot(4, 1<<50, 20)))
	f.Add(mustEncode(f, fullSnapshot(5000, 3)))
	f.Add(mustEncode(f, producerstate.Snapshot{Offset: 1, Producers: []producerstate.Entry{{ProducerID: math.MinInt64}, {ProducerID: math.MaxInt64}}}))
	if v1, err := os.ReadFile(filepath.Join("testdata", "value-v1.bin")); err == nil {
		f.Add(v1)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(in []byte) {
			var snap producerstate.Snapshot
			var err error
			checkAllocated(t, uint64(16*len(in))+64<<10, func() { snap, err = snapshot.DecodeValue(in) })
			if err != nil {
				var de *snapshot.DecodeError
				if !errors.As(err, &de) || de.Pos < 0 || de.Pos > len(in) {
					t.Fatalf("error %v is not a *DecodeError inside the %d-byte value", err, len(in))
				}
				if errors.Is(err, snapshot.ErrCorrupt) == errors.Is(err, snapshot.ErrVersion) {
					t.Fatalf("error %v matches both or neither sentinel", err)
				}
				return
			}
			out, err := snapshot.AppendValue(nil, snap)
			if err != nil {
				t.Fatalf("decoded snapshot does not encode: %v", err)
			}
			// A version 1 value re-encodes as version 2.
			if binary.BigEndian.Uint16(in) == snapshot.ValueVersion && !bytes.Equal(out, in) {
				t.Fatalf("re-encoding differs:\n in % x\nout % x", in, out)
			}
			again, err := snapshot.DecodeValue(out)
			if err != nil || !sameSnapshot(again, snap) {
				t.Fatalf("decode(encode(x)) != x: %v", err)
			}
		}
		check(data)
		if len(data) >= 6 {
			check(withCRC(data))
		}
	})
}
