package segment

import (
	"fmt"

	"github.com/logstore/logstore/recordbatch"
)

// frameErr says why framing stopped where left bytes of the file remain,
// as an error wrapping recordbatch.ErrTruncated for a torn tail and
// recordbatch.ErrBatchTooSmall for a length field nothing can be read
// past. stop is not FrameOK.
func frameErr(f recordbatch.Frame, stop recordbatch.FrameStop, left int64) error {
	switch stop {
	case recordbatch.FrameShortTail:
		return fmt.Errorf("%w: %d bytes left, too few for a batch header", recordbatch.ErrTruncated, left)
	case recordbatch.FrameTooSmall:
		return fmt.Errorf("%w: record size %d is smaller than the minimum record overhead (%d)", recordbatch.ErrBatchTooSmall, f.Length, recordbatch.MinRecordOverhead)
	default:
		return fmt.Errorf("%w: batch of %d bytes, %d left in the file", recordbatch.ErrTruncated, f.Size, left)
	}
}

// frameDetail is frameErr as verify words it in a report.
func frameDetail(f recordbatch.Frame, stop recordbatch.FrameStop, left int64) string {
	switch stop {
	case recordbatch.FrameShortTail:
		return fmt.Sprintf("%d bytes at the end of the file, too few for a batch header", left)
	case recordbatch.FrameTooSmall:
		return fmt.Sprintf("batch length %d is below the minimum %d: the file cannot be read past here", f.Length, recordbatch.MinRecordOverhead)
	default:
		return fmt.Sprintf("a batch of %d bytes, but only %d bytes are left in the file", f.Size, left)
	}
}
