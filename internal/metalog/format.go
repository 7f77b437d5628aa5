package metalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"
)

const (
	// HeaderSize: magic (8), format version (4), CRC-32C of both (4).
	HeaderSize = 16
	// FrameHeaderSize: payload length (4), CRC-32C of the payload (4).
	FrameHeaderSize = 8
	// MaxPayload bounds a frame's payload. A length above it is a torn
	// or corrupt frame; nothing is allocated from a length (the file is
	// read whole, and a length is checked against the bytes left).
	MaxPayload = 1 << 30
	// compactFrameBytes: a rewrite puts the records in frames of about
	// this size.
	compactFrameBytes = 1 << 20
)

// Payload types (the first byte of a payload).
const (
	// PayloadMeta: the file's meta value (Format.MetaSize bytes).
	PayloadMeta = 1
	// PayloadPuts: one or more entries, each a key length (2 bytes, or
	// 4 with Format.WideKeys; > 0), the key, a value length (4) and the
	// value; a value length of 0 is a tombstone. A commit is one frame.
	PayloadPuts = 2
	// PayloadClosed (no fields) is appended by MarkClosed after the last
	// commit. Any other frame after it clears it.
	PayloadClosed = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged: a file holds what this build cannot read. A
// *DamagedError matches it.
var ErrDamaged = errors.New("metadata file damaged")

// DamagedError is a part of a file that does not decode: the file, the
// key when known, the byte offset in the file where decoding stopped,
// and why. It matches ErrDamaged.
type DamagedError struct {
	File   string
	Key    string
	Offset int
	Reason string
}

func (e *DamagedError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s: byte %d (key %q): %s: %s", e.File, e.Offset, e.Key, ErrDamaged, e.Reason)
	}
	return fmt.Sprintf("%s: byte %d: %s: %s", e.File, e.Offset, ErrDamaged, e.Reason)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// ValueError is what Format.CheckValue and Format.CheckMeta return
// for a value that does not decode: Offset is in the value.
type ValueError struct {
	Offset int
	Reason string
}

func (e *ValueError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Reason) }

// Format is what the user of a file chooses: its magic and version,
// the width of key lengths, its meta value, and the check of values.
type Format struct {
	// Magic opens the file: 8 bytes. Choose one that no file of
	// another layout at the same name starts with.
	Magic string
	// Version is the format version after the magic.
	Version uint32
	// What names the file's kind in errors ("transaction coordinator
	// file").
	What string
	// WideKeys: key lengths are 4 bytes (keys up to MaxKey), not 2
	// (keys up to 65,535 bytes).
	WideKeys bool
	// MetaSize, when not 0, is the size of the file's meta value: the
	// first frame is a meta frame, required before any other, and the
	// replay keeps the last. 0: the file has none (a meta frame is
	// damage).
	MetaSize int
	// MetaName names the meta frame in errors ("coordinator epoch
	// record").
	MetaName string
	// CheckMeta, when set, checks a meta value (prev is the one before
	// it, nil for the first); a *ValueError gives the offset in it.
	CheckMeta func(prev, next []byte) error
	// CheckValue, when set, checks a value put under key; a
	// *ValueError gives the offset in it.
	CheckValue func(key string, val []byte) error
}

// maxKey is the longest key of f.
func (f *Format) maxKey() int {
	if f.WideKeys {
		return MaxPayload
	}
	return math.MaxUint16
}

func (f *Format) keyLenSize() int {
	if f.WideKeys {
		return 4
	}
	return 2
}

// State is what a replay of a file yields.
type State struct {
	// Meta is the last meta value (nil when the format has none).
	Meta []byte
	// Records: key -> value, the last put of each key not deleted. The
	// values are slices of the bytes replayed, which must not change
	// after.
	Records map[string][]byte
	// End is the offset after the last good frame; Tail is why the
	// bytes from End on were dropped ("" when there are none).
	End  int64
	Tail string
	// Closed: the last good frame is the close frame.
	Closed bool
}

// AppendHeader appends the file header of f.
func (f *Format) AppendHeader(b []byte) []byte {
	b = append(b, f.Magic...)
	b = binary.BigEndian.AppendUint32(b, f.Version)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[len(b)-12:], castagnoli))
}

// AppendFrame appends a frame holding payload.
func AppendFrame(b, payload []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// appendEntry appends one entry of a puts payload.
func (f *Format) appendEntry(b []byte, key string, val []byte) []byte {
	if f.WideKeys {
		b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	}
	b = append(b, key...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(val)))
	return append(b, val...)
}

// entrySize is the bytes of an entry of key and val in a puts payload.
func (f *Format) entrySize(key string, val []byte) int {
	return f.keyLenSize() + len(key) + 4 + len(val)
}

// IsFile reports whether b (a file's first bytes) starts with f's
// magic.
func (f *Format) IsFile(b []byte) bool { return bytes.HasPrefix(b, []byte(f.Magic)) }

// Image is the file that holds exactly meta and records: the header,
// the meta frame (when f has one), then the records in key order, in
// puts frames of about 1 MiB.
func (f *Format) Image(meta []byte, records map[string][]byte) []byte {
	b := f.AppendHeader(nil)
	if f.MetaSize > 0 {
		b = AppendFrame(b, append([]byte{PayloadMeta}, meta...))
	}
	var payload []byte
	for _, k := range slices.Sorted(maps.Keys(records)) {
		if payload == nil {
			payload = []byte{PayloadPuts}
		}
		payload = f.appendEntry(payload, k, records[k])
		if len(payload) >= compactFrameBytes {
			b, payload = AppendFrame(b, payload), nil
		}
	}
	if payload != nil {
		b = AppendFrame(b, payload)
	}
	return b
}

// Decode replays data, the whole file at path. The header must be
// whole and right (a file is renamed into place only once written and
// synced). Frames are read until the end. The first frame that is cut
// off, claims a length of 0 or more than MaxPayload, or fails its CRC
// ends the replay, as a torn tail. A commit is one frame, appended in
// one write and synced before the next commit starts, so only the last
// frame can be torn by a crash.
//
// Two cases are not taken for a torn tail. One is a frame that fails
// its CRC although a frame with a good CRC follows it: a later commit
// was appended after it, so it was synced, and the damage is in the
// middle of the file. The other is a frame whose CRC is right but
// whose payload does not decode (it was written so). Both, and a file
// without its meta frame when the format has one, are a *DamagedError
// naming the file and the byte offset.
func (f *Format) Decode(data []byte, path string) (State, error) {
	// Sized for about one record per 64 bytes: a rehash of a map grown
	// key by key costs about as much as the inserts.
	st := State{Records: make(map[string][]byte, min(len(data)/64, 1<<20))}
	if len(data) < HeaderSize {
		return st, &DamagedError{File: path, Offset: len(data), Reason: fmt.Sprintf("header cut off: %d bytes of %d", len(data), HeaderSize)}
	}
	if !f.IsFile(data) {
		return st, &DamagedError{File: path, Reason: fmt.Sprintf("not a %s (bad magic)", f.What)}
	}
	if v := binary.BigEndian.Uint32(data[8:]); v != f.Version {
		return st, &DamagedError{File: path, Offset: 8, Reason: fmt.Sprintf("format version %d, this build reads %d", v, f.Version)}
	}
	if got, want := binary.BigEndian.Uint32(data[12:]), crc32.Checksum(data[:12], castagnoli); got != want {
		return st, &DamagedError{File: path, Offset: 12, Reason: fmt.Sprintf("header CRC %08x, computed %08x", got, want)}
	}
	off := HeaderSize
	var scratch []entry
	for off < len(data) {
		payload, why := frameAt(data, off)
		if why == errCRC {
			// The length is in range and the frame whole: does a good
			// frame follow it?
			next := off + FrameHeaderSize + int(binary.BigEndian.Uint32(data[off:]))
			if next < len(data) {
				if _, nextWhy := frameAt(data, next); nextWhy == "" {
					return st, &DamagedError{File: path, Offset: off, Reason: "a frame fails its CRC and a good frame follows it: damage inside the file, not a torn tail"}
				}
			}
		}
		if why != "" {
			st.Tail = fmt.Sprintf("byte %d: %s", off, why)
			break
		}
		if err := f.apply(&st, payload, &scratch); err != nil {
			return st, &DamagedError{File: path, Key: err.key, Offset: off + FrameHeaderSize + err.offset, Reason: err.reason}
		}
		off += FrameHeaderSize + len(payload)
	}
	st.End = int64(off)
	if f.MetaSize > 0 && st.Meta == nil {
		return st, &DamagedError{File: path, Offset: off, Reason: "no " + f.MetaName}
	}
	return st, nil
}

// errCRC is frameAt's reason for a whole frame whose CRC is wrong.
const errCRC = "CRC mismatch"

// frameAt returns the payload of the frame at off, or why there is no
// good frame there.
func frameAt(data []byte, off int) ([]byte, string) {
	left := len(data) - off
	if left < FrameHeaderSize {
		return nil, fmt.Sprintf("frame header cut off (%d bytes left)", left)
	}
	n := binary.BigEndian.Uint32(data[off:])
	if n == 0 || n > MaxPayload {
		return nil, fmt.Sprintf("frame length %d out of range", n)
	}
	if int64(n) > int64(left-FrameHeaderSize) {
		return nil, fmt.Sprintf("frame of %d bytes cut off (%d bytes left)", n, left-FrameHeaderSize)
	}
	payload := data[off+FrameHeaderSize : off+FrameHeaderSize+int(n)]
	if binary.BigEndian.Uint32(data[off+4:]) != crc32.Checksum(payload, castagnoli) {
		return nil, errCRC
	}
	return payload, ""
}

// payloadError is apply's error: the key when known, the offset in the
// payload, and why.
type payloadError struct {
	key    string
	offset int
	reason string
}

func bad(off int, format string, args ...any) *payloadError {
	return &payloadError{offset: off, reason: fmt.Sprintf(format, args...)}
}

// valueError makes err, a check's error on a value at off in the
// payload, a payloadError.
func valueError(key string, off int, err error) *payloadError {
	var ve *ValueError
	if errors.As(err, &ve) {
		return &payloadError{key: key, offset: off + ve.Offset, reason: ve.Reason}
	}
	return &payloadError{key: key, offset: off, reason: err.Error()}
}

// entry is one put of a puts payload, decoded.
type entry struct {
	key string
	val []byte
}

// apply replays one payload into st; scratch is its buffer of entries.
func (f *Format) apply(st *State, p []byte, scratch *[]entry) *payloadError {
	st.Closed = false
	needMeta := f.MetaSize > 0 && st.Meta == nil
	switch p[0] {
	case PayloadClosed:
		if len(p) != 1 {
			return bad(0, "close record of %d bytes, not 1", len(p))
		}
		if needMeta {
			return bad(0, "close record before the %s", f.MetaName)
		}
		st.Closed = true
	case PayloadMeta:
		if f.MetaSize == 0 {
			return bad(0, "unknown record type %d", p[0])
		}
		if len(p) != 1+f.MetaSize {
			return bad(0, "%s of %d bytes, not %d", f.MetaName, len(p), 1+f.MetaSize)
		}
		meta := p[1:]
		if f.CheckMeta != nil {
			if err := f.CheckMeta(st.Meta, meta); err != nil {
				return valueError("", 1, err)
			}
		}
		st.Meta = slices.Clone(meta)
	case PayloadPuts:
		if needMeta {
			return bad(0, "records before the %s", f.MetaName)
		}
		if len(p) == 1 {
			return bad(1, "no entry")
		}
		// Decoded whole before any is applied: a frame is a commit.
		entries := (*scratch)[:0]
		defer func() { *scratch = entries[:0] }()
		kl := f.keyLenSize()
		for off := 1; off < len(p); {
			if len(p)-off < kl {
				return bad(off, "key length cut off")
			}
			var l uint64
			if f.WideKeys {
				l = uint64(binary.BigEndian.Uint32(p[off:]))
			} else {
				l = uint64(binary.BigEndian.Uint16(p[off:]))
			}
			if l == 0 {
				return bad(off, "empty key")
			}
			off += kl
			if uint64(len(p)-off) < l+4 {
				return bad(off, "key of %d bytes and value length cut off (%d bytes left)", l, len(p)-off)
			}
			key := string(p[off : off+int(l)])
			off += int(l)
			n := binary.BigEndian.Uint32(p[off:])
			off += 4
			if uint64(n) > uint64(len(p)-off) {
				return &payloadError{key: key, offset: off - 4, reason: fmt.Sprintf("value of %d bytes cut off (%d bytes left)", n, len(p)-off)}
			}
			if n == 0 {
				entries = append(entries, entry{key, nil}) // a tombstone
				continue
			}
			val := p[off : off+int(n) : off+int(n)]
			if f.CheckValue != nil {
				if err := f.CheckValue(key, val); err != nil {
					return valueError(key, off, err)
				}
			}
			entries = append(entries, entry{key, val})
			off += int(n)
		}
		for _, e := range entries {
			if e.val == nil {
				delete(st.Records, e.key)
			} else {
				st.Records[e.key] = e.val
			}
		}
	default:
		return bad(0, "unknown record type %d", p[0])
	}
	return nil
}
