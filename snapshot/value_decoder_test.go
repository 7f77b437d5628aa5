package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// checkDecode decodes value as stored under key, both ways the package
// does (decodeValue into a Snapshot, decodeState into a State), and fails
// unless they agree: both accept it, decodeState building what
// FromSnapshot builds from the Snapshot, or both refuse it with the same
// *DecodeError inside the value. An accepted value round-trips: a
// version 2 value re-encodes to the same bytes (the encoding is
// canonical), a version 1 value re-encodes as version 2 and decodes back
// to the same Snapshot.
func checkDecode(t *testing.T, value []byte, key int64) {
	t.Helper()
	snap, err := decodeValue(value, key)
	cfg := producerstate.Config{}
	st, stErr := decodeState(value, key, cfg)
	if (err == nil) != (stErr == nil) {
		t.Fatalf("decodeValue: %v, decodeState: %v, for % x", err, stErr, value)
	}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || de.Pos < 0 || de.Pos > len(value) {
			t.Fatalf("error %v is not a *DecodeError inside the %d-byte value", err, len(value))
		}
		if errors.Is(err, ErrCorrupt) == errors.Is(err, ErrVersion) {
			t.Fatalf("error %v matches both or neither sentinel", err)
		}
		if stErr.Error() != err.Error() {
			t.Fatalf("decodeValue: %v, decodeState: %v", err, stErr)
		}
		return
	}
	if !st.Equal(producerstate.FromSnapshot(cfg, snap)) {
		t.Fatalf("decodeState differs from FromSnapshot of decodeValue for % x", value)
	}
	out, err := AppendValue(nil, snap)
	if err != nil {
		t.Fatalf("decoded snapshot does not encode: %v", err)
	}
	if binary.BigEndian.Uint16(value) == ValueVersion && !bytes.Equal(out, value) {
		t.Fatalf("re-encoding differs:\n in % x\nout % x", value, out)
	}
	again, err := decodeValue(out, key)
	if err != nil || !reflect.DeepEqual(again, snap) {
		t.Fatalf("decode(encode(decode(x))) != decode(x): %v\n got %+v\nwant %+v", err, again, snap)
	}
}

// asVersion1 is v, a version 2 value, in the layout of version 1: the
// same fields without the seen times, so that the mutations reach the
// version 1 path too.
func asVersion1(t *testing.T, snap producerstate.Snapshot) []byte {
	t.Helper()
	v := appendValueV1(nil, snap)
	got, err := decodeValue(v, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Producers {
		if want := int64(-1); len(p.Batches) > 0 {
			want = p.Batches[len(p.Batches)-1].LastOffset
			if p.LastApplied != want {
				t.Fatalf("version 1 producer %d decodes with last applied %d, want %d", p.ProducerID, p.LastApplied, want)
			}
		}
		if p.LastSeen != producerstate.SeenUnknown {
			t.Fatalf("version 1 producer %d decodes with seen %d", p.ProducerID, p.LastSeen)
		}
	}
	return v
}

// appendValueV1 is AppendValue as the build that wrote version 1 had it.
func appendValueV1(dst []byte, snap producerstate.Snapshot) []byte {
	v, err := AppendValue(nil, snap)
	if err != nil {
		panic(err)
	}
	// Re-encode field by field, dropping each producer's seen time and
	// last applied offset.
	d, n, err := newDecoder(v, -1)
	if err != nil {
		panic(err)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, valueVersion1)
	dst = append(dst, 0, 0, 0, 0)
	dst = append(dst, v[valueHeaderSize:d.pos]...)
	for range n {
		from := d.pos
		d.uvarint("id")
		for range 4 {
			d.uvarint("field")
		}
		dst = append(dst, v[from:d.pos]...)
		d.uvarint("seen")
		d.uvarint("last applied")
		from = d.pos
		k := int(v[d.pos])
		d.pos++
		for range 5 * k {
			d.uvarint("batch field")
		}
		dst = append(dst, v[from:d.pos]...)
	}
	binary.BigEndian.PutUint32(dst[start+valueCRCPos:], recordbatch.Checksum(dst[start+valueHeaderSize:]))
	return dst
}

// fixCRC returns v with its CRC made right.
func fixCRC(v []byte) []byte {
	v = bytes.Clone(v)
	if len(v) >= valueHeaderSize {
		binary.BigEndian.PutUint32(v[valueCRCPos:], recordbatch.Checksum(v[valueHeaderSize:]))
	}
	return v
}

// extremeSnapshot is a small snapshot whose fields reach the edges of
// their ranges, so that a byte changed anywhere lands on a check.
func extremeSnapshot(seed uint64) producerstate.Snapshot { return extremeSnapshotN(seed, 6) }

// extremeSnapshotN is extremeSnapshot with up to n producers.
func extremeSnapshotN(seed uint64, n int) producerstate.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 7))
	pick := func(vals ...int64) int64 { return vals[rng.IntN(len(vals))] }
	snap := producerstate.Snapshot{Offset: pick(0, 1, 300, math.MaxInt64)}
	id := pick(math.MinInt64, -1, 0, 5)
	for i := range n {
		e := producerstate.Entry{
			ProducerID:       id,
			Epoch:            int16(pick(0, -1, math.MaxInt16, math.MinInt16)),
			CoordinatorEpoch: int32(pick(-1, 0, math.MaxInt32, math.MinInt32)),
			TxnFirstOffset:   pick(-1, 0, math.MaxInt64, math.MinInt64),
			LastTimestamp:    pick(-1, 1700000000000, math.MaxInt64, math.MinInt64),
			LastSeen:         pick(0, 1700000000000, 1700000000001, math.MaxInt64, math.MinInt64),
			LastApplied:      pick(-1, 0, 299, math.MaxInt64, math.MinInt64),
		}
		for j := range i % (producerstate.WindowSize + 1) {
			e.Batches = append(e.Batches, producerstate.BatchMeta{
				FirstSeq:    int32(pick(0, math.MaxInt32, math.MinInt32, int64(j))),
				LastSeq:     int32(pick(0, math.MaxInt32, math.MinInt32, int64(j+2))),
				FirstOffset: pick(0, math.MaxInt64, math.MinInt64, int64(10*j)),
				LastOffset:  pick(0, math.MaxInt64, math.MinInt64, int64(10*j+3)),
				Timestamp:   pick(0, math.MaxInt64, math.MinInt64, 1700000000000),
			})
		}
		snap.Producers = append(snap.Producers, e)
		step := 1 + rng.Int64N(300)
		if rng.IntN(50) == 0 {
			step += rng.Int64N(math.MaxInt64 / 4) // a long jump, a multi-byte delta
		}
		if id > math.MaxInt64-step {
			break
		}
		id += step
	}
	return snap
}

// TestDecodeMutations changes every byte of encoded snapshots, of both
// versions, to values that reach the checks (with the CRC made right,
// and without), cuts them at every length, and requires checkDecode to
// hold for each.
func TestDecodeMutations(t *testing.T) {
	for seed := range uint64(20) {
		snap := extremeSnapshot(seed)
		v, err := AppendValue(nil, snap)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range [][]byte{v, asVersion1(t, snap)} {
			checkDecode(t, v, snap.Offset)
			checkDecode(t, v, -1)
			checkDecode(t, v, snap.Offset^1)
			for i := range v {
				for _, c := range []byte{0, 1, 2, 3, 5, 6, 0x7f, 0x80, 0x81, 0xfe, 0xff, v[i] ^ 1, v[i] ^ 0x80} {
					w := bytes.Clone(v)
					w[i] = c
					checkDecode(t, w, -1)
					checkDecode(t, fixCRC(w), -1)
				}
				checkDecode(t, fixCRC(v[:i]), -1)
				checkDecode(t, fixCRC(append(bytes.Clone(v[:i]), v[i+1:]...)), -1)
			}
			checkDecode(t, fixCRC(append(bytes.Clone(v), 0)), -1)
		}
	}
}

// TestDecodeStateLarge: decodeState, which decodes a few hundred
// producers at a time, builds what FromSnapshot builds for values of
// many producers, whole and cut, and fails where decodeValue does.
func TestDecodeStateLarge(t *testing.T) {
	for seed, n := range []int{255, 256, 257, 1000, 3000} {
		snap := extremeSnapshotN(uint64(seed), n)
		v, err := AppendValue(nil, snap)
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, v, snap.Offset)
		checkDecode(t, fixCRC(v[:len(v)-1]), -1)
		checkDecode(t, fixCRC(v[:len(v)/2]), -1)
		if len(snap.Producers) < min(n, 100) {
			t.Fatalf("%d producers, want about %d", len(snap.Producers), n)
		}
	}
}

// FuzzDecodeValue: on any bytes, as they are and with their CRC made
// right, decoding never panics, the two ways of decoding agree, and what
// decodes round-trips (checkDecode).
func FuzzDecodeValue(f *testing.F) {
	for seed := range uint64(4) {
		snap := extremeSnapshot(seed)
		v, err := AppendValue(nil, snap)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
		f.Add(appendValueV1(nil, snap))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, -1)
		checkDecode(t, fixCRC(data), -1)
	})
}
