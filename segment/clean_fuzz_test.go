package segment_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// FuzzOffsetMap drives the map with keys and offsets from the input and
// checks it against a Go map: a key put is found at its last offset, a
// put is refused only for a new key once the map is full.
func FuzzOffsetMap(f *testing.F) {
	f.Add([]byte("abcabcdefg"), uint16(100))
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2}, uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, slots uint16) {
		m, err := segment.NewOffsetMap(max(int(slots)%512, 3) * 24)
		if err != nil {
			t.Fatal(err)
		}
		model := map[string]int64{}
		for i := 0; i+1 < len(data); i += 2 {
			k := data[i:min(i+1+int(data[i+1])%3, len(data))]
			_, had := model[string(k)]
			if m.Put(k, int64(i)) {
				model[string(k)] = int64(i)
			} else if had || !m.Full() {
				t.Fatalf("put %q refused with %d of %d slots", k, m.Len(), m.Slots())
			}
			if m.Len() != len(model) {
				t.Fatalf("len %d, model %d", m.Len(), len(model))
			}
		}
		for k, v := range model {
			if got := m.Get([]byte(k)); got != v {
				t.Fatalf("get %q: %d, want %d", k, got, v)
			}
		}
	})
}

// FuzzCleanBatch appends a batch made of the input (a header whose
// fields come from the input, any records section, the CRC made right so
// that the log takes it) before valid keyed batches, and cleans: the
// pass never panics; it succeeds, leaving a log whose every batch reads
// and validates, or it fails with an error matching ErrCorrupt and the
// log reads as before.
func FuzzCleanBatch(f *testing.F) {
	good := keyedBatch(f, recordbatch.CodecNone, -1, 0, []rec{{ts: 1, key: []byte("a"), value: []byte("x")}, {ts: 2, key: []byte("a")}})
	f.Add([]byte(good[21:]))
	for _, c := range codecs[1:] {
		b := keyedBatch(f, c, 3, 0, []rec{{ts: 1, key: []byte("a"), value: []byte("x")}, {ts: 2, key: []byte("b"), value: []byte("y")}})
		f.Add([]byte(b[21:]))
	}
	f.Fuzz(func(t *testing.T, tail []byte) {
		if len(tail) < recordbatch.HeaderSize-21 || len(tail) > 1<<16 {
			return
		}
		raw := make([]byte, 21, 21+len(tail))
		raw = append(raw, tail...)
		binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
		raw[16] = recordbatch.Magic
		binary.BigEndian.PutUint32(raw[17:], recordbatch.Checksum(raw[21:]))
		b, err := recordbatch.Parse(raw, 0)
		if err != nil || b.Validate() != nil {
			return
		}
		fsys := crashfs.New(t.TempDir()) // in memory: no fsync per input
		dir := filepath.Join(fsys.Root(), "p-0")
		cfg := segment.Config{FS: fsys, SegmentBytes: 1 << 17}
		l, _ := open(t, dir, cfg)
		defer l.Close()
		if _, err := l.Append(b); err != nil {
			return // offsets past the int64 range, and the like
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for range 3 {
			big := keyedBatch(t, codecs[rng.IntN(len(codecs))], -1, 0, []rec{{ts: 5, key: []byte("a"), value: make([]byte, 1<<16)}})
			if _, err := l.Append(big); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.Flushed(); err != nil {
			t.Fatal(err)
		}
		res, err := l.Clean(segment.CleanOptions{MapBytes: 1 << 12, Now: time.UnixMilli(1e12)})
		if err != nil {
			if !errors.Is(err, segment.ErrCorrupt) {
				t.Fatalf("clean: %v (not ErrCorrupt)", err)
			}
			if l.Err() != nil {
				t.Fatalf("a refused pass poisoned the log: %v", l.Err())
			}
		}
		_ = res
		if err := l.Batches(0, func(b recordbatch.Batch) error { return b.Validate() }); err != nil {
			t.Fatal(err)
		}
	})
}
