package snapshot

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// checkFastMatchesSlow fails unless decodeFast and decodeSlow agree on
// value: both accept it with the same snapshot, or both refuse it.
func checkFastMatchesSlow(t *testing.T, value []byte, key int64) {
	t.Helper()
	fast, ok, _ := decodeFast(value, key)
	slow, err := decodeSlow(value, key, decodeBufs{})
	if ok != (err == nil) {
		t.Fatalf("decodeFast ok=%v, decodeSlow err=%v, for % x", ok, err, value)
	}
	if ok && !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decodeFast and decodeSlow differ for % x:\nfast %+v\nslow %+v", value, fast, slow)
	}
	// decodeState agrees too, and builds what FromSnapshot builds.
	cfg := producerstate.Config{}
	st, stOK := decodeState(value, key, cfg)
	if stOK != ok {
		t.Fatalf("decodeState ok=%v, decodeFast ok=%v, for % x", stOK, ok, value)
	}
	if ok && !st.Equal(producerstate.FromSnapshot(cfg, fast)) {
		t.Fatalf("decodeState differs from FromSnapshot of decodeFast for % x", value)
	}
	// And what decodeValue returns on a refusal does not depend on the
	// buffers decodeFast left.
	if !ok {
		_, err2 := decodeValue(value, key)
		if err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("decodeValue: %v, decodeSlow: %v", err2, err)
		}
	}
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

// TestDecodeFastMatchesSlow changes every byte of encoded snapshots to
// values that reach the checks (with the CRC made right, and without),
// cuts them at every length, and requires the two decoders to agree.
func TestDecodeFastMatchesSlow(t *testing.T) {
	for seed := range uint64(20) {
		snap := extremeSnapshot(seed)
		v, err := AppendValue(nil, snap)
		if err != nil {
			t.Fatal(err)
		}
		checkFastMatchesSlow(t, v, snap.Offset)
		checkFastMatchesSlow(t, v, -1)
		checkFastMatchesSlow(t, v, snap.Offset^1)
		for i := range v {
			for _, c := range []byte{0, 1, 2, 5, 6, 0x7f, 0x80, 0x81, 0xfe, 0xff, v[i] ^ 1, v[i] ^ 0x80} {
				w := bytes.Clone(v)
				w[i] = c
				checkFastMatchesSlow(t, w, -1)
				checkFastMatchesSlow(t, fixCRC(w), -1)
			}
			checkFastMatchesSlow(t, fixCRC(v[:i]), -1)
			checkFastMatchesSlow(t, fixCRC(append(bytes.Clone(v[:i]), v[i+1:]...)), -1)
		}
		checkFastMatchesSlow(t, fixCRC(append(bytes.Clone(v), 0)), -1)
	}
}

// TestDecodeStateLarge: decodeState, which decodes a few hundred
// producers at a time, builds what FromSnapshot builds for values of
// many producers, whole and cut.
func TestDecodeStateLarge(t *testing.T) {
	for seed, n := range []int{255, 256, 257, 1000, 3000} {
		snap := extremeSnapshotN(uint64(seed), n)
		v, err := AppendValue(nil, snap)
		if err != nil {
			t.Fatal(err)
		}
		checkFastMatchesSlow(t, v, snap.Offset)
		checkFastMatchesSlow(t, fixCRC(v[:len(v)-1]), -1)
		checkFastMatchesSlow(t, fixCRC(v[:len(v)/2]), -1)
		if len(snap.Producers) < min(n, 100) {
			t.Fatalf("%d producers, want about %d", len(snap.Producers), n)
		}
	}
}

// FuzzDecodeFastMatchesSlow: the two decoders agree on any bytes, as
// they are and with their CRC made right.
func FuzzDecodeFastMatchesSlow(f *testing.F) {
	for seed := range uint64(4) {
		v, err := AppendValue(nil, extremeSnapshot(seed))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastMatchesSlow(t, data, -1)
		checkFastMatchesSlow(t, fixCRC(data), -1)
	})
}
