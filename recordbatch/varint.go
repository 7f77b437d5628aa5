package recordbatch

// Kafka's record fields use zig-zag varints (ByteUtils.readVarint and
// readVarlong): at most 5 bytes for an int32 and 10 for an int64. A longer
// encoding is an error; like Kafka, bits of the last byte that do not fit
// the type are dropped.

const (
	maxVarintLen32 = 5
	maxVarintLen64 = 10
)

// readVarint decodes a zig-zag int32 at b[0:]. n is the number of bytes
// read; n == 0 means b ended first, n < 0 that the encoding is too long.
func readVarint(b []byte) (v int32, n int) {
	var u uint32
	for i := 0; i < maxVarintLen32; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong decodes a zig-zag int64, with readVarint's conventions.
func readVarlong(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < maxVarintLen64; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}

func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendUvarint(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

func sizeOfVarint(v int32) int { return sizeOfUvarint(uint64(uint32(v<<1) ^ uint32(v>>31))) }

func sizeOfVarlong(v int64) int { return sizeOfUvarint(uint64(v<<1) ^ uint64(v>>63)) }

func sizeOfUvarint(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
