package recordbatch

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns for bad bytes is a
// *CorruptionError that wraps exactly one of these, so callers can test
// the reason with errors.Is and the position with errors.As.
var (
	// ErrCorrupt matches every *CorruptionError: the bytes are not a
	// valid batch. Use it to tell bad data from other failures.
	ErrCorrupt = errors.New("logstore/recordbatch: corrupt record batch")

	// ErrTruncated: the buffer ends before the batch does (fewer than 61
	// header bytes, or fewer bytes than batchLength claims). At the end of
	// a segment this is what a torn write looks like.
	ErrTruncated = errors.New("logstore/recordbatch: batch truncated")

	// ErrBatchTooSmall: batchLength+12 is below the 61-byte header size.
	ErrBatchTooSmall = errors.New("logstore/recordbatch: batch size below the 61-byte minimum")

	// ErrBatchTooLarge: batchLength+12 is above the limit the caller set.
	ErrBatchTooLarge = errors.New("logstore/recordbatch: batch size above the limit")

	// ErrMagic: the magic byte is not 2 (only record batch v2 is supported).
	ErrMagic = errors.New("logstore/recordbatch: unsupported magic")

	// ErrCRC: the stored CRC-32C does not match bytes 21..end.
	ErrCRC = errors.New("logstore/recordbatch: crc mismatch")

	// ErrUnknownCodec: the compression codec bits hold 5, 6 or 7.
	ErrUnknownCodec = errors.New("logstore/recordbatch: unknown compression codec")

	// ErrRecordCount: recordsCount is negative, zero for client data, or
	// does not equal lastOffsetDelta+1 for client data.
	ErrRecordCount = errors.New("logstore/recordbatch: invalid record count")

	// ErrSequence: a producer id is set but the base sequence is negative.
	ErrSequence = errors.New("logstore/recordbatch: producer id without a base sequence")

	// ErrTimestamp: a timestamp below -1 where Kafka forbids one.
	ErrTimestamp = errors.New("logstore/recordbatch: invalid timestamp")

	// ErrControl: a control batch where client data is required, or a
	// control record whose key or value is malformed.
	ErrControl = errors.New("logstore/recordbatch: invalid control batch")

	// ErrRecord: a record inside the batch is malformed (bad varint,
	// length past the end, too many headers, trailing bytes, ...).
	ErrRecord = errors.New("logstore/recordbatch: invalid record")

	// ErrDecompress: the compressed records section is not a valid stream
	// for its codec.
	ErrDecompress = errors.New("logstore/recordbatch: decompression failed")

	// ErrTooLarge: the records inflate past the limit the caller set.
	ErrTooLarge = errors.New("logstore/recordbatch: records exceed the decompression limit")
)

// CorruptionError reports bad bytes and where they are. Offset is the byte
// position of the problem relative to the start of the buffer handed to
// the function that failed (for a batch, the batch's first byte; for
// records, the first byte of the uncompressed records section, which
// Section says). Callers that know more (a file, its position) wrap it.
type CorruptionError struct {
	Section string // "batch" or "records"
	Offset  int64
	Err     error // one of the sentinels above, possibly wrapped with detail
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s at %s byte %d", e.Err, e.Section, e.Offset)
}

// Unwrap returns the sentinel (and detail) of the corruption.
func (e *CorruptionError) Unwrap() error { return e.Err }

// Is makes every CorruptionError match ErrCorrupt.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

func batchErr(off int, sentinel error, format string, args ...any) error {
	return &CorruptionError{Section: "batch", Offset: int64(off), Err: detail(sentinel, format, args...)}
}

func recordsErr(off int, sentinel error, format string, args ...any) error {
	return &CorruptionError{Section: "records", Offset: int64(off), Err: detail(sentinel, format, args...)}
}

func detail(sentinel error, format string, args ...any) error {
	if format == "" {
		return sentinel
	}
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
