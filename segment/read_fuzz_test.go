package segment_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// FuzzReadAppend damages the segment under an open log (patch written
// at a byte position of its file, after the log checked it at open) and
// reads from an offset with a limit. The read must not panic; it returns
// either a CorruptionError, or, after the prefix it was given (which it
// keeps either way), whole frames (lengths that chain to the end of what
// it returned), no more bytes than the limit unless it is one batch.
func FuzzReadAppend(f *testing.F) {
	f.Add(uint16(0), []byte{}, uint8(0), int32(1<<20))
	f.Add(uint16(8), []byte{0x7f, 0xff, 0xff, 0xff}, uint8(0), int32(1<<20))
	f.Add(uint16(200), []byte{0, 0, 0, 0}, uint8(2), int32(100))
	f.Add(uint16(16), []byte{1}, uint8(5), int32(61))
	f.Fuzz(func(t *testing.T, at uint16, patch []byte, from uint8, limit int32) {
		dir := t.TempDir()
		l, _ := open(t, dir, segment.Config{})
		defer l.Close()
		for i := range 8 {
			if _, err := l.Append(batch(t, 1+i%3, 40*i, 1700000000000+int64(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flushed(); err != nil {
			t.Fatal(err)
		}
		logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil || len(logs) != 1 {
			t.Fatalf("%v %v", logs, err)
		}
		file, err := os.OpenFile(logs[0], os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		size, err := file.Seek(0, 2)
		if err == nil && len(patch) > 0 {
			pos := int64(at) % size
			_, err = file.WriteAt(patch[:min(int64(len(patch)), size-pos)], pos)
		}
		if err := errors.Join(err, file.Close()); err != nil {
			t.Fatal(err)
		}
		offset := int64(from) % (l.EndOffset() + 1)
		data, err := l.ReadAppend([]byte("pre"), offset, int(limit))
		if string(data[:3]) != "pre" {
			t.Fatalf("the prefix became %q", data[:3])
		}
		if err != nil {
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("read failed not as damage: %v", err)
			}
			return
		}
		data = data[3:]
		n := 0
		for pos := 0; pos < len(data); n++ {
			fr, stop := recordbatch.NextFrame(data[pos:], int64(len(data)-pos))
			if stop != recordbatch.FrameOK || fr.Size < recordbatch.HeaderSize {
				t.Fatalf("returned bytes at %d of %d are not a whole frame (%v)", pos, len(data), stop)
			}
			pos += int(fr.Size)
		}
		if n > 1 && len(data) > int(limit) {
			t.Fatalf("%d batches, %d bytes, for a limit of %d", n, len(data), limit)
		}
	})
}
