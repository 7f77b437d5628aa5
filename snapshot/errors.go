package snapshot

import (
	"errors"
	"fmt"
)

// Sentinel errors of the snapshot package.
var (
	// ErrCorrupt: a stored snapshot, or the db file, is damaged (bad
	// checksum, bad field, truncated, a page bbolt cannot read). Every
	// *DecodeError that is not a version mismatch wraps it, and so does
	// every *KafkaSnapshotError except an unknown version.
	ErrCorrupt = errors.New("logstore/snapshot: corrupt snapshot")

	// ErrVersion: a snapshot written in a format version this build does
	// not read. It is not ErrCorrupt: a newer build may read it.
	ErrVersion = errors.New("logstore/snapshot: unknown snapshot format version")

	// ErrInvalidSnapshot: Save was given a snapshot the format cannot
	// hold (negative offset, producers not in strictly ascending id
	// order, a window longer than producerstate.WindowSize). Nothing was
	// written.
	ErrInvalidSnapshot = errors.New("logstore/snapshot: invalid snapshot")

	// ErrNotFound: no snapshot is stored at that offset.
	ErrNotFound = errors.New("logstore/snapshot: no snapshot at that offset")

	// ErrReadOnly: a write on a Store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("logstore/snapshot: store opened read-only")

	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("logstore/snapshot: store closed")

	// ErrPoisoned marks every error a Store returns after a commit
	// failed: the page cache may hold writes the disk does not, so
	// nothing more is done. The original error is wrapped too.
	ErrPoisoned = errors.New("logstore/snapshot: store unusable after a failed write")
)

// DecodeError is a stored snapshot value that did not decode: which one
// and where. Err wraps ErrCorrupt or ErrVersion.
type DecodeError struct {
	Offset int64 // the snapshot's key; -1 when decoded with DecodeValue
	Pos    int   // byte position in the value
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("logstore/snapshot: snapshot value, byte %d: %v", e.Pos, e.Err)
	}
	return fmt.Sprintf("logstore/snapshot: snapshot at offset %d, byte %d: %v", e.Offset, e.Pos, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// KafkaSnapshotError is Kafka's CorruptSnapshotException for a
// <offset>.snapshot file. Error() is Kafka's message exactly, so a dump
// tool prints it as kafka-dump-log.sh does. It wraps ErrVersion for an
// unknown version and ErrCorrupt otherwise.
type KafkaSnapshotError struct {
	Msg string // Kafka's message, word for word
	Pos int    // byte position where reading failed (2 for a CRC mismatch)
	Err error  // ErrCorrupt or ErrVersion
}

func (e *KafkaSnapshotError) Error() string { return e.Msg }
func (e *KafkaSnapshotError) Unwrap() error { return e.Err }
