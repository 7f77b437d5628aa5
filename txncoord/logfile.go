package txncoord

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/logstore/logstore/internal/fileutil"
)

// The append-only layout of transactions.db (format version 2; version 1
// was a bbolt file, converted at Open). See the package doc.
const (
	// logMagic opens the file. A bbolt file starts with a page id of 0,
	// so the two cannot be taken for each other.
	logMagic = "LSTXNLOG"
	// formatVersion is the layout this package writes.
	formatVersion = 2
	// logHeaderSize: magic (8), format version (4), CRC-32C of both (4).
	logHeaderSize = 16
	// frameHeaderSize: payload length (4), CRC-32C of the payload (4).
	frameHeaderSize = 8
	// maxPayload bounds a frame's payload. A length above it is a torn
	// or corrupt frame; nothing is allocated from a length (the file is
	// read whole, and a length is checked against the bytes left).
	maxPayload = 1 << 30
	// compactFrameBytes: a compaction puts the records in frames of
	// about this size.
	compactFrameBytes = 1 << 20
	// Payload types (the first payload byte).
	payloadEpoch = 1 // coordinator epoch (4, big-endian, >= 0)
	// payloadPuts: one or more entries, each: id length (2, > 0), id,
	// record length (4), record (record.encode); a record length of 0
	// is a tombstone (the id expired: the replay forgets it). A commit
	// is one frame.
	payloadPuts = 2
	// payloadClosed (no fields) is appended by Close after its last
	// commit: the file ends with it exactly when the coordinator was
	// closed cleanly, every lazy write committed. Any other frame after
	// it clears that.
	payloadClosed = 3
)

// TmpFileName is the file a compaction or a conversion writes, next to
// FileName, before it renames it over FileName. One left by a crash is
// ignored, and replaced by the next Open.
const TmpFileName = FileName + ".new"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// defaultCompactBytes is Config.CompactBytes's default.
const defaultCompactBytes = 1 << 20

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

// appendHeader appends the file header.
func appendHeader(b []byte) []byte {
	b = append(b, logMagic...)
	b = binary.BigEndian.AppendUint32(b, formatVersion)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[len(b)-12:], castagnoli))
}

// appendFrame appends a frame holding payload.
func appendFrame(b, payload []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

func epochPayload(epoch int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{payloadEpoch}, uint32(epoch))
}

// appendEntry appends one entry of a puts payload.
func appendEntry(b []byte, id string, val []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(val)))
	return append(b, val...)
}

// entrySize is the bytes of an entry of id and val in a puts payload.
func entrySize(id string, val []byte) int { return 2 + len(id) + 4 + len(val) }

// isLogFile reports whether b (the file's first bytes) starts with the
// magic of this layout.
func isLogFile(b []byte) bool { return bytes.HasPrefix(b, []byte(logMagic)) }

// decodeLog replays data, the whole file at path. The header must be
// whole and right (the file is renamed into place only once written and
// synced). Frames are read until the end; the first frame that is cut
// off, claims a length of 0 or more than maxPayload, or fails its CRC
// ends the replay, as a torn tail: a commit is one frame, appended in
// one write and synced before the next commit starts, so only the last
// frame can be torn by a crash. Two cases are not taken for a torn
// tail: a frame that fails its CRC although a frame with a good CRC
// follows it (a later commit was appended after it, so it was synced:
// the damage is in the middle of the file), and a frame whose CRC is
// right but whose payload does not decode (it was written so). Both,
// and a file without its coordinator epoch record, are a *DamagedError
// naming the file and the byte offset.
func decodeLog(data []byte, path string) (logState, error) {
	st := logState{records: map[string][]byte{}, epoch: -1}
	if len(data) < logHeaderSize {
		return st, &DamagedError{File: path, Offset: len(data), Reason: fmt.Sprintf("header cut off: %d bytes of %d", len(data), logHeaderSize)}
	}
	if !isLogFile(data) {
		return st, &DamagedError{File: path, Reason: "not a transaction coordinator file (bad magic)"}
	}
	if v := binary.BigEndian.Uint32(data[8:]); v != formatVersion {
		return st, &DamagedError{File: path, Offset: 8, Reason: fmt.Sprintf("format version %d, this build reads %d", v, formatVersion)}
	}
	if got, want := binary.BigEndian.Uint32(data[12:]), crc32.Checksum(data[:12], castagnoli); got != want {
		return st, &DamagedError{File: path, Offset: 12, Reason: fmt.Sprintf("header CRC %08x, computed %08x", got, want)}
	}
	off := logHeaderSize
	for off < len(data) {
		payload, why := frameAt(data, off)
		if why == errCRC {
			// The length is in range and the frame whole: does a good
			// frame follow it?
			next := off + frameHeaderSize + int(binary.BigEndian.Uint32(data[off:]))
			if next < len(data) {
				if _, nextWhy := frameAt(data, next); nextWhy == "" {
					return st, &DamagedError{File: path, Offset: off, Reason: "a frame fails its CRC and a good frame follows it: damage inside the file, not a torn tail"}
				}
			}
		}
		if why != "" {
			st.tail = fmt.Sprintf("byte %d: %s", off, why)
			break
		}
		if err := st.apply(payload); err != nil {
			var de *decodeError
			errors.As(err, &de)
			return st, &DamagedError{File: path, Key: de.key, Offset: off + frameHeaderSize + de.offset, Reason: de.reason}
		}
		off += frameHeaderSize + len(payload)
	}
	st.end = int64(off)
	if st.epoch < 0 {
		return st, &DamagedError{File: path, Offset: off, Reason: "no coordinator epoch record"}
	}
	return st, nil
}

// errCRC is frameAt's reason for a whole frame whose CRC is wrong.
const errCRC = "CRC mismatch"

// frameAt returns the payload of the frame at off, or why there is no
// good frame there.
func frameAt(data []byte, off int) ([]byte, string) {
	left := len(data) - off
	if left < frameHeaderSize {
		return nil, fmt.Sprintf("frame header cut off (%d bytes left)", left)
	}
	n := binary.BigEndian.Uint32(data[off:])
	if n == 0 || n > maxPayload {
		return nil, fmt.Sprintf("frame length %d out of range", n)
	}
	if int64(n) > int64(left-frameHeaderSize) {
		return nil, fmt.Sprintf("frame of %d bytes cut off (%d bytes left)", n, left-frameHeaderSize)
	}
	payload := data[off+frameHeaderSize : off+frameHeaderSize+int(n)]
	if binary.BigEndian.Uint32(data[off+4:]) != crc32.Checksum(payload, castagnoli) {
		return nil, errCRC
	}
	return payload, ""
}

// apply replays one payload. A *decodeError gives the offset in the
// payload.
func (st *logState) apply(p []byte) error {
	st.closed = false
	switch p[0] {
	case payloadClosed:
		if len(p) != 1 {
			return bad(0, "close record of %d bytes, not 1", len(p))
		}
		if st.epoch < 0 {
			return bad(0, "close record before the coordinator epoch record")
		}
		st.closed = true
	case payloadEpoch:
		if len(p) != 5 {
			return bad(0, "coordinator epoch record of %d bytes, not 5", len(p))
		}
		e := int32(binary.BigEndian.Uint32(p[1:]))
		if e < 0 {
			return bad(1, "coordinator epoch %d is negative", e)
		}
		if e < st.epoch {
			return bad(1, "coordinator epoch %d after %d", e, st.epoch)
		}
		st.epoch = e
	case payloadPuts:
		if st.epoch < 0 {
			return bad(0, "records before the coordinator epoch record")
		}
		if len(p) == 1 {
			return bad(1, "no entry")
		}
		// Decoded whole before any is applied: a frame is a commit.
		type entry struct {
			id  string
			val []byte
		}
		var entries []entry
		for off := 1; off < len(p); {
			if len(p)-off < 2 {
				return bad(off, "id length cut off")
			}
			l := int(binary.BigEndian.Uint16(p[off:]))
			if l == 0 {
				return bad(off, "empty transactional id")
			}
			off += 2
			if len(p)-off < l+4 {
				return bad(off, "id of %d bytes and record length cut off (%d bytes left)", l, len(p)-off)
			}
			id := string(p[off : off+l])
			off += l
			n := binary.BigEndian.Uint32(p[off:])
			off += 4
			if uint64(n) > uint64(len(p)-off) {
				return &decodeError{key: id, offset: off - 4, reason: fmt.Sprintf("record of %d bytes cut off (%d bytes left)", n, len(p)-off)}
			}
			if n == 0 {
				// A tombstone: the id expired.
				entries = append(entries, entry{id, nil})
				continue
			}
			val := p[off : off+int(n)]
			if _, err := decodeRecord(val); err != nil {
				var de *decodeError
				errors.As(err, &de)
				de.offset += off
				de.key = id
				return de
			}
			entries = append(entries, entry{id, val})
			off += int(n)
		}
		for _, e := range entries {
			if e.val == nil {
				delete(st.records, e.id)
			} else {
				st.records[e.id] = slices.Clone(e.val)
			}
		}
	default:
		return bad(0, "unknown record type %d", p[0])
	}
	return nil
}

// compactImage is the file that holds exactly epoch and records: the
// header, the epoch record, then the records in id order, in puts
// frames of about compactFrameBytes.
func compactImage(epoch int32, records map[string][]byte) []byte {
	b := appendHeader(nil)
	b = appendFrame(b, epochPayload(epoch))
	var payload []byte
	for _, id := range slices.Sorted(maps.Keys(records)) {
		if payload == nil {
			payload = []byte{payloadPuts}
		}
		payload = appendEntry(payload, id, records[id])
		if len(payload) >= compactFrameBytes {
			b, payload = appendFrame(b, payload), nil
		}
	}
	if payload != nil {
		b = appendFrame(b, payload)
	}
	return b
}

// stepHook, when set (by tests), is called at each step of writing a
// new file (compaction, conversion, creation): "tmp written", "tmp
// synced", "renamed", "dir synced". A non-nil error stops the write
// there, as a crash would.
var stepHook func(step string) error

func step(name string) error {
	if stepHook != nil {
		return stepHook(name)
	}
	return nil
}

// logFile is the open transactions.db: the writer's file, locked
// exclusively, and the state it holds as durable.
type logFile struct {
	path  string
	f     *os.File
	size  int64 // the bytes written and synced
	epoch int32
	live  map[string][]byte // id -> encoded record, as durable
	// liveSize is the size compaction would give the file now.
	liveSize int64
	// compactBytes: once the file is larger than this and twice
	// liveSize, a commit compacts it.
	compactBytes int64
	// failed, when set, is the error that left the file in a state this
	// logFile does not know: every later commit fails with it.
	failed error
	// dirPending: a rename is not known durable yet (its directory sync
	// failed); it is retried before the next append.
	dirPending bool
	// lost: a commit failed, so the puts it carried are not in the file,
	// though the coordinator may hold them (a lazy write's caller was
	// answered): the file is not known to hold every write. Set whenever
	// failed is.
	lost bool
}

// rewrite writes a new file holding epoch and records, synced, and
// renames it over path (the old file, if any, goes away with the
// rename; the directory is synced after). It returns the new file,
// locked exclusively, and its size. A crash at any step leaves path as
// it was or the new file at path, both whole; a leftover tmp file is
// ignored and replaced by the next rewrite.
func rewrite(path string, epoch int32, records map[string][]byte) (*os.File, int64, error) {
	tmp := filepath.Join(filepath.Dir(path), TmpFileName)
	img := compactImage(epoch, records)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*os.File, int64, error) {
		f.Close()
		os.Remove(tmp)
		return nil, 0, err
	}
	if _, err := f.Write(img); err != nil {
		return fail(err)
	}
	if err := step("tmp written"); err != nil {
		return fail(err)
	}
	if err := fileutil.Fdatasync(f); err != nil {
		return fail(err)
	}
	if err := step("tmp synced"); err != nil {
		return fail(err)
	}
	if err := lockFile(f, true, 0); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := step("renamed"); err != nil {
		f.Close()
		return nil, 0, err
	}
	if err := fileutil.SyncDir(filepath.Dir(path)); err != nil {
		// The rename is done: path is this file, whose rename may not
		// be durable. The caller keeps it and syncs the directory again
		// before anything is appended.
		return f, int64(len(img)), &dirSyncError{err}
	}
	if err := step("dir synced"); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, int64(len(img)), nil
}

// dirSyncError: rewrite renamed the new file into place but could not
// sync the directory.
type dirSyncError struct{ err error }

func (e *dirSyncError) Error() string { return e.err.Error() }
func (e *dirSyncError) Unwrap() error { return e.err }

// newLogFile writes path anew with epoch and records (rewrite) and
// returns it open for appends.
func newLogFile(path string, epoch int32, records map[string][]byte, compactBytes int64) (*logFile, error) {
	l := &logFile{path: path, epoch: epoch, live: records, compactBytes: compactBytes}
	if l.live == nil {
		l.live = map[string][]byte{}
	}
	f, size, err := rewrite(path, epoch, l.live)
	var dse *dirSyncError
	if errors.As(err, &dse) {
		f.Close()
	}
	if err != nil {
		return nil, err
	}
	l.f, l.size, l.liveSize = f, size, size
	return l, nil
}

// commit appends one frame holding every put, in one write, and syncs
// the file once (fdatasync): the commit is whole or, torn by a crash,
// dropped whole at the next Open. Compaction follows when the file has grown
// past its bound. On a failed write or sync, the file is written anew
// from the state before puts (rewrite), so it holds exactly what the
// coordinator has as durable; if that fails too, the logFile fails
// every later commit.
func (l *logFile) commit(puts []*put) error {
	if l.failed != nil {
		return fmt.Errorf("an earlier failure left the file unknown: %w", l.failed)
	}
	if l.dirPending {
		if err := fileutil.SyncDir(filepath.Dir(l.path)); err != nil {
			l.lost = true
			return err
		}
		l.dirPending = false
	}
	payload := []byte{payloadPuts}
	for _, p := range puts {
		payload = appendEntry(payload, p.key, p.val)
	}
	if len(payload) > maxPayload {
		l.lost = true
		return fmt.Errorf("a commit of %d bytes is over the limit of %d", len(payload), maxPayload)
	}
	buf := appendFrame(make([]byte, 0, frameHeaderSize+len(payload)), payload)
	_, err := l.f.WriteAt(buf, l.size)
	if err == nil {
		err = step("appended")
	}
	if err == nil {
		err = fileutil.Fdatasync(l.f)
	}
	if err != nil {
		l.lost = true
		if rerr := l.compact(); rerr != nil {
			l.failed = errors.Join(err, rerr)
		}
		return err
	}
	l.size += int64(len(buf))
	for _, p := range puts {
		if old, ok := l.live[p.key]; ok {
			l.liveSize -= int64(entrySize(p.key, old))
		}
		if p.val == nil {
			// A tombstone: a compaction drops it with the id.
			delete(l.live, p.key)
			continue
		}
		l.live[p.key] = p.val
		l.liveSize += int64(entrySize(p.key, p.val))
	}
	return nil
}

// compactDue reports whether the file has grown past its bound.
func (l *logFile) compactDue() bool {
	return l.size > l.compactBytes && l.size > 2*l.liveSize
}

// compact writes the file anew with the live state only (rewrite) and
// appends to the new file from then on. If it fails before the rename,
// the old file stays, whole, and is kept.
func (l *logFile) compact() error {
	f, size, err := rewrite(l.path, l.epoch, l.live)
	var dse *dirSyncError
	if errors.As(err, &dse) {
		l.dirPending = true
		err = nil
	}
	if err != nil {
		return err
	}
	l.f.Close() // the old file, no longer at path
	l.f, l.size, l.liveSize = f, size, size
	return nil
}

// markClosed appends the close record and syncs it: the next Open
// knows every write of this coordinator was committed. After a failed
// commit it does nothing (the file is not known to hold them all).
func (l *logFile) markClosed() error {
	if l.lost {
		return nil
	}
	buf := appendFrame(nil, []byte{payloadClosed})
	if _, err := l.f.WriteAt(buf, l.size); err != nil {
		return err
	}
	if err := fileutil.Fdatasync(l.f); err != nil {
		return err
	}
	l.size += int64(len(buf))
	return nil
}

func (l *logFile) close() error {
	return l.f.Close()
}

// readLocked opens path, takes its lock (exclusive or shared), waiting
// at most timeout, and reads it whole. A compaction may rename a new
// file over path between the open and the lock: the lock is then on a
// file no longer at path, and it starts again. It returns the file,
// locked, and its bytes; whether the file is of this layout is for the
// caller to check.
func readLocked(path string, exclusive bool, timeout time.Duration) (*os.File, []byte, error) {
	for {
		flag := os.O_RDONLY
		if exclusive {
			flag = os.O_RDWR
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return nil, nil, err
		}
		if err := lockFile(f, exclusive, timeout); err != nil {
			f.Close()
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		pi, err := os.Stat(path)
		if err != nil || !os.SameFile(fi, pi) {
			f.Close()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			continue
		}
		if fi.Size() > math.MaxInt32*4 {
			f.Close()
			return nil, nil, &DamagedError{File: path, Reason: fmt.Sprintf("%d bytes: far larger than a coordinator file can grow", fi.Size())}
		}
		data, err := io.ReadAll(f)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return f, data, nil
	}
}
