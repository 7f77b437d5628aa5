package kafkaserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Produce request may be as large as MaxRequestBytes (100 MiB by
// default), and kmsg allocates each array by its count before it
// decodes the elements, checking only that the frame has a couple of
// bytes left per element. A frame of topics of three bytes each would so
// decode into structs some twenty times its size: 2 GB for a 96 MiB
// frame, held as long as the request, and its answer would cost as
// much again. checkProduceShape walks the request's topic and
// partition arrays before kmsg does and refuses a frame whose elements
// would cost more than produceDecodeFactor times its size (plus
// produceDecodeSlack), produceElementBytes each. A produce of real
// records is far inside that: each partition carries a record batch of
// 61 bytes at least (68 with one record), and its records are not
// copied, only referred to.
const (
	produceDecodeFactor = 4
	produceDecodeSlack  = 1 << 20
)

// produceElementBytes is what one topic or partition of a Produce
// request costs, the larger of the two: its decoded struct, the struct
// of its answer, and the answer's bytes.
const produceElementBytes = max(
	unsafe.Sizeof(kmsg.ProduceRequestTopic{})+unsafe.Sizeof(kmsg.ProduceResponseTopic{}),
	unsafe.Sizeof(kmsg.ProduceRequestTopicPartition{})+unsafe.Sizeof(kmsg.ProduceResponseTopicPartition{}),
) + 48

// errProduceShape is the error of a Produce request refused by
// checkProduceShape.
var errProduceShape = errors.New("produce request refused before decoding")

// checkProduceShape walks body, a Produce request of version after the
// header, as far as its arrays, and returns how many topics and
// partitions it has: each count must fit the bytes left, and all of
// them together within the frame's budget. It reads no more than body
// and allocates nothing; where the walk cannot go (bytes that do not
// decode) it stops without an error with what it counted, and leaves
// the answer to kmsg.
func checkProduceShape(version int16, body []byte) (int, error) {
	flexible := version >= 9
	budget := (produceDecodeFactor*len(body) + produceDecodeSlack) / int(produceElementBytes)
	r := shapeReader{src: body, flexible: flexible}
	if version >= 3 {
		r.str() // transactional id
	}
	r.skip(2 + 4) // acks, timeout
	topics := r.arrayLen()
	if topics > budget {
		return 0, shapeError(len(body), topics, 0)
	}
	elements := 0
	for t := 0; t < topics && r.ok(); t++ {
		if elements++; elements > budget {
			return 0, shapeError(len(body), elements, t)
		}
		if version >= 13 {
			r.skip(16) // topic id
		} else {
			r.str() // name
		}
		partitions := r.arrayLen()
		if elements+partitions > budget && r.ok() {
			return 0, shapeError(len(body), elements+partitions, t)
		}
		elements += partitions
		for p := 0; p < partitions && r.ok(); p++ {
			r.skip(4) // partition index
			r.bytes() // records
			r.tags()
		}
		r.tags()
	}
	return elements, nil
}

func shapeError(frame, elements, at int) error {
	return fmt.Errorf("%w: a frame of %d bytes claims at least %d topics and partitions (by topic %d), which would decode into more than %d bytes",
		errProduceShape, frame, elements, at, produceDecodeFactor*frame+produceDecodeSlack)
}

// shapeReader reads Kafka's primitive encodings far enough to find the
// array counts; it turns bad at the first field that does not fit.
type shapeReader struct {
	src      []byte
	flexible bool
	bad      bool
}

func (r *shapeReader) ok() bool { return !r.bad }

func (r *shapeReader) skip(n int) {
	if r.bad || n < 0 || n > len(r.src) {
		r.bad, r.src = true, nil
		return
	}
	r.src = r.src[n:]
}

func (r *shapeReader) uvarint() int {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.src)
	if n <= 0 || v > 1<<31-1 {
		r.bad, r.src = true, nil
		return 0
	}
	r.src = r.src[n:]
	return int(v)
}

func (r *shapeReader) int16() int {
	if r.bad || len(r.src) < 2 {
		r.bad, r.src = true, nil
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.src))
	r.src = r.src[2:]
	return int(v)
}

func (r *shapeReader) int32() int {
	if r.bad || len(r.src) < 4 {
		r.bad, r.src = true, nil
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.src))
	r.src = r.src[4:]
	return int(v)
}

// arrayLen reads an array's count; a null or empty array is 0, and a
// count the bytes left cannot hold (one byte an element at least)
// turns r bad.
func (r *shapeReader) arrayLen() int {
	var n int
	if r.flexible {
		n = r.uvarint() - 1
	} else {
		n = r.int32()
	}
	if n > len(r.src) {
		r.bad, r.src = true, nil
	}
	if r.bad || n < 0 {
		return 0
	}
	return n
}

// str skips a string, null or not (int16 length; flexible: compact).
func (r *shapeReader) str() {
	if r.flexible {
		r.skip(max(r.uvarint()-1, 0))
	} else {
		r.skip(max(r.int16(), 0))
	}
}

// bytes skips a bytes field, null or not (int32 length; flexible:
// compact).
func (r *shapeReader) bytes() {
	if r.flexible {
		r.skip(max(r.uvarint()-1, 0))
	} else {
		r.skip(max(r.int32(), 0))
	}
}

// tags skips a flexible version's tagged fields.
func (r *shapeReader) tags() {
	if !r.flexible {
		return
	}
	for n := r.uvarint(); n > 0 && r.ok(); n-- {
		r.uvarint()
		r.skip(r.uvarint())
	}
}
