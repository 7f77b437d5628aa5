// Compression of the records section, in the byte formats Kafka uses.
//
// In a v2 record batch everything after the 61-byte header (the records
// section) is compressed as one stream when the codec bits are set. The
// stream formats, as the Java client writes and reads them:
//
//   - gzip (1): a gzip member (RFC 1952) as java.util.zip.GZIPOutputStream
//     writes it. Readers accept concatenated members.
//   - snappy (2): NOT Google's snappy framing format but snappy-java's
//     SnappyOutputStream ("xerial") framing: the 8-byte magic
//     0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00, an int32 big-endian version (1)
//     and an int32 big-endian minimum compatible version (1), then any
//     number of blocks, each an int32 big-endian length followed by that
//     many bytes of one raw snappy block, which compresses at most 32 KiB of
//     input. Other clients (librdkafka, franz-go, sarama) may write instead
//     one bare raw snappy block (a uvarint of the decoded length, then
//     snappy tags); snappy-java's SnappyInputStream falls back to that when
//     the magic is absent, and so does Decompress.
//   - lz4 (3): one LZ4 frame (lz4_Frame_format, magic 0x184D2204) as
//     Kafka's KafkaLZ4BlockOutputStream writes it: FLG 0x60 (version 01,
//     independent blocks, no block checksum, no content size, no content
//     checksum), BD 0x40 (64 KiB maximum block size), the header checksum
//     byte, blocks as little-endian uint32 size (high bit set when stored
//     uncompressed) plus data, and the 4-byte zero end mark. Only magic v0
//     message sets used Kafka's old, wrong header checksum; v2 batches
//     carry the correct one. Other clients may use larger blocks and
//     checksums (franz-go: 4 MiB blocks and a content checksum); any
//     valid frame but the legacy format (magic 0x184C2102) is read.
//   - zstd (4): one or more zstd frames (RFC 8878). The Java client writes
//     through zstd-jni's ZstdOutputStream, a stream with no pledged size,
//     so its frames declare a window (2 MiB at the default level 3) but no
//     content size; franz-go's EncodeAll writes the content size.
//
// Decompress bounds its output by a caller-given limit and never allocates
// from a length a stream claims before checking it against that limit.

package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

const (
	// xerialBlockSize is the input size snappy-java's SnappyOutputStream
	// compresses per block by default, which Kafka uses.
	xerialBlockSize = 32 << 10
	// xerialHeaderLen is magic (8) + version (4) + compatible version (4).
	xerialHeaderLen = 16
	// xerialVersion is both the version and the minimum compatible
	// version snappy-java writes; its reader rejects a version below 1.
	xerialVersion = 1

	// lz4LegacyMagic starts the legacy LZ4 frame format, which Kafka never
	// writes and its reader rejects.
	lz4LegacyMagic = 0x184C2102
)

// xerialHeader is the 16-byte stream header snappy-java writes.
var xerialHeader = [xerialHeaderLen]byte{
	0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
	0, 0, 0, xerialVersion,
	0, 0, 0, xerialVersion,
}

// errOverLimit is returned by readLimited; callers turn it into ErrTooLarge.
var errOverLimit = errors.New("output over limit")

// Compress appends the compressed form of src (an uncompressed records
// section) to dst. src and dst must not overlap. The only error is for a
// codec outside 0..4: a *CorruptionError wrapping ErrUnknownCodec.
func Compress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return compressGzip(dst, src)
	case CodecSnappy:
		return compressXerial(dst, src), nil
	case CodecLZ4:
		return compressLZ4(dst, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	default:
		return dst, recordsErr(0, ErrUnknownCodec, "codec %d", codec)
	}
}

// Decompress appends the decompressed form of src to dst. It never lets
// the output grow past limit bytes (the length of what it appends; a
// negative limit counts as 0): past that it returns an error wrapping
// ErrTooLarge. A stream that is not valid for its codec (including an
// empty one) returns an error wrapping ErrDecompress, and a codec outside
// 0..4 one wrapping ErrUnknownCodec. Every error is a *CorruptionError with
// Section "records" and Offset the position in src of the problem where it
// is known, else 0. On error the returned slice is dst, unchanged in
// length. src and dst must not overlap.
//
// For CodecNone it appends src, still subject to limit. For CodecSnappy it
// reads both snappy-java's framing and a bare raw snappy block.
//
// Memory use is bounded by about limit plus a multiple of the size of src,
// whatever lengths the stream claims (plus, for lz4, the pooled block
// buffers of the frame's block size, at most 4 MiB each). limit should be
// a real bound: a zstd stream whose blocks could decode past it is decoded
// into a buffer of limit bytes.
func Decompress(dst []byte, codec Codec, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0)
	if !codec.Valid() {
		return dst, recordsErr(0, ErrUnknownCodec, "codec %d", codec)
	}
	if codec == CodecNone {
		if len(src) > limit {
			return dst, tooLarge(codec, limit)
		}
		return append(dst, src...), nil
	}
	if len(src) == 0 {
		return dst, recordsErr(0, ErrDecompress, "%s: empty stream", codec)
	}
	switch codec {
	case CodecGzip:
		return decompressGzip(dst, src, limit)
	case CodecSnappy:
		if len(src) >= xerialHeaderLen && bytes.HasPrefix(src, xerialHeader[:8]) {
			return decompressXerial(dst, src, limit)
		}
		return decompressRawSnappy(dst, src, limit, 0)
	case CodecLZ4:
		return decompressLZ4(dst, src, limit)
	default: // CodecZstd
		return decompressZstd(dst, src, limit)
	}
}

func tooLarge(codec Codec, limit int) error {
	return recordsErr(0, ErrTooLarge, "%s: decompressed records exceed %d bytes", codec, limit)
}

func decompressErr(codec Codec, off int, err error) error {
	return recordsErr(off, ErrDecompress, "%s: %v", codec, err)
}

// readLimited appends what r produces to dst until r reports io.EOF. It
// fails with errOverLimit as soon as r produces more than limit bytes, and
// never grows dst past len(dst)+limit. hint is the expected output size:
// when dst has less room than that, the first allocation makes it (up to
// limit); after that dst doubles as it fills. On error it returns dst with
// its original length.
func readLimited(dst []byte, r io.Reader, limit, hint int) ([]byte, error) {
	start := len(dst)
	end := math.MaxInt
	if limit < math.MaxInt-start {
		end = start + limit
	}
	hint = min(hint, limit)
	if cap(dst)-start < hint {
		dst = slices.Grow(dst, hint)
	}
	stalls := 0
	for {
		var n int
		var err error
		if len(dst) < end {
			if len(dst) == cap(dst) {
				// Double what has come out so far, within the limit.
				dst = slices.Grow(dst, min(max(len(dst)-start, 4<<10), end-len(dst)))
			}
			n, err = r.Read(dst[len(dst):min(cap(dst), end)])
			dst = dst[:len(dst)+n]
		} else {
			// At the limit: the stream must end here.
			var probe [1]byte
			n, err = r.Read(probe[:])
			if n > 0 {
				return dst[:start], errOverLimit
			}
		}
		switch {
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst[:start], err
		case n == 0:
			if stalls++; stalls >= 100 {
				return dst[:start], io.ErrNoProgress
			}
		default:
			stalls = 0
		}
	}
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// streamEnc is a pooled streaming compressor (gzip, lz4) that appends
// its output to a caller's slice.
type streamEnc struct {
	w interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	out appendWriter
}

// encode appends the compressed form of src to dst and returns e to pool.
func (e *streamEnc) encode(pool *sync.Pool, dst, src []byte) ([]byte, error) {
	start := len(dst)
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if cerr := e.w.Close(); err == nil {
		err = cerr
	}
	out := e.out.b
	e.out.b = nil
	pool.Put(e)
	if err != nil { // cannot happen: appendWriter never fails
		return dst[:start], err
	}
	return out, nil
}

// ---- gzip ----

type gzipDec struct {
	zr gzip.Reader
	br bytes.Reader
}

var (
	gzipEncPool = sync.Pool{New: func() any {
		e := new(streamEnc)
		// Kafka's default is zlib's default level (6); this library's
		// default is its level 5, about as good and faster.
		e.w, _ = gzip.NewWriterLevel(&e.out, gzip.DefaultCompression)
		return e
	}}
	gzipDecPool = sync.Pool{New: func() any { return new(gzipDec) }}
)

func compressGzip(dst, src []byte) ([]byte, error) {
	return gzipEncPool.Get().(*streamEnc).encode(&gzipEncPool, dst, src)
}

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	d := gzipDecPool.Get().(*gzipDec)
	defer gzipDecPool.Put(d)
	d.br.Reset(src)
	if err := d.zr.Reset(&d.br); err != nil {
		return dst, decompressErr(CodecGzip, 0, err)
	}
	// The trailer's ISIZE is the size mod 2^32 of the last member: only a
	// hint, and never more than limit or than deflate's 1032:1 ratio allows.
	hint := 0
	if len(src) >= 18 {
		isize := int64(binary.LittleEndian.Uint32(src[len(src)-4:]))
		hint = int(min(isize, int64(len(src))*1032, int64(limit)))
	}
	out, err := readLimited(dst, &d.zr, limit, hint)
	d.br.Reset(nil)
	if err != nil {
		if err == errOverLimit {
			return dst, tooLarge(CodecGzip, limit)
		}
		return dst, decompressErr(CodecGzip, 0, err)
	}
	return out, nil
}

// ---- snappy ----

// compressXerial writes snappy-java's stream framing: the 16-byte header,
// then one length-prefixed raw snappy block per 32 KiB of src.
func compressXerial(dst, src []byte) []byte {
	worst := xerialHeaderLen
	for n := len(src); n > 0; n -= xerialBlockSize {
		worst += 4 + s2.MaxEncodedLen(min(n, xerialBlockSize))
	}
	dst = slices.Grow(dst, worst)
	dst = append(dst, xerialHeader[:]...)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		at := len(dst)
		room := dst[at+4 : at+4+s2.MaxEncodedLen(n)]
		enc := s2.EncodeSnappy(room, src[:n])
		binary.BigEndian.PutUint32(dst[at:at+4], uint32(len(enc)))
		dst = dst[:at+4+len(enc)]
		src = src[n:]
	}
	return dst
}

// decompressXerial reads snappy-java's framing. A first pass checks the
// framing and adds up the decoded lengths the blocks claim, so that the
// output is checked against limit and allocated once before any decoding.
func decompressXerial(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderLen {
		return dst, decompressErr(CodecSnappy, len(src), errors.New("truncated xerial header"))
	}
	if v := int32(binary.BigEndian.Uint32(src[8:12])); v < xerialVersion {
		return dst, decompressErr(CodecSnappy, 8, errors.New("unsupported xerial version"))
	}
	total := 0
	for off := xerialHeaderLen; off < len(src); {
		block, next, err := xerialBlock(src, off)
		if err != nil {
			return dst, err
		}
		n, err := snappyLen(block, off+4, limit-total, limit)
		if err != nil {
			return dst, err
		}
		total += n
		off = next
	}
	start := len(dst)
	dst = slices.Grow(dst, total)
	for off := xerialHeaderLen; off < len(src); {
		block, next, _ := xerialBlock(src, off)
		n, _ := snappy.DecodedLen(block)
		at := len(dst)
		if _, err := snappy.DecodeStrict(dst[at:at+n], block); err != nil {
			return dst[:start], decompressErr(CodecSnappy, off+4, err)
		}
		dst = dst[:at+n]
		off = next
	}
	return dst, nil
}

// xerialBlock returns the raw snappy block at src[off:] and the offset of
// the next one.
func xerialBlock(src []byte, off int) (block []byte, next int, err error) {
	if len(src)-off < 4 {
		return nil, 0, decompressErr(CodecSnappy, off, errors.New("truncated xerial block length"))
	}
	n := binary.BigEndian.Uint32(src[off:])
	if n == 0 || uint64(n) > uint64(len(src)-off-4) {
		return nil, 0, decompressErr(CodecSnappy, off, errors.New("xerial block length out of range"))
	}
	next = off + 4 + int(n)
	return src[off+4 : next], next, nil
}

// snappyMaxRatio bounds what a snappy block can decode to: its densest tag
// is a 3-byte copy of 64 bytes.
const snappyMaxRatio = 22

// snappyLen returns the decoded length a raw snappy block at src[off:]
// claims, after checking it against room (what is left of limit) and
// against what the block's size can possibly decode to.
func snappyLen(block []byte, off, room, limit int) (int, error) {
	n, err := snappy.DecodedLen(block)
	switch {
	case errors.Is(err, snappy.ErrTooLarge) || err == nil && n > room:
		return 0, tooLarge(CodecSnappy, limit)
	case err != nil:
		return 0, decompressErr(CodecSnappy, off, err)
	case n/snappyMaxRatio > len(block):
		return 0, decompressErr(CodecSnappy, off, errors.New("decoded length too large for the block"))
	}
	return n, nil
}

// decompressRawSnappy decodes one bare snappy block, the form franz-go and
// librdkafka write.
func decompressRawSnappy(dst, src []byte, limit, off int) ([]byte, error) {
	n, err := snappyLen(src, off, limit, limit)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, n)
	at := len(dst)
	if _, err := snappy.DecodeStrict(dst[at:at+n], src); err != nil {
		return dst, decompressErr(CodecSnappy, off, err)
	}
	return dst[:at+n], nil
}

// ---- lz4 ----

type lz4Dec struct {
	zr *lz4.Reader
	br bytes.Reader
}

var (
	lz4EncPool = sync.Pool{New: func() any {
		e := new(streamEnc)
		w := lz4.NewWriter(&e.out)
		e.w = w
		// Kafka's KafkaLZ4BlockOutputStream: 64 KiB blocks, independent,
		// no block checksum, no content checksum, no content size.
		if err := w.Apply(
			lz4.BlockSizeOption(lz4.Block64Kb),
			lz4.BlockChecksumOption(false),
			lz4.ChecksumOption(false),
			lz4.ConcurrencyOption(1),
		); err != nil {
			panic("recordbatch: lz4 writer options: " + err.Error())
		}
		return e
	}}
	lz4DecPool = sync.Pool{New: func() any {
		d := new(lz4Dec)
		d.zr = lz4.NewReader(&d.br)
		return d
	}}
)

func compressLZ4(dst, src []byte) ([]byte, error) {
	return lz4EncPool.Get().(*streamEnc).encode(&lz4EncPool, dst, src)
}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	if len(src) >= 4 && binary.LittleEndian.Uint32(src) == lz4LegacyMagic {
		return dst, decompressErr(CodecLZ4, 0, errors.New("legacy lz4 frame"))
	}
	d := lz4DecPool.Get().(*lz4Dec)
	defer lz4DecPool.Put(d)
	d.br.Reset(src)
	d.zr.Reset(&d.br)
	// Kafka writes no content size. Use the room dst has unless it cannot
	// even hold src; else guess a ratio. readLimited grows as needed.
	hint := 0
	if cap(dst)-len(dst) < len(src) {
		hint = 4 * len(src)
	}
	out, err := readLimited(dst, d.zr, limit, hint)
	d.zr.Reset(nil)
	d.br.Reset(nil)
	if err != nil {
		if err == errOverLimit {
			return dst, tooLarge(CodecLZ4, limit)
		}
		return dst, decompressErr(CodecLZ4, 0, err)
	}
	return out, nil
}

// ---- zstd ----

// zstdEncoder is shared: EncodeAll is safe for concurrent use. Level 3
// (SpeedDefault) is zstd's and Kafka's default. Zero frames makes empty
// input a valid frame rather than no bytes at all.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithZeroFrames(true),
	)
	if err != nil {
		panic("recordbatch: zstd encoder options: " + err.Error())
	}
	return e
})

// The decoders are shared and only used through DecodeAll, which decodes
// into the output slice: the window a frame declares is never allocated.
// Neither sets WithDecoderMaxMemory, which would also cap the window and
// so reject valid frames (Java writes 2-8 MiB windows whatever the size of
// the batch) when limit is small; zstdBound bounds the output instead.
var (
	zstdDecoder    = sync.OnceValue(func() *zstd.Decoder { return newZstdDecoder(false) })
	zstdCapDecoder = sync.OnceValue(func() *zstd.Decoder { return newZstdDecoder(true) })
)

func newZstdDecoder(capLimit bool) *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecodeAllCapLimit(capLimit),
	)
	if err != nil {
		panic("recordbatch: zstd decoder options: " + err.Error())
	}
	return d
}

const zstdMaxBlockSize = 128 << 10

// zstdBound walks the frames and block headers of src without decoding
// anything. upper is the most a valid stream can decode to: a frame's
// content size when it declares one, else its raw and RLE block sizes plus
// the block maximum (min(window, 128 KiB)) per compressed block. lower is
// what a valid stream decodes to for sure: content sizes, raw and RLE
// block sizes. Both saturate at MaxUint64. As soon as lower passes limit
// it stops with ErrTooLarge, before looking at the rest.
func zstdBound(src []byte, limit int) (upper, lower uint64, err error) {
	for off := 0; off < len(src); {
		var h zstd.Header
		if err := h.Decode(src[off:]); err != nil {
			return 0, 0, decompressErr(CodecZstd, off, err)
		}
		if h.Skippable {
			end := uint64(off) + uint64(h.HeaderSize) + uint64(h.SkippableSize)
			if end > uint64(len(src)) {
				return 0, 0, decompressErr(CodecZstd, off, errors.New("truncated skippable frame"))
			}
			off = int(end)
			continue
		}
		blockMax := uint64(zstdMaxBlockSize)
		if h.SingleSegment {
			blockMax = min(blockMax, max(h.FrameContentSize, zstd.MinWindowSize))
		} else {
			blockMax = min(blockMax, h.WindowSize)
		}
		if h.HasFCS && addSat(lower, h.FrameContentSize) > uint64(limit) {
			return 0, 0, tooLarge(CodecZstd, limit)
		}
		var most, least uint64
		p := off + h.HeaderSize
		for last := false; !last; {
			if len(src)-p < 3 {
				return 0, 0, decompressErr(CodecZstd, p, errors.New("truncated block header"))
			}
			bh := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
			p += 3
			last = bh&1 != 0
			size := int(bh >> 3)
			switch bh >> 1 & 3 {
			case 0: // raw
				most, least = most+uint64(size), least+uint64(size)
			case 1: // RLE: one byte repeated size times
				most, least = most+uint64(size), least+uint64(size)
				size = 1
			case 2: // compressed
				most += blockMax
			default:
				return 0, 0, decompressErr(CodecZstd, p-3, errors.New("reserved block type"))
			}
			if addSat(lower, least) > uint64(limit) {
				return 0, 0, tooLarge(CodecZstd, limit)
			}
			if size > len(src)-p {
				return 0, 0, decompressErr(CodecZstd, p, errors.New("truncated block"))
			}
			p += size
		}
		if h.HasCheckSum {
			if len(src)-p < 4 {
				return 0, 0, decompressErr(CodecZstd, p, errors.New("truncated checksum"))
			}
			p += 4
		}
		if h.HasFCS {
			if h.FrameContentSize > most {
				return 0, 0, decompressErr(CodecZstd, off, errors.New("frame content size larger than its blocks can hold"))
			}
			most, least = h.FrameContentSize, h.FrameContentSize
		}
		upper, lower = addSat(upper, most), addSat(lower, least)
		off = p
	}
	return upper, lower, nil
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// decompressZstd checks the bounds zstdBound finds against limit. When
// even the most the frames can produce fits, DecodeAll runs unbounded;
// else it runs with exactly limit bytes of room, and running out of room
// means the records are too large.
func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	upper, lower, err := zstdBound(src, limit)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	if upper <= uint64(limit) {
		hint := upper // exact when every frame declares its content size
		if lower < upper {
			// Else guess a ratio; DecodeAll grows the output if needed.
			hint = min(upper, max(lower, 8*uint64(len(src))+1<<10))
		}
		if cap(dst)-start < int(hint) {
			dst = slices.Grow(dst, int(hint))
		}
		out, err := zstdDecoder().DecodeAll(src, dst)
		if err != nil {
			return dst[:start], decompressErr(CodecZstd, 0, err)
		}
		if len(out)-start > limit { // cannot happen: bounded by upper
			return dst[:start], tooLarge(CodecZstd, limit)
		}
		return out, nil
	}
	// A zero capacity would mean "no limit" to the decoder.
	room := max(limit, 1)
	if cap(dst)-start < room {
		dst = slices.Grow(dst, room)
	}
	out, err := zstdCapDecoder().DecodeAll(src, dst[:start:start+room])
	switch {
	case err == nil && len(out)-start <= limit:
		if cap(out) > 0 && &out[:cap(out)][0] == &dst[:cap(dst)][0] {
			return dst[:len(out)], nil // give back the capacity hidden above
		}
		return out, nil
	case err == nil || errors.Is(err, zstd.ErrDecoderSizeExceeded) ||
		// What the sequence decoder says when the output has no room left
		// (the library has no sentinel for it).
		strings.Contains(err.Error(), "bigger than max block size"):
		return dst[:start], tooLarge(CodecZstd, limit)
	default:
		return dst[:start], decompressErr(CodecZstd, 0, err)
	}
}
