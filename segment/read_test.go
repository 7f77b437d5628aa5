package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// readFixture appends 60 batches of 1 to 40 records of 1 to 300 bytes
// to a log of small segments and returns it, what each append answered,
// and each batch's bytes as the log holds them.
func readFixture(t *testing.T, cfg segment.Config) (*segment.Log, []segment.AppendInfo, [][]byte) {
	t.Helper()
	l, _ := open(t, t.TempDir(), cfg)
	t.Cleanup(func() { l.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	var infos []segment.AppendInfo
	for i := range 60 {
		info, err := l.Append(batch(t, 1+rng.IntN(40), 1+rng.IntN(300), 1700000000000+int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	var raw [][]byte
	for _, info := range infos {
		data, err := l.Read(info.BaseOffset, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := recordbatch.Parse(data, 0)
		if err != nil || b.BaseOffset() != info.BaseOffset || len(data) != b.Size() {
			t.Fatalf("batch at %d: %v", info.BaseOffset, err)
		}
		raw = append(raw, data)
	}
	return l, infos, raw
}

// wantRead is what a read at offset of maxBytes returns: the batches of
// offset's segment from the one holding it, as many as fit in maxBytes
// but at least one.
func wantRead(infos []segment.AppendInfo, raw [][]byte, offset int64, maxBytes int) []byte {
	var out []byte
	for i, info := range infos {
		if info.LastOffset < offset {
			continue
		}
		if len(out) > 0 && (info.Segment != infos[i-1].Segment || len(out)+len(raw[i]) > maxBytes) {
			break
		}
		out = append(out, raw[i]...)
	}
	return out
}

// TestReadAppend: from every offset, with limits below a header, at a
// batch's size, across several batches and past a segment's end, a read
// returns the batches the old header-by-header read returned (those of
// offset's segment from the one holding it that fit, at least one),
// appended after what dst held, with every index density.
func TestReadAppend(t *testing.T) {
	for _, interval := range []int{1, 3000, 1 << 20} {
		l, infos, raw := readFixture(t, segment.Config{SegmentBytes: 16 << 10, IndexIntervalBytes: interval})
		if len(l.Segments()) < 3 {
			t.Fatalf("%d segments", len(l.Segments()))
		}
		for i, info := range infos {
			limits := []int{0, 1, recordbatch.HeaderSize, len(raw[i]) - 1, len(raw[i]), len(raw[i]) + recordbatch.HeaderSize, 5000, 1 << 20}
			if i+1 < len(infos) {
				limits = append(limits, len(raw[i])+len(raw[i+1]), len(raw[i])+len(raw[i+1])-1)
			}
			for _, off := range []int64{info.BaseOffset, info.LastOffset} {
				for _, limit := range limits {
					want := wantRead(infos, raw, off, limit)
					got, err := l.Read(off, limit)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("interval %d: Read(%d, %d): %d bytes (%v), want %d", interval, off, limit, len(got), err, len(want))
					}
					prefix := []byte("before")
					got, err = l.ReadAppend(prefix, off, limit)
					if err != nil || !bytes.Equal(got[:len(prefix)], []byte("before")) || !bytes.Equal(got[len(prefix):], want) {
						t.Fatalf("interval %d: ReadAppend(%q, %d, %d): %d bytes (%v), want %q and %d", interval, prefix, off, limit, len(got), err, prefix, len(want))
					}
				}
			}
		}
		got, err := l.ReadAppend([]byte("x"), l.EndOffset(), 100)
		if err != nil || string(got) != "x" {
			t.Fatalf("read at the end: %q, %v", got, err)
		}
		got, err = l.ReadAppend([]byte("x"), l.EndOffset()+1, 100)
		if !errors.Is(err, segment.ErrOffsetOutOfRange) || string(got) != "x" {
			t.Fatalf("read past the end: %q, %v", got, err)
		}
	}
}

// TestReadAppendAllocates: a read into a buffer with room for maxBytes
// allocates nothing (a server answering fetches reuses its buffers).
func TestReadAppendAllocates(t *testing.T) {
	l, infos, _ := readFixture(t, segment.Config{SegmentBytes: 1 << 20})
	buf := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := l.ReadAppend(buf, infos[3].BaseOffset, cap(buf)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per read into a buffer with room", allocs)
	}
}

// TestReadDamagedHeader: a batch header that the page under the log
// changed (a length past the segment's end, a length below a header's,
// another magic) fails the read that reaches it with a CorruptionError
// at its byte position, and a read that stops before it is served.
func TestReadDamagedHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    int // the header's byte changed
		value []byte
	}{
		{"length past the end", 8, []byte{0x7f, 0xff, 0xff, 0xff}},
		{"length too small", 8, []byte{0, 0, 0, 10}},
		{"magic", 16, []byte{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := open(t, dir, segment.Config{})
			defer l.Close()
			var infos []segment.AppendInfo
			for i := range 5 {
				info, err := l.Append(batch(t, 3, 100, 1700000000000+int64(i)))
				if err != nil {
					t.Fatal(err)
				}
				infos = append(infos, info)
			}
			if err := l.Flushed(); err != nil {
				t.Fatal(err)
			}
			logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
			if err != nil || len(logs) != 1 {
				t.Fatalf("%v %v", logs, err)
			}
			f, err := os.OpenFile(logs[0], os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(tc.value, infos[3].Position+int64(tc.at)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			_, err = l.Read(infos[1].BaseOffset, 1<<20)
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, segment.ErrCorrupt) || ce.Offset != infos[3].Position || ce.File != logs[0] {
				t.Fatalf("read across the damaged header: %v, want a CorruptionError at byte %d of %s", err, infos[3].Position, logs[0])
			}
			sizeOf := func(i int) int { return int(infos[i+1].Position - infos[i].Position) }
			data, err := l.Read(infos[1].BaseOffset, sizeOf(1)+sizeOf(2))
			if err != nil || len(data) != sizeOf(1)+sizeOf(2) || int64(binary.BigEndian.Uint64(data)) != infos[1].BaseOffset {
				t.Fatalf("read before the damaged header: %d bytes, %v", len(data), err)
			}
		})
	}
}
