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
	ErrTruncated = check("batch truncated")

	// ErrBatchTooSmall: batchLength+12 is below the 61-byte header size.
	ErrBatchTooSmall = check("batch size below the 61-byte minimum")

	// ErrBatchTooLarge: batchLength+12 is above the limit the caller set.
	ErrBatchTooLarge = check("batch size above the limit")

	// ErrMagic: the magic byte is not 2 (only record batch v2 is supported).
	ErrMagic = check("unsupported magic")

	// ErrCRC: the stored CRC-32C does not match bytes 21..end.
	ErrCRC = check("crc mismatch")

	// ErrUnknownCodec: the compression codec bits hold 5, 6 or 7.
	ErrUnknownCodec = check("unknown compression codec")

	// ErrRecordCount: recordsCount is negative, zero for client data, or
	// does not equal lastOffsetDelta+1 for client data.
	ErrRecordCount = check("invalid record count")

	// ErrSequence: a producer id is set but the base sequence is negative.
	ErrSequence = check("producer id without a base sequence")

	// ErrTimestamp: a timestamp below -1 where Kafka forbids one.
	ErrTimestamp = check("invalid timestamp")

	// ErrControl: a control batch where client data is required, or a
	// control record whose key or value is malformed.
	ErrControl = check("invalid control batch")

	// ErrRecord: a record inside the batch is malformed (bad varint,
	// length past the end, too many headers, trailing bytes, ...).
	ErrRecord = check("invalid record")

	// ErrDecompress: the compressed records section is not a valid stream
	// for its codec.
	ErrDecompress = check("decompression failed")

	// ErrTooLarge: the records inflate past the limit the caller set.
	ErrTooLarge = check("records exceed the decompression limit")
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

	// record is the index from 0 of the record at fault, plus one; 0
	// when the fault is not one record's (see Record).
	record int64
}

// Record returns the index from 0, in its batch, of the record at fault,
// and whether the error names one: ValidateClientRecords and
// ValidateRecords name the record that does not decode, whose offset
// delta is wrong, or that the header claims and the section lacks (and
// the last one, when its offset delta is not the header's last offset
// delta). A fault of the batch as a whole (its header, a compressed
// section that does not inflate, bytes after the last record) names
// none. It is what a Kafka broker answers in a ProduceResponse's
// RecordErrors (BatchIndex).
func (e *CorruptionError) Record() (index int, ok bool) {
	if e.record <= 0 {
		return 0, false
	}
	return int(e.record - 1), true
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
	return &detailError{check: sentinel, detail: fmt.Sprintf(format, args...)}
}

// Reason is what is wrong, without the package and the position: the
// check that failed and its detail, as "crc mismatch: Record is corrupt
// (stored crc = 1, computed crc = 2)". A caller that already says where
// (a reply to a producer, a report line) prints it instead of Error.
func (e *CorruptionError) Reason() string {
	var d *detailError
	if errors.As(e.Err, &d) {
		return checkName(d.check) + ": " + d.detail
	}
	return checkName(e.Err)
}

// checkError is a sentinel of the checks that make a *CorruptionError:
// its name is the check, and its text has the package prefix, as it may
// also be wrapped and printed alone.
type checkError struct{ name string }

func check(name string) error { return &checkError{name: name} }

func (e *checkError) Error() string { return "logstore/recordbatch: " + e.name }

// checkName is the name of err when it is a check's sentinel, else its
// text.
func checkName(err error) string {
	if c, ok := err.(*checkError); ok {
		return c.name
	}
	return err.Error()
}

// detailError is a check's sentinel with what the check found.
type detailError struct {
	check  error
	detail string
}

func (e *detailError) Error() string { return e.check.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.check }
