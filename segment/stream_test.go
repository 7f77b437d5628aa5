package segment

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/logstore/logstore/recordbatch"
)

// streamBatch is a client batch of n one-byte records.
func streamBatch(t testing.TB, n int) []byte {
	t.Helper()
	var bld recordbatch.Builder
	bld.Reset(0)
	for range n {
		if err := bld.Append(1, nil, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamReader: batches come back whole, in order, with their
// ordinal and position; one above MaxBatchBytes is stepped over; the
// damage a segment stream can show stops it with the file and position.
func TestStreamReader(t *testing.T) {
	a, b := streamBatch(t, 1), streamBatch(t, 3)
	file := append(append(append([]byte{}, a...), b...), a...)
	s := NewStreamReader(iotest.OneByteReader(bytes.NewReader(file)), "x.log")
	s.MaxBatchBytes = int64(len(b)) - 1
	for i, want := range []struct {
		pos  int64
		data []byte
	}{{0, a}, {int64(len(a)), nil}, {int64(len(a) + len(b)), a}} {
		got, err := s.Next()
		if err != nil || got.N != i+1 || got.Pos != want.pos || !bytes.Equal(got.Data, want.data) || (got.Data == nil) != (want.data == nil) {
			t.Fatalf("batch %d: %+v, %v", i+1, got, err)
		}
	}
	if _, err := s.Next(); err != io.EOF || s.Pos() != int64(len(file)) {
		t.Fatalf("end: %v at %d", err, s.Pos())
	}

	tooSmall := append([]byte{}, a...)
	tooSmall[11] = 5 // length field 5
	badMagic := append([]byte{}, a...)
	badMagic[16] = 9
	for _, tc := range []struct {
		name     string
		data     []byte
		sentinel error
		reason   string
	}{
		{"short header", append(append([]byte{}, a...), a[:10]...), recordbatch.ErrTruncated, "the file ends inside a batch header (10 of 17 bytes)"},
		{"torn batch", append(append([]byte{}, a...), a[:30]...), recordbatch.ErrTruncated, "the file ends inside a batch of 69 bytes (a torn write?)"},
		{"too small", append(append([]byte{}, a...), tooSmall...), recordbatch.ErrBatchTooSmall, "batch length 5 is below the minimum 14: not a segment file, or corrupt here"},
		{"bad magic", append(append([]byte{}, a...), badMagic...), recordbatch.ErrMagic, "magic byte 9: not a record batch: not a segment file, or corrupt here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStreamReader(bytes.NewReader(tc.data), "x.log")
			if _, err := s.Next(); err != nil {
				t.Fatal(err)
			}
			_, err := s.Next()
			var se *StreamError
			if !errors.As(err, &se) || se.File != "x.log" || se.Offset != int64(len(a)) || se.Err.Error() != tc.reason ||
				!errors.Is(err, tc.sentinel) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if len(a) != 69 {
		t.Fatalf("a one-record batch is %d bytes; the reasons above say 69", len(a))
	}

	// A failed read is not damage.
	boom := errors.New("boom")
	_, err := NewStreamReader(iotest.ErrReader(boom), "x.log").Next()
	if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("read error: %v", err)
	}
}

// FuzzStreamReader: no input panics or makes the reader hold more than
// MaxBatchBytes; the batches it returns tile the input from byte 0; a
// clean end is at the end of the input; a batch it returns frames as
// recordbatch.NextFrame frames it.
func FuzzStreamReader(f *testing.F) {
	a := streamBatch(f, 2)
	f.Add(a)
	f.Add(append(append([]byte{}, a...), a[:20]...))
	f.Add(append(append([]byte{}, a...), make([]byte, 17)...))
	f.Add([]byte("this is not a segment file\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewStreamReader(bytes.NewReader(data), "f.log")
		s.MaxBatchBytes = 200
		pos := int64(0)
		for {
			b, err := s.Next()
			if err == io.EOF {
				if pos != int64(len(data)) {
					t.Fatalf("EOF at %d of %d", pos, len(data))
				}
				return
			}
			if err != nil {
				var se *StreamError
				if !errors.As(err, &se) || se.Offset != pos || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v at %d", err, pos)
				}
				return
			}
			if b.Pos != pos || b.Size < recordbatch.MinRecordOverhead+recordbatch.LogOverhead || pos+b.Size > int64(len(data)) {
				t.Fatalf("batch %+v at %d of %d", b, pos, len(data))
			}
			if b.Data != nil && !bytes.Equal(b.Data, data[pos:pos+b.Size]) || (b.Data == nil) != (b.Size > s.MaxBatchBytes) {
				t.Fatalf("batch %d: %d bytes of %d", b.N, len(b.Data), b.Size)
			}
			if cap(s.buf) > int(s.MaxBatchBytes) {
				t.Fatalf("holds %d bytes", cap(s.buf))
			}
			if _, stop := recordbatch.NextFrame(data[pos:], b.Size); stop != recordbatch.FrameOK {
				t.Fatalf("batch %d frames as %v", b.N, stop)
			}
			pos += b.Size
		}
	})
}
