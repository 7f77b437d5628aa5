package segment

import (
	"fmt"
	"io"
	"math"

	"github.com/logstore/logstore/recordbatch"
)

// StreamReader reads the batches of a segment file (Kafka's or this
// store's) from an io.Reader, in order, framed as Kafka's
// FileLogInputStream frames them: base offset, length, partition leader
// epoch and magic (recordbatch.NextFrame) before it trusts the rest. It
// reads only what a batch's length field claims, and only up to
// MaxBatchBytes: a larger batch is stepped over, never held. It checks
// the framing and the magic byte, not the CRC or the records: what a
// reader does with a batch is its own business. It keeps one buffer,
// the size of the largest batch so far.
type StreamReader struct {
	r    io.Reader
	file string // named in errors
	// MaxBatchBytes is the largest batch Next returns the bytes of;
	// NewStreamReader sets DefaultMaxBatchBytes.
	MaxBatchBytes int64
	pos           int64
	n             int
	buf           []byte
}

// NewStreamReader reads the batches of r, naming file in its errors.
func NewStreamReader(r io.Reader, file string) *StreamReader {
	return &StreamReader{r: r, file: file, MaxBatchBytes: DefaultMaxBatchBytes}
}

// StreamBatch is one batch of a StreamReader.
type StreamBatch struct {
	N   int   // ordinal in the file, from 1
	Pos int64 // byte position of its first byte in the file
	// Size is the bytes the batch takes: its length field plus 12.
	Size int64
	// Data is the whole batch, valid until the next call of Next; nil
	// when Size is above MaxBatchBytes (the batch was stepped over).
	Data []byte
}

// Next returns the next batch, or io.EOF at the end of the file, where
// a batch would start. Any other error is a *StreamError: the file ends
// inside a batch, its length or magic byte shows that it is not a
// segment from there on, or the read failed. After an error, Next must
// not be called again.
func (s *StreamReader) Next() (StreamBatch, error) {
	var head [recordbatch.HeaderSizeUpToMagic]byte
	n, err := io.ReadFull(s.r, head[:])
	switch {
	case err == io.EOF:
		return StreamBatch{}, io.EOF
	case err == io.ErrUnexpectedEOF:
		return StreamBatch{}, s.damage(recordbatch.ErrTruncated, "the file ends inside a batch header (%d of %d bytes)", n, len(head))
	case err != nil:
		return StreamBatch{}, s.fail(err)
	}
	// The end of a stream is found by reading: the rest of the batch
	// below reports a batch that runs past it.
	f, stop := recordbatch.NextFrame(head[:], math.MaxInt64)
	if stop == recordbatch.FrameTooSmall {
		return StreamBatch{}, s.damage(recordbatch.ErrBatchTooSmall, "batch length %d is below the minimum %d: not a segment file, or corrupt here", f.Length, recordbatch.MinRecordOverhead)
	}
	if f.Magic < 0 || f.Magic > recordbatch.Magic {
		return StreamBatch{}, s.damage(recordbatch.ErrMagic, "magic byte %d: not a record batch: not a segment file, or corrupt here", f.Magic)
	}
	s.n++
	b := StreamBatch{N: s.n, Pos: s.pos, Size: f.Size}
	if f.Size > s.MaxBatchBytes {
		if _, err := io.CopyN(io.Discard, s.r, f.Size-int64(len(head))); err != nil {
			return StreamBatch{}, s.short(f.Size, err)
		}
		s.pos += f.Size
		return b, nil
	}
	if int64(cap(s.buf)) < f.Size {
		s.buf = make([]byte, f.Size)
	}
	s.buf = s.buf[:f.Size]
	copy(s.buf, head[:])
	if _, err := io.ReadFull(s.r, s.buf[len(head):]); err != nil {
		return StreamBatch{}, s.short(f.Size, err)
	}
	s.pos += f.Size
	b.Data = s.buf
	return b, nil
}

// Pos is the byte position of the next batch: the bytes read so far.
func (s *StreamReader) Pos() int64 { return s.pos }

func (s *StreamReader) short(size int64, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return s.damage(recordbatch.ErrTruncated, "the file ends inside a batch of %d bytes (a torn write?)", size)
	}
	return s.fail(err)
}

func (s *StreamReader) damage(sentinel error, format string, args ...any) error {
	return &StreamError{File: s.file, Offset: s.pos, Err: &streamDamage{reason: fmt.Sprintf(format, args...), sentinel: sentinel}, corrupt: true}
}

func (s *StreamReader) fail(err error) error {
	return &StreamError{File: s.file, Offset: s.pos, Err: err}
}

// StreamError is why a StreamReader stopped, and where: the byte
// position (Offset) of the batch it was reading in File. Err says what
// went wrong, without the file and position. For damage, Err matches
// the recordbatch sentinel of the check (ErrTruncated, ErrBatchTooSmall
// or ErrMagic), and the StreamError matches ErrCorrupt. Otherwise Err
// is the read's own error.
type StreamError struct {
	File    string
	Offset  int64
	Err     error
	corrupt bool
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("logstore/segment: %s at byte %d: %v", e.File, e.Offset, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// Is reports damage as ErrCorrupt; a failed read is not.
func (e *StreamError) Is(target error) bool { return e.corrupt && target == ErrCorrupt }

// streamDamage is the Err of a StreamError for damage: its reason, and
// the recordbatch sentinel of the check.
type streamDamage struct {
	reason   string
	sentinel error
}

func (d *streamDamage) Error() string { return d.reason }
func (d *streamDamage) Unwrap() error { return d.sentinel }
