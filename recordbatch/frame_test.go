package recordbatch_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// head returns the first 17 bytes of a batch with this length field and
// magic byte.
func head(length int32, magic int8) []byte {
	h := make([]byte, recordbatch.HeaderSizeUpToMagic)
	binary.BigEndian.PutUint64(h, 7)
	binary.BigEndian.PutUint32(h[8:], uint32(length))
	h[16] = byte(magic)
	return h
}

// TestNextFrameKafkaStops pins FileLogInputStream.nextBatch's three stop
// rules and their order, at their exact edges.
func TestNextFrameKafkaStops(t *testing.T) {
	tests := []struct {
		name   string
		head   []byte
		left   int64
		want   recordbatch.FrameStop
		size   int64
		length int32
	}{
		{"empty file", nil, 0, recordbatch.FrameShortTail, 0, 0},
		{"16 bytes", head(49, 2)[:16], 16, recordbatch.FrameShortTail, 0, 0},
		// position >= end - 17 ends iteration: 17 bytes are too few,
		// whatever they say.
		{"exactly 17 bytes", head(5, 2), 17, recordbatch.FrameShortTail, 0, 0},
		{"18 bytes, length 13", head(13, 2), 18, recordbatch.FrameTooSmall, 25, 13},
		{"negative length", head(-1, 2), 1000, recordbatch.FrameTooSmall, 11, -1},
		// The size check comes before the end check.
		{"too small beats past the end", head(0, 2), 18, recordbatch.FrameTooSmall, 12, 0},
		{"length 14 fits 26 bytes", head(14, 0), 26, recordbatch.FrameOK, 26, 14},
		{"length 15 runs past 26 bytes", head(15, 0), 26, recordbatch.FramePastEnd, 27, 15},
		{"largest length", head(math.MaxInt32, 2), math.MaxInt64, recordbatch.FrameOK, math.MaxInt32 + 12, math.MaxInt32},
	}
	for _, tt := range tests {
		f, stop := recordbatch.NextFrame(tt.head, tt.left)
		if stop != tt.want || f.Size != tt.size || f.Length != tt.length {
			t.Errorf("%s: %+v, stop %d; want size %d, length %d, stop %d", tt.name, f, stop, tt.size, tt.length, tt.want)
		}
		if recordbatch.HasFrameHead(tt.left) != (tt.want != recordbatch.FrameShortTail) {
			t.Errorf("%s: HasFrameHead(%d) disagrees with NextFrame", tt.name, tt.left)
		}
	}
	if f, _ := recordbatch.NextFrame(head(100, 1), 200); f.Magic != 1 {
		t.Errorf("magic %d, want 1: NextFrame returns the magic unchecked", f.Magic)
	}
}

// TestNextFrameWalksBuiltBatches frames a run of real batches to its end.
func TestNextFrameWalksBuiltBatches(t *testing.T) {
	var file []byte
	var sizes []int
	for i := range 3 {
		bl := recordbatch.NewBuilder(int64(10 * i))
		for r := range i + 1 {
			if err := bl.Append(1700000000000+int64(r), nil, make([]byte, 100*r), nil); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bl.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		file = append(file, b...)
		sizes = append(sizes, len(b))
	}
	file = append(file, file[:40]...) // a torn copy of the first batch
	pos := 0
	for i, want := range sizes {
		f, stop := recordbatch.NextFrame(file[pos:], int64(len(file)-pos))
		if stop != recordbatch.FrameOK || f.Size != int64(want) || f.Magic != recordbatch.Magic {
			t.Fatalf("batch %d at %d: %+v, stop %d, want size %d", i, pos, f, stop, want)
		}
		pos += want
	}
	if _, stop := recordbatch.NextFrame(file[pos:], int64(len(file)-pos)); stop != recordbatch.FramePastEnd {
		t.Fatalf("torn tail: stop %d, want FramePastEnd", stop)
	}
}

// FuzzNextFrame: no head and no length make NextFrame panic, and what it
// frames always fits the bytes left.
func FuzzNextFrame(f *testing.F) {
	f.Add(head(49, 2), int64(61))
	f.Add(head(13, 2), int64(18))
	f.Add([]byte{1, 2}, int64(2))
	f.Fuzz(func(t *testing.T, h []byte, left int64) {
		if left < 0 {
			left = -left
		}
		if int64(len(h)) < recordbatch.HeaderSizeUpToMagic && left > int64(len(h)) {
			left = int64(len(h)) // a reader never claims bytes it has not got
		}
		fr, stop := recordbatch.NextFrame(h, left)
		switch stop {
		case recordbatch.FrameOK:
			if fr.Size > left || fr.Length < recordbatch.MinRecordOverhead || fr.Size != int64(fr.Length)+recordbatch.LogOverhead {
				t.Fatalf("framed %+v with %d bytes left", fr, left)
			}
		case recordbatch.FrameShortTail:
			if left > recordbatch.HeaderSizeUpToMagic {
				t.Fatalf("short tail with %d bytes left", left)
			}
		}
	})
}
