package snapshot_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
)

const benchProducers = 10000

// BenchmarkSave stores the state of 10,000 producers with full windows
// (what a roll of a busy partition saves). Encode is the encoding alone
// into a reused buffer; Save is the whole call: encoding, bbolt's
// transaction and, with sync=true, its fdatasync of the file (twice per
// commit: data pages, then the meta page). Each Save overwrites the
// same offset, so the db stays the same size, as it does when retention
// deletes old snapshots. value-bytes is the size of one encoded value.
func BenchmarkSave(b *testing.B) {
	snap := fullSnapshot(1<<30, benchProducers)
	value := mustEncode(b, snap)
	b.Run(fmt.Sprintf("Encode/producers=%d", benchProducers), func(b *testing.B) {
		buf := make([]byte, 0, len(value))
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = snapshot.AppendValue(buf[:0], snap); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(value)), "value-bytes")
	})
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("Save/producers=%d/sync=%t", benchProducers, sync), func(b *testing.B) {
			s, _, err := snapshot.Open(b.TempDir(), snapshot.Options{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Save(snap); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(value)), "value-bytes")
			b.StopTimer()
		})
	}
}

// BenchmarkLoadLatest loads the newest of 4 stored snapshots of 10,000
// producers with full windows: one read transaction, the CRC, and the
// decoding of every producer. Decode is the decoding of one value alone.
func BenchmarkLoadLatest(b *testing.B) {
	snap := fullSnapshot(1<<30, benchProducers)
	value := mustEncode(b, snap)
	b.Run(fmt.Sprintf("Decode/producers=%d", benchProducers), func(b *testing.B) {
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := snapshot.DecodeValue(value); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same snapshot in format version 1 (no seen times): the bytes
	// the benchmark decoded before version 2, for comparing decoders.
	v1 := snapshot.AppendValueV1(nil, snap)
	b.Run(fmt.Sprintf("Decode-v1/producers=%d", benchProducers), func(b *testing.B) {
		b.SetBytes(int64(len(v1)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := snapshot.DecodeValue(v1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("LoadLatest/producers=%d", benchProducers), func(b *testing.B) {
		s, _, err := snapshot.Open(b.TempDir(), snapshot.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for i := range int64(4) {
			snap.Offset = (1 + i) << 30
			if err := s.Save(snap); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			got, skipped, ok, err := s.LoadLatest(math.MaxInt64)
			if err != nil || !ok || len(skipped) != 0 || len(got.Producers) != benchProducers {
				b.Fatalf("ok=%v skipped=%v err=%v", ok, skipped, err)
			}
		}
		b.StopTimer()
	})
	// What an open does with the snapshot: LoadLatest then FromSnapshot,
	// or both in one step with LoadLatestState.
	b.Run(fmt.Sprintf("LoadLatest+FromSnapshot/producers=%d", benchProducers), func(b *testing.B) {
		s := fourSnapshots(b, snap)
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			got, skipped, ok, err := s.LoadLatest(math.MaxInt64)
			if err != nil || !ok || len(skipped) != 0 {
				b.Fatalf("ok=%v skipped=%v err=%v", ok, skipped, err)
			}
			if st := producerstate.FromSnapshot(producerstate.DefaultConfig(), got); st.Len() != benchProducers {
				b.Fatal(st.Len())
			}
		}
		b.StopTimer()
	})
	b.Run(fmt.Sprintf("LoadLatestState/producers=%d", benchProducers), func(b *testing.B) {
		s := fourSnapshots(b, snap)
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			st, skipped, ok, err := s.LoadLatestState(math.MaxInt64, producerstate.DefaultConfig())
			if err != nil || !ok || len(skipped) != 0 || st.Len() != benchProducers {
				b.Fatalf("ok=%v skipped=%v err=%v", ok, skipped, err)
			}
		}
		b.StopTimer()
	})
}

// fourSnapshots returns a store holding snap at 4 offsets, the newest
// at 4 << 30; it is closed when b ends.
func fourSnapshots(b *testing.B, snap producerstate.Snapshot) *snapshot.Store {
	s, _, err := snapshot.Open(b.TempDir(), snapshot.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := range int64(4) {
		snap.Offset = (1 + i) << 30
		if err := s.Save(snap); err != nil {
			b.Fatal(err)
		}
	}
	return s
}
