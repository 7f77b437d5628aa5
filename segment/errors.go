package segment

import (
	"errors"
	"fmt"
)

// Sentinel errors of the segment layer.
var (
	// ErrBatchTooLarge: a batch above MaxBatchBytes or SegmentBytes. It
	// is always wrapped, by a *BatchTooLargeError.
	ErrBatchTooLarge = errors.New("batch too large")
	// ErrOffsetOutOfRange: a read below the log start or above the end.
	ErrOffsetOutOfRange = errors.New("logstore/segment: offset out of range")
	// ErrOffsetOverflow: the next offsets would not fit an int64.
	ErrOffsetOverflow = errors.New("logstore/segment: offset overflow")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("logstore/segment: log closed")
	// ErrPoisoned marks the error a log returns for every call after a
	// write or sync failed: the page cache may have dropped data, so
	// nothing more is accepted. The original error is wrapped too.
	ErrPoisoned = errors.New("logstore/segment: log unusable after an I/O failure")
	// ErrCorrupt matches every *CorruptionError.
	ErrCorrupt = errors.New("logstore/segment: corrupt segment file")
)

// CorruptionError is damage in a file of the log, where it was found. Err
// is the cause (often a *recordbatch.CorruptionError).
type CorruptionError struct {
	File   string
	Offset int64 // byte position in File
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("logstore/segment: %s at byte %d: %v", e.File, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error        { return e.Err }
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// BatchTooLargeError is Append's refusal of a batch above MaxBatchBytes
// or SegmentBytes: nothing was written. It wraps ErrBatchTooLarge.
type BatchTooLargeError struct {
	Size          int   // bytes of the batch
	MaxBatchBytes int   // Config.MaxBatchBytes
	SegmentBytes  int64 // Config.SegmentBytes
}

func (e *BatchTooLargeError) Error() string { return "logstore/segment: " + e.Reason() }

// Reason is the refusal without the package prefix: "batch too large: 118
// bytes, limits 1048588 per batch and 100 per segment".
func (e *BatchTooLargeError) Reason() string {
	return fmt.Sprintf("%v: %d bytes, limits %d per batch and %d per segment", ErrBatchTooLarge, e.Size, e.MaxBatchBytes, e.SegmentBytes)
}

func (e *BatchTooLargeError) Unwrap() error { return ErrBatchTooLarge }
