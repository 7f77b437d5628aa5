package segment

import (
	"fmt"
	"slices"

	"github.com/logstore/logstore/recordbatch"
)

// readAppend appends to dst whole batches from the one holding offset,
// up to maxBytes of them but at least one, reading no further than
// size, and reports whether the segment holds offset's batch.
//
// It reads the window [start, start+min(maxBytes, size-start)) with one
// pread and walks the batch headers in memory, rather than a pread per
// header and then one for the data: a 1 MiB fetch of 16 KiB batches is
// two or three system calls instead of 66. The bytes of the window past
// the last whole batch that fits are read and dropped (at most one
// batch). A first batch larger than maxBytes is read whole (KIP-74).
// Every header the walk reaches is checked as the per-header reads
// checked it: a length that is too small or runs past size, or another
// magic, is a CorruptionError at its position in the file.
func (s *segment) readAppend(dst []byte, offset int64, maxBytes int, size int64) ([]byte, bool, error) {
	base := len(dst)
	var hb []byte
	if cap(dst)-base >= recordbatch.HeaderSize {
		hb = dst[base : base+recordbatch.HeaderSize] // room the read overwrites
	} else {
		hb = make([]byte, recordbatch.HeaderSize)
	}
	start, err := s.findBatch(hb, offset, size)
	if err != nil || start < 0 {
		return dst, false, err
	}
	left := size - start
	window := min(int64(max(maxBytes, recordbatch.HeaderSize)), left)
	dst = slices.Grow(dst, int(window))[:base+int(window)]
	if _, err := s.log.ReadAt(dst[base:], start); err != nil {
		return dst[:base], false, err
	}
	pos := 0 // in the window
	for int64(pos) < left {
		buf := dst[base:]
		if pos > 0 && pos+recordbatch.HeaderSize > maxBytes {
			break // no batch fits in what is left of maxBytes
		}
		if pos+recordbatch.HeaderSize > len(buf) {
			// The window holds min(maxBytes, left) bytes, so this is
			// the end of the valid size inside a header: damage.
			return dst[:base], false, s.badHeader(start+int64(pos), buf[pos:], left-int64(pos))
		}
		f, stop := recordbatch.NextFrame(buf[pos:], left-int64(pos))
		if stop != recordbatch.FrameOK || f.Size < recordbatch.HeaderSize || f.Magic != recordbatch.Magic {
			return dst[:base], false, s.badHeader(start+int64(pos), buf[pos:], left-int64(pos))
		}
		if pos > 0 && int64(pos)+f.Size > int64(maxBytes) {
			break
		}
		if int64(pos)+f.Size > int64(len(buf)) {
			// The first batch, larger than maxBytes: read the rest
			// of it (NextFrame checked it ends within size).
			have := len(buf)
			dst = slices.Grow(dst, int(f.Size)-have)[:base+int(f.Size)]
			if _, err := s.log.ReadAt(dst[base+have:], start+int64(have)); err != nil {
				return dst[:base], false, err
			}
		}
		pos += int(f.Size)
	}
	return dst[:base+pos], true, nil
}

// badHeader is the CorruptionError for the batch header at pos, whose
// first bytes (as many as were read) are head, with left bytes of the
// segment's valid size from pos on.
func (s *segment) badHeader(pos int64, head []byte, left int64) error {
	var f recordbatch.Frame
	if len(head) >= recordbatch.HeaderSizeUpToMagic {
		f, _ = recordbatch.NextFrame(head, left)
	}
	return &CorruptionError{File: s.logName, Offset: pos, Err: fmt.Errorf("bad batch header (size %d, magic %d)", f.Size, f.Magic)}
}
