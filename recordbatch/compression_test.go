package recordbatch

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

var compAllCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

var compCodecs = []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// Records sections written by the Java client (from shared/testdata/kafka-real):
// an lz4 frame by Confluent Platform 5.0 (hermag-kafkademo/test-0, batch at
// byte 0) and an xerial snappy stream by a Spring Kafka producer
// (seanorth-kafka-server/some-topic-0, batch at byte 221).
const (
	javaLZ4Hex    = "04224d186040822a000080520000000146323031382d30392d32382031393a35333a31392c74656d70657261747572653a3431330000000000"
	javaXerialHex = "82534e415050590000000001000000010000008c8801f0878c02000000727b22637573746f6d65724964223a223132333334353638222c227472616e73616374696f6e44617465223a313634313731303833383234347d3c7b226974656d223a22626f6f6b222c227072696365223a2232332e39227d021c5f5f4b65795f5479706549645f5f326262656a65636b2e6d6f64656c2e50757263686173654b6579"
)

func compHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compText returns n bytes of a plausible uncompressed records section:
// repetitive JSON-ish values with varying numbers, as log lines are.
func compText(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	levels := []string{"INFO", "WARN", "DEBUG", "ERROR"}
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "\x10\x00\x02%c{\"ts\":%d,\"level\":%q,\"service\":\"orders-%d\",\"user\":%d,\"msg\":\"order %d processed in %dms\",\"ok\":%t}\x00",
			byte(i), 1700000000000+int64(i)*7, levels[r.IntN(len(levels))], r.IntN(8), r.IntN(100000), i, r.IntN(500), r.IntN(10) != 0)
	}
	return b.Bytes()[:n]
}

func compRandom(n int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// compWantErr checks that err is a records-section *CorruptionError that
// matches both ErrCorrupt and sentinel.
func compWantErr(t *testing.T, what string, err error, sentinel error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, sentinel)
	}
	if !errors.Is(err, sentinel) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: error %v does not match %v and ErrCorrupt", what, err, sentinel)
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Section != "records" {
		t.Fatalf("%s: error %#v is not a records CorruptionError", what, err)
	}
}

// allocated returns the bytes f allocates on the heap.
func compAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCompressDecompressRoundTrip(t *testing.T) {
	inputs := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"tiny", []byte("k")},
		{"compressible-1MiB", compText(1 << 20)},
		{"random-200KiB", compRandom(200 << 10)},
		{"zeros-1MiB", make([]byte, 1<<20)}, // the densest streams
	}
	for _, codec := range compAllCodecs {
		for _, in := range inputs {
			t.Run(fmt.Sprintf("codec=%s/%s", codec, in.name), func(t *testing.T) {
				comp, err := Compress([]byte("head"), codec, in.data)
				if err != nil {
					t.Fatal(err)
				}
				if string(comp[:4]) != "head" {
					t.Fatalf("Compress did not append to dst")
				}
				comp = comp[4:]
				if codec != CodecNone && len(comp) == 0 {
					t.Fatalf("empty compressed stream")
				}
				// The exact size is within the limit.
				out, err := Decompress([]byte("pfx"), codec, comp, len(in.data))
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				if string(out[:3]) != "pfx" || !bytes.Equal(out[3:], in.data) {
					t.Fatalf("round trip mismatch: got %d bytes, want %d", len(out)-3, len(in.data))
				}
				// One byte less is not.
				if len(in.data) > 0 {
					out, err := Decompress([]byte("pfx"), codec, comp, len(in.data)-1)
					compWantErr(t, "limit-1", err, ErrTooLarge)
					if string(out) != "pfx" {
						t.Fatalf("on error dst changed: %q", out)
					}
				}
				// Decoding into spare capacity uses it.
				buf := make([]byte, 0, len(in.data)+64)
				out, err = Decompress(buf, codec, comp, 1<<30)
				if err != nil || !bytes.Equal(out, in.data) {
					t.Fatalf("Decompress into capacity: %v", err)
				}
				if len(in.data) > 0 && &out[0] != &buf[:1][0] {
					t.Errorf("Decompress reallocated although dst had room")
				}
			})
		}
	}
}

// The formats written can be read by independent implementations.
func TestCompressInterop(t *testing.T) {
	data := compText(300 << 10)

	gz, _ := Compress(nil, CodecGzip, data)
	zr, err := stdgzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("compress/gzip cannot read our gzip: %v", err)
	}

	sn, _ := Compress(nil, CodecSnappy, data)
	if got, err := xerial.Decode(sn); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("snappy/xerial cannot read our snappy: %v", err)
	}
	if got, err := Decompress(nil, CodecSnappy, xerial.Encode(nil, data), len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("cannot read snappy/xerial's snappy: %v", err)
	}

	l4, _ := Compress(nil, CodecLZ4, data)
	if got, err := io.ReadAll(lz4.NewReader(bytes.NewReader(l4))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("lz4.Reader cannot read our lz4: %v", err)
	}

	zs, _ := Compress(nil, CodecZstd, data)
	zd, _ := zstd.NewReader(nil)
	defer zd.Close()
	if got, err := zd.DecodeAll(zs, nil); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("zstd cannot read our zstd: %v", err)
	}
}

// Records sections the Java client wrote decode, and what we write starts
// with the same framing bytes.
func TestDecompressJavaWrittenSections(t *testing.T) {
	javaLZ4 := compHex(t, javaLZ4Hex)
	out, err := Decompress(nil, CodecLZ4, javaLZ4, 1<<20)
	if err != nil || !bytes.Equal(out, javaLZ4[11:53]) || !bytes.Contains(out, []byte("2018-09-28 19:53:19,temperature:413")) {
		t.Fatalf("Java lz4: %q, %v", out, err)
	}
	ours, _ := Compress(nil, CodecLZ4, out)
	if !bytes.Equal(ours[:7], javaLZ4[:7]) {
		t.Errorf("lz4 frame header % x, Java writes % x", ours[:7], javaLZ4[:7])
	}

	javaXerial := compHex(t, javaXerialHex)
	out, err = Decompress(nil, CodecSnappy, javaXerial, 1<<20)
	if err != nil || !bytes.Contains(out, []byte(`{"customerId":"12334568"`)) {
		t.Fatalf("Java xerial snappy: %q, %v", out, err)
	}
	ours, _ = Compress(nil, CodecSnappy, out)
	if !bytes.Equal(ours[:16], javaXerial[:16]) {
		t.Errorf("xerial header % x, Java writes % x", ours[:16], javaXerial[:16])
	}
}

func TestSnappyXerialFraming(t *testing.T) {
	data := compRandom(200 << 10)
	comp, _ := Compress(nil, CodecSnappy, data)
	want := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0x00, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.Equal(comp[:16], want) {
		t.Fatalf("header % x, want % x", comp[:16], want)
	}
	// Blocks: int32 big-endian length, then a raw snappy block of at most
	// 32 KiB of input; 200 KiB makes 7 blocks.
	var blocks, total int
	for off := 16; off < len(comp); blocks++ {
		n := int(binary.BigEndian.Uint32(comp[off:]))
		block := comp[off+4 : off+4+n]
		dl, err := snappy.DecodedLen(block)
		if err != nil {
			t.Fatal(err)
		}
		if dl > 32<<10 || (off+4+n < len(comp) && dl != 32<<10) {
			t.Fatalf("block %d decodes to %d bytes", blocks, dl)
		}
		total += dl
		off += 4 + n
	}
	if blocks != 7 || total != len(data) {
		t.Fatalf("%d blocks holding %d bytes", blocks, total)
	}
	// An empty input is the header alone, as snappy-java writes it.
	if empty, _ := Compress(nil, CodecSnappy, nil); !bytes.Equal(empty, want) {
		t.Fatalf("empty: % x", empty)
	}
}

func TestSnappyRawBlock(t *testing.T) {
	for _, data := range [][]byte{[]byte("x"), compText(100 << 10), compRandom(70 << 10), make([]byte, 1<<20)} {
		for name, enc := range map[string][]byte{
			"snappy.Encode":   snappy.Encode(nil, data),
			"s2.EncodeSnappy": s2.EncodeSnappy(nil, data),
		} {
			out, err := Decompress([]byte("p"), CodecSnappy, enc, len(data))
			if err != nil || !bytes.Equal(out[1:], data) {
				t.Fatalf("%s of %d bytes: %v", name, len(data), err)
			}
			_, err = Decompress(nil, CodecSnappy, enc, len(data)-1)
			compWantErr(t, name+" limit-1", err, ErrTooLarge)
		}
	}
	// The empty raw block is the single byte 0.
	if out, err := Decompress(nil, CodecSnappy, []byte{0}, 0); err != nil || len(out) != 0 {
		t.Fatalf("empty raw block: %q, %v", out, err)
	}
}

func TestLZ4FrameFormat(t *testing.T) {
	data := compRandom(200 << 10)
	comp, _ := Compress(nil, CodecLZ4, data)
	// Magic, FLG 0x60 (version 1, independent blocks, no checksums, no
	// content size), BD 0x40 (64 KiB blocks), header checksum 0x82.
	if want := []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}; !bytes.Equal(comp[:7], want) {
		t.Fatalf("frame header % x, want % x", comp[:7], want)
	}
	var blocks int
	off := 7
	for ; ; blocks++ {
		v := binary.LittleEndian.Uint32(comp[off:])
		off += 4
		if v == 0 {
			break
		}
		n := int(v &^ (1 << 31))
		if n > 64<<10 {
			t.Fatalf("block %d of %d bytes", blocks, n)
		}
		off += n
	}
	if off != len(comp) {
		t.Fatalf("%d bytes after the end mark (no content checksum expected)", len(comp)-off)
	}
	if blocks != 4 { // 200 KiB in 64 KiB blocks
		t.Fatalf("%d blocks", blocks)
	}
	if empty, _ := Compress(nil, CodecLZ4, nil); !bytes.Equal(empty, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82, 0, 0, 0, 0}) {
		t.Fatalf("empty frame % x", empty)
	}
}

// compZstdStream encodes data as the Java client's streaming encoder does:
// no frame content size in the header.
func compZstdStream(t testing.TB, data []byte, opts ...zstd.EOption) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestZstdWithoutContentSize(t *testing.T) {
	data := compText(1 << 20)
	comp := compZstdStream(t, data)
	var h zstd.Header
	if err := h.Decode(comp); err != nil || h.HasFCS {
		t.Fatalf("expected a frame without content size: %+v %v", h, err)
	}
	out, err := Decompress(nil, CodecZstd, comp, len(data))
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("Decompress: %v", err)
	}
	_, err = Decompress(nil, CodecZstd, comp, len(data)-1)
	compWantErr(t, "limit-1", err, ErrTooLarge)

	// An 8 MiB window (what high levels write) must not count against a
	// small limit: only the output does.
	// Encoders write the content size for small inputs, so rewrite the
	// header: no single segment, an 8 MiB window, no content size.
	small := compText(10 << 10)
	enc := zstdEncoder().EncodeAll(small, nil)
	if err := h.Decode(enc); err != nil || !h.HasFCS {
		t.Fatalf("%+v, %v", h, err)
	}
	comp = []byte{0x28, 0xb5, 0x2f, 0xfd, enc[4] & 0x04, 13 << 3}
	comp = append(comp, enc[h.HeaderSize:]...)
	if err := h.Decode(comp); err != nil || h.WindowSize != 8<<20 || h.HasFCS {
		t.Fatalf("window %d, %+v, %v", h.WindowSize, h, err)
	}
	out, err = Decompress(nil, CodecZstd, comp, 64<<10)
	if err != nil || !bytes.Equal(out, small) {
		t.Fatalf("small frame with a large window: %v", err)
	}

	// Several frames, one after the other, are one stream.
	two := append(compZstdStream(t, data[:1000]), compZstdStream(t, data[1000:5000])...)
	if out, err := Decompress(nil, CodecZstd, two, 5000); err != nil || !bytes.Equal(out, data[:5000]) {
		t.Fatalf("two frames: %v", err)
	}
	if _, err := Decompress(nil, CodecZstd, two, 4999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two frames over the limit: %v", err)
	}
}

func TestGzipMultipleMembers(t *testing.T) {
	a, _ := Compress(nil, CodecGzip, []byte("hello, "))
	b, _ := Compress(nil, CodecGzip, []byte("world"))
	out, err := Decompress(nil, CodecGzip, append(a, b...), 100)
	if err != nil || string(out) != "hello, world" {
		t.Fatalf("%q, %v", out, err)
	}
}

func TestDecompressNone(t *testing.T) {
	out, err := Decompress([]byte("a"), CodecNone, []byte("bcd"), 3)
	if err != nil || string(out) != "abcd" {
		t.Fatalf("%q, %v", out, err)
	}
	out, err = Decompress([]byte("a"), CodecNone, []byte("bcd"), 2)
	compWantErr(t, "none over limit", err, ErrTooLarge)
	if string(out) != "a" {
		t.Fatalf("dst changed: %q", out)
	}
	if _, err := Decompress(nil, CodecNone, []byte("b"), -1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("negative limit: %v", err)
	}
}

// compBombs holds, per codec, a stream that inflates to 64 MiB of zeros.
var compBombs = sync.OnceValue(func() map[string][]byte {
	zeros := make([]byte, 64<<20)
	m := map[string][]byte{}
	for _, c := range compCodecs {
		m[c.String()], _ = Compress(nil, c, zeros)
	}
	m["snappy-raw"] = s2.EncodeSnappy(nil, zeros)
	var b bytes.Buffer
	w, _ := zstd.NewWriter(&b)
	w.Write(zeros)
	w.Close()
	m["zstd-no-content-size"] = b.Bytes()
	return m
})

func TestDecompressBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 64 MiB compBombs")
	}
	const limit = 1 << 20
	for name, bomb := range compBombs() {
		codec := CodecSnappy
		for _, c := range compCodecs {
			if name == c.String() || name == "zstd-no-content-size" && c == CodecZstd {
				codec = c
			}
		}
		t.Run(name, func(t *testing.T) {
			// Warm the pools and shared decoders with the same call, so that
			// only the second one is measured.
			Decompress(nil, codec, bomb, limit)
			var err error
			var out []byte
			n := compAllocated(func() { out, err = Decompress(nil, codec, bomb, limit) })
			compWantErr(t, name, err, ErrTooLarge)
			if len(out) != 0 {
				t.Fatalf("returned %d bytes with the error", len(out))
			}
			t.Logf("%d-byte bomb: %d bytes allocated", len(bomb), n)
			if n > 16<<20 {
				t.Fatalf("allocated %d bytes for a %d-byte limit", n, limit)
			}
		})
	}
}

// A snappy block whose varint claims 2 GiB is refused before allocating.
func TestSnappyClaimedLength(t *testing.T) {
	raw := binary.AppendUvarint(nil, 2<<30)
	raw = append(raw, 0x00, 'x') // a one-byte literal
	framed := append(xerialHeader[:], 0, 0, 0, byte(len(raw)))
	framed = append(framed, raw...)
	for name, src := range map[string][]byte{"raw": raw, "xerial": framed} {
		var err error
		n := compAllocated(func() { _, err = Decompress(nil, CodecSnappy, src, 1<<20) })
		compWantErr(t, name, err, ErrTooLarge)
		if n > 64<<10 {
			t.Fatalf("%s: allocated %d bytes", name, n)
		}
	}
	// A claim within the limit but beyond what the block's bytes can
	// decode to (a snappy tag yields at most 64 bytes from 3) is refused
	// before allocating too.
	short := append(binary.AppendUvarint(nil, 900<<10), 0x00, 'x')
	var err0 error
	if n := compAllocated(func() { _, err0 = Decompress(nil, CodecSnappy, short, 1<<20) }); n > 64<<10 {
		t.Fatalf("impossible claim: allocated %d bytes", n)
	}
	compWantErr(t, "impossible claim", err0, ErrDecompress)

	// Blocks that are each small but add up past the limit are refused
	// before any decoding too.
	many := append([]byte(nil), xerialHeader[:]...)
	block := snappy.Encode(nil, make([]byte, 32<<10))
	for range 40 {
		many = binary.BigEndian.AppendUint32(many, uint32(len(block)))
		many = append(many, block...)
	}
	var err error
	n := compAllocated(func() { _, err = Decompress(nil, CodecSnappy, many, 1<<20) })
	compWantErr(t, "40 blocks", err, ErrTooLarge)
	if n > 64<<10 {
		t.Fatalf("40 blocks: allocated %d bytes", n)
	}
}

func TestZstdClaimedContentSize(t *testing.T) {
	// A single-segment frame header that claims 1 TiB of content (8-byte
	// content size field), then garbage.
	bad := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	bad = binary.LittleEndian.AppendUint64(bad, 1<<40)
	bad = append(bad, 1, 2, 3, 4, 5, 6, 7, 8)
	var err error
	n := compAllocated(func() { _, err = Decompress(nil, CodecZstd, bad, 1<<20) })
	compWantErr(t, "1 TiB claim", err, ErrTooLarge)
	if n > 64<<10 {
		t.Fatalf("allocated %d bytes", n)
	}
}

// A frame whose content size is within the limit but more than its
// blocks can hold is refused before the output is allocated.
func TestZstdUnreachableContentSize(t *testing.T) {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xa0} // single segment, 4-byte FCS
	frame = binary.LittleEndian.AppendUint32(frame, 900<<10)
	frame = append(frame, 1<<3|2<<1|1, 0, 0, 0xaa) // last block, compressed, 1 byte
	var err error
	n := compAllocated(func() { _, err = Decompress(nil, CodecZstd, frame, 1<<20) })
	compWantErr(t, "unreachable content size", err, ErrDecompress)
	if n > 64<<10 {
		t.Fatalf("allocated %d bytes", n)
	}
}

func TestDecompressGarbage(t *testing.T) {
	valid := map[Codec][]byte{}
	data := compText(100 << 10)
	for _, c := range compCodecs {
		valid[c], _ = Compress(nil, c, data)
	}
	garbage := compRandom(1000)
	for _, c := range compCodecs {
		v := valid[c]
		cases := map[string][]byte{
			"empty":       nil,
			"garbage":     garbage,
			"zeros":       make([]byte, 100),
			"truncated-1": v[:len(v)-1],
			"truncated-5": v[:5],
			"half":        v[:len(v)/2],
			"header+2":    v[:18],
		}
		if c == CodecSnappy {
			// An xerial block length past the end, a zero length, a
			// version 0 header, a raw block with a bad tag.
			cases["block-past-end"] = append(xerialHeader[:], 0, 0, 1, 0, 1, 2)
			cases["zero-block"] = append(xerialHeader[:], 0, 0, 0, 0)
			cases["short-length"] = append(xerialHeader[:], 0, 0)
			cases["version-0"] = append(append([]byte(nil), xerialHeader[:11]...), 0, 0, 0, 0, 1)
			cases["raw-bad-copy"] = []byte{10, 0x01 | 2<<2, 0xff} // copy before any output
		}
		if c == CodecLZ4 {
			cases["legacy-frame"] = []byte{0x02, 0x21, 0x4c, 0x18, 0, 0, 0, 0}
		}
		for name, src := range cases {
			out, err := Decompress([]byte("p"), c, src, 1<<20)
			compWantErr(t, fmt.Sprintf("%s/%s", c, name), err, ErrDecompress)
			if string(out) != "p" {
				t.Fatalf("%s/%s: dst changed to %d bytes", c, name, len(out))
			}
		}
		// Flipped bytes may or may not be detected (lz4 and snappy carry no
		// checksum here), but never panic and never give another error.
		r := rand.New(rand.NewPCG(5, uint64(c)))
		for range 300 {
			m := append([]byte(nil), v...)
			for range 1 + r.IntN(4) {
				m[r.IntN(len(m))] ^= byte(1 + r.IntN(255))
			}
			out, err := Decompress(nil, c, m, 1<<20)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) || !(errors.Is(err, ErrDecompress) || errors.Is(err, ErrTooLarge)) {
					t.Fatalf("%s flipped: %v", c, err)
				}
			} else if len(out) > 1<<20 {
				t.Fatalf("%s flipped: %d bytes", c, len(out))
			}
		}
	}
}

// The pools and shared coders are safe for concurrent use (run with -race).
func TestCompressConcurrent(t *testing.T) {
	data := compText(100 << 10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				c := compAllCodecs[(g+i)%len(compAllCodecs)]
				comp, err := Compress(nil, c, data[:len(data)-g*i])
				if err != nil {
					t.Error(err)
					return
				}
				out, err := Decompress(nil, c, comp, len(data))
				if err != nil || !bytes.Equal(out, data[:len(data)-g*i]) {
					t.Errorf("%s: %v", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestDecompressUnknownCodec(t *testing.T) {
	for _, c := range []Codec{5, 6, 7, -1} {
		_, err := Decompress(nil, c, []byte("abc"), 100)
		compWantErr(t, fmt.Sprintf("Decompress codec %d", c), err, ErrUnknownCodec)
		_, err = Compress(nil, c, []byte("abc"))
		compWantErr(t, fmt.Sprintf("Compress codec %d", c), err, ErrUnknownCodec)
	}
}

func TestDecompressReadLimited(t *testing.T) {
	// A reader that returns nothing forever is cut off.
	_, err := readLimited(nil, compStallReader{}, 10, 0)
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("stall: %v", err)
	}
	// Exactly the limit is fine; one more byte is not.
	out, err := readLimited([]byte("x"), bytes.NewReader(make([]byte, 5000)), 5000, 1)
	if err != nil || len(out) != 5001 {
		t.Fatalf("exact: %d, %v", len(out), err)
	}
	out, err = readLimited([]byte("x"), bytes.NewReader(make([]byte, 5001)), 5000, 1)
	if err != errOverLimit || string(out) != "x" {
		t.Fatalf("over: %q, %v", out, err)
	}
	// A zero limit takes only an empty stream.
	if _, err := readLimited(nil, bytes.NewReader(nil), 0, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := readLimited(nil, bytes.NewReader([]byte{1}), 0, 100); err != errOverLimit {
		t.Fatal(err)
	}
}

type compStallReader struct{}

func (compStallReader) Read([]byte) (int, error) { return 0, nil }

func FuzzDecompress(f *testing.F) {
	for _, in := range [][]byte{nil, []byte("a"), compText(3000), compRandom(500)} {
		for _, c := range compAllCodecs {
			comp, _ := Compress(nil, c, in)
			f.Add(byte(c), comp)
		}
	}
	f.Add(byte(CodecSnappy), snappy.Encode(nil, compText(2000)))
	f.Add(byte(CodecSnappy), compHex(f, javaXerialHex))
	f.Add(byte(CodecLZ4), compHex(f, javaLZ4Hex))
	f.Add(byte(CodecZstd), compZstdStream(f, compText(2000)))
	f.Add(byte(CodecSnappy), append(xerialHeader[:], 0, 0, 0, 5, 0x80, 0x80, 0x80, 0x80, 0x08))
	f.Add(byte(CodecGzip), []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3})
	f.Add(byte(CodecZstd), []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0})
	f.Add(byte(CodecLZ4), []byte{0x04, 0x22, 0x4d, 0x18, 0x64, 0x70, 0xb9, 0xff, 0xff, 0xff, 0x7f})
	f.Add(byte(5), []byte("x"))

	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, codecByte byte, data []byte) {
		codec := Codec(int8(codecByte))
		out, err := Decompress([]byte("pfx"), codec, data, limit)
		if string(out[:3]) != "pfx" {
			t.Fatalf("prefix overwritten")
		}
		if len(out)-3 > limit {
			t.Fatalf("output %d bytes over the %d limit", len(out)-3, limit)
		}
		if err != nil {
			var ce *CorruptionError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Section != "records" {
				t.Fatalf("error %v is not a records CorruptionError", err)
			}
			if len(out) != 3 {
				t.Fatalf("%d bytes returned with an error", len(out)-3)
			}
		}
		// Whatever the bytes, compressing them round-trips.
		if codec.Valid() && len(data) <= limit {
			comp, err := Compress(nil, codec, data)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decompress(nil, codec, comp, len(data))
			if err != nil || !bytes.Equal(back, data) {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

func BenchmarkCompress(b *testing.B) {
	data := compText(64 << 10)
	for _, c := range compAllCodecs {
		b.Run("codec="+c.String(), func(b *testing.B) {
			dst, _ := Compress(nil, c, data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = Compress(dst[:0], c, data)
			}
			b.ReportMetric(float64(len(data))/float64(len(dst)), "ratio")
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	data := compText(64 << 10)
	for _, c := range compAllCodecs {
		b.Run("codec="+c.String(), func(b *testing.B) {
			comp, _ := Compress(nil, c, data)
			dst, err := Decompress(nil, c, comp, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = Decompress(dst[:0], c, comp, 1<<20)
			}
		})
	}
}
