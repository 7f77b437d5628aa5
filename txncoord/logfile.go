package txncoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/logstore/logstore/internal/metalog"
)

// The layout of transactions.db (format version 2; version 1 was a
// bbolt file, converted at Open) is a metalog file of this format. See
// the package doc, and package metalog for the frames.
const (
	// logMagic opens the file. A bbolt file starts with a page id of 0,
	// so the two cannot be taken for each other.
	logMagic = "LSTXNLOG"
	// formatVersion is the layout this package writes.
	formatVersion = 2
	// payloadClosed is metalog's close frame type.
	payloadClosed = metalog.PayloadClosed
)

// logFormat: the file's meta value is the coordinator epoch (4 bytes,
// big-endian, >= 0, never lower than the one before it); its keys are
// transactional ids (uint16 lengths), its values records
// (record.encode).
var logFormat = &metalog.Format{
	Magic:    logMagic,
	Version:  formatVersion,
	What:     "transaction coordinator file",
	MetaSize: 4,
	MetaName: "coordinator epoch record",
	CheckMeta: func(prev, next []byte) error {
		e := int32(binary.BigEndian.Uint32(next))
		if e < 0 {
			return &metalog.ValueError{Reason: fmt.Sprintf("coordinator epoch %d is negative", e)}
		}
		if prev != nil {
			if p := int32(binary.BigEndian.Uint32(prev)); e < p {
				return &metalog.ValueError{Reason: fmt.Sprintf("coordinator epoch %d after %d", e, p)}
			}
		}
		return nil
	},
	CheckValue: func(_ string, val []byte) error {
		if _, err := decodeRecord(val); err != nil {
			var de *decodeError
			if errors.As(err, &de) {
				return &metalog.ValueError{Offset: de.offset, Reason: de.reason}
			}
			return err
		}
		return nil
	},
}

// TmpFileName is the file a compaction or a conversion writes, next to
// FileName, before it renames it over FileName. One left by a crash is
// ignored, and replaced by the next Open.
const TmpFileName = FileName + metalog.TmpSuffix

// defaultCompactBytes is Config.CompactBytes's default.
const defaultCompactBytes = metalog.DefaultCompactBytes

// logState is what a replay of the file yields.
type logState struct {
	epoch   int32             // the last coordinator epoch record
	records map[string][]byte // id -> encoded record, the last put of each
	// end is the offset after the last good frame; tail is why the
	// bytes from end on were dropped ("" when there are none).
	end  int64
	tail string
	// closed: the last good frame is the close record (payloadClosed).
	closed bool
}

func epochBytes(epoch int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(epoch)) }

// appendFrame appends a frame holding payload.
func appendFrame(b, payload []byte) []byte { return metalog.AppendFrame(b, payload) }

// isLogFile reports whether b (the file's first bytes) starts with the
// magic of this layout.
func isLogFile(b []byte) bool { return logFormat.IsFile(b) }

// damaged makes a *metalog.DamagedError in err this package's
// *DamagedError (the key is the transactional id); other errors are
// returned as they are.
func damaged(err error) error {
	var de *metalog.DamagedError
	if errors.As(err, &de) {
		return &DamagedError{File: de.File, Key: de.Key, Offset: de.Offset, Reason: de.Reason}
	}
	return err
}

// decodeLog replays data, the whole file at path (metalog's replay: a
// torn tail is dropped, damage is a *DamagedError naming the file and
// the byte offset, as is a file without its coordinator epoch record).
func decodeLog(data []byte, path string) (logState, error) {
	st, err := logFormat.Decode(data, path)
	ls := logState{epoch: -1, records: st.Records, end: st.End, tail: st.Tail, closed: st.Closed}
	if st.Meta != nil {
		ls.epoch = int32(binary.BigEndian.Uint32(st.Meta))
	}
	return ls, damaged(err)
}

// compactImage is the file that holds exactly epoch and records: the
// header, the epoch record, then the records in id order, in puts
// frames of about 1 MiB.
func compactImage(epoch int32, records map[string][]byte) []byte {
	return logFormat.Image(epochBytes(epoch), records)
}

// stepHook, when set (by tests), is called at each step of writing a
// new file (compaction, conversion, creation): "tmp written", "tmp
// synced", "renamed", "dir synced", and after a commit's append
// ("appended"). A non-nil error stops the write there, as a crash
// would.
var stepHook func(step string) error

func step(name string) error {
	if stepHook != nil {
		return stepHook(name)
	}
	return nil
}

// logFile is the open transactions.db: the writer's file, locked
// exclusively, and the state it holds as durable.
type logFile struct{ *metalog.Log }

// newLogFile writes path anew with epoch and records (a rewrite: a new
// file, synced, renamed over path, the directory synced) and returns
// it open for appends.
func newLogFile(path string, epoch int32, records map[string][]byte, compactBytes int64) (*logFile, error) {
	l, err := metalog.Create(path, logFormat, epochBytes(epoch), records, metalog.Options{CompactBytes: compactBytes, Step: step})
	if err != nil {
		return nil, err
	}
	return &logFile{l}, nil
}

// markClosed appends the close record and syncs it: the next Open
// knows every write of this coordinator was committed. After a failed
// commit it does nothing (the file is not known to hold them all).
func (l *logFile) markClosed() error { return l.MarkClosed() }

func (l *logFile) close() error { return l.Close() }

// errLockTimeout: readLocked waited its timeout.
var errLockTimeout = metalog.ErrLockTimeout

// readLocked opens path, takes its lock (exclusive or shared), waiting
// at most timeout, and reads it whole (metalog.ReadLocked). It returns
// the file, locked, and its bytes; whether the file is of this layout
// is for the caller to check.
func readLocked(path string, exclusive bool, timeout time.Duration) (*os.File, []byte, error) {
	f, data, err := metalog.ReadLocked(path, exclusive, timeout)
	return f, data, damaged(err)
}
