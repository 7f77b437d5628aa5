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
	// maxPayload bounds a frame's payload: an id (at most 64 KiB) and a
	// record whose partitions take at most 64 KiB + 6 bytes each. A
	// length above it is a torn or corrupt frame, never allocated for.
	maxPayload = 64 << 20
	// Payload types (the first payload byte).
	payloadEpoch = 1 // coordinator epoch (4, big-endian, >= 0)
	payloadPut   = 2 // id length (2, > 0), id, record (record.encode)
)

// tmpSuffix names the file a compaction or a conversion writes before it
// renames it over transactions.db.
const tmpSuffix = ".new"

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

func putPayload(id string, val []byte) []byte {
	b := make([]byte, 0, 3+len(id)+len(val))
	b = append(b, payloadPut)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	return append(b, val...)
}

// isLogFile reports whether b (the file's first bytes) starts with the
// magic of this layout.
func isLogFile(b []byte) bool { return bytes.HasPrefix(b, []byte(logMagic)) }

// decodeLog replays data, the whole file at path. The header must be
// whole and right (the file is renamed into place only once written and
// synced). Frames are read until the end; the first frame that is cut
// off, claims more than maxPayload, or fails its CRC ends the replay, as
// a torn tail: a commit appends its frames in one write and is synced
// before the next one starts, so only the last commit's frames can be
// torn by a crash. Two cases are not taken for a torn tail: a frame that
// fails its CRC although a frame with a good CRC follows it (the damage
// is in the middle of the file), and a frame whose CRC is right but
// whose payload does not decode (it was written so). Both, and a file
// without its coordinator epoch record, are a *DamagedError naming the
// file and the byte offset.
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
	switch p[0] {
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
	case payloadPut:
		if st.epoch < 0 {
			return bad(0, "a record before the coordinator epoch record")
		}
		if len(p) < 3 {
			return bad(len(p), "id length cut off")
		}
		l := int(binary.BigEndian.Uint16(p[1:]))
		if l == 0 {
			return bad(1, "empty transactional id")
		}
		if len(p)-3 < l {
			return bad(3, "id of %d bytes cut off (%d bytes left)", l, len(p)-3)
		}
		id := string(p[3 : 3+l])
		if _, err := decodeRecord(p[3+l:]); err != nil {
			var de *decodeError
			errors.As(err, &de)
			de.offset += 3 + l
			de.key = id
			return de
		}
		st.records[id] = slices.Clone(p[3+l:])
	default:
		return bad(0, "unknown record type %d", p[0])
	}
	return nil
}

// compactImage is the file that holds exactly epoch and records: the
// header, the epoch record, then a put per id in id order.
func compactImage(epoch int32, records map[string][]byte) []byte {
	b := appendHeader(nil)
	b = appendFrame(b, epochPayload(epoch))
	for _, id := range slices.Sorted(maps.Keys(records)) {
		b = appendFrame(b, putPayload(id, records[id]))
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
}

// rewrite writes a new file holding epoch and records, synced, and
// renames it over path (the old file, if any, goes away with the
// rename; the directory is synced after). It returns the new file,
// locked exclusively, and its size. A crash at any step leaves path as
// it was or the new file at path, both whole; a leftover tmp file is
// ignored and replaced by the next rewrite.
func rewrite(path string, epoch int32, records map[string][]byte) (*os.File, int64, error) {
	tmp := path + tmpSuffix
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
	if err := fdatasync(f); err != nil {
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

// commit appends a put frame for each of puts, in one write, and syncs
// the file once (fdatasync). Compaction follows when the file has grown
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
			return err
		}
		l.dirPending = false
	}
	var buf []byte
	for _, p := range puts {
		buf = appendFrame(buf, putPayload(p.key, p.val))
	}
	_, err := l.f.WriteAt(buf, l.size)
	if err == nil {
		err = step("appended")
	}
	if err == nil {
		err = fdatasync(l.f)
	}
	if err != nil {
		if rerr := l.compact(); rerr != nil {
			l.failed = errors.Join(err, rerr)
		}
		return err
	}
	l.size += int64(len(buf))
	for _, p := range puts {
		if old, ok := l.live[p.key]; ok {
			l.liveSize -= int64(frameHeaderSize + 3 + len(p.key) + len(old))
		}
		l.live[p.key] = p.val
		l.liveSize += int64(frameHeaderSize + 3 + len(p.key) + len(p.val))
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
