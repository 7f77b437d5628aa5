package main

// The batches of `logstore append`: what one batch holds, how it is built
// into Kafka v2 bytes, and how a line of JSON Lines input becomes one.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/logstore/logstore/recordbatch"
)

// maxLineBytes bounds one line of --input. A batch is at most about 1 MiB
// (segment.DefaultMaxBatchBytes), so even with base64 and JSON escapes a
// real line stays well below it; a longer line is refused, not buffered.
const maxLineBytes = 16 << 20

// batchSpec is one batch to append: where it goes and what it holds.
type batchSpec struct {
	topic         string
	partition     int32
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	codec         recordbatch.Codec
	transactional bool
	records       []recordSpec
}

// recordSpec is one record. A nil key or value is null; an empty one is
// not.
type recordSpec struct {
	timestamp int64
	key       []byte
	value     []byte
	headers   []recordbatch.RecordHeader
}

// build appends the batch, as a producer sends it, to dst. The base
// offset is 0: Partition.Append stamps the real one.
func (s *batchSpec) build(bld *recordbatch.Builder, dst []byte) ([]byte, error) {
	if len(s.records) == 0 {
		return dst, errors.New("no records")
	}
	bld.Reset(0)
	bld.Compression = s.codec
	bld.Transactional = s.transactional
	bld.ProducerID = s.producerID
	bld.ProducerEpoch = s.producerEpoch
	bld.BaseSequence = s.baseSequence
	for i, r := range s.records {
		if err := bld.Append(r.timestamp, r.key, r.value, r.headers); err != nil {
			return dst, fmt.Errorf("record %d: %w", i+1, err)
		}
	}
	return bld.AppendTo(dst)
}

// checkTimestamp accepts what Kafka accepts from a producer: a time in
// milliseconds since the epoch, or -1 for none.
func checkTimestamp(ts int64) error {
	if ts < recordbatch.NoTimestamp {
		return fmt.Errorf("timestamp %d is negative (give milliseconds since the epoch, or -1 for none)", ts)
	}
	return nil
}

// parseCodecName maps a --compression or "compression" value to a codec.
func parseCodecName(name string) (recordbatch.Codec, error) {
	c, ok := recordbatch.ParseCodec(name)
	if !ok {
		return 0, fmt.Errorf("unknown compression %q: want none, gzip, snappy, lz4 or zstd", name)
	}
	return c, nil
}

// lineDefaults is what a JSON line leaves out: topic, partition and codec
// come from the flags, the timestamp from --timestamp or the clock.
type lineDefaults struct {
	topic     string
	partition int32
	codec     recordbatch.Codec
	timestamp int64
}

// jsonBatch is one line of --input. Pointers tell a missing or null field
// from a zero one.
type jsonBatch struct {
	Topic         *string      `json:"topic"`
	Partition     *int64       `json:"partition"`
	ProducerID    *int64       `json:"producerId"`
	ProducerEpoch *int64       `json:"producerEpoch"`
	BaseSequence  *int64       `json:"baseSequence"`
	Compression   *string      `json:"compression"`
	Transactional *bool        `json:"transactional"`
	Records       []jsonRecord `json:"records"`
}

type jsonRecord struct {
	Key         *string      `json:"key"`
	KeyBase64   *string      `json:"keyBase64"`
	Value       *string      `json:"value"`
	ValueBase64 *string      `json:"valueBase64"`
	Headers     []jsonHeader `json:"headers"`
	Timestamp   *int64       `json:"timestamp"`
}

type jsonHeader struct {
	Key         *string `json:"key"`
	Value       *string `json:"value"`
	ValueBase64 *string `json:"valueBase64"`
}

// parseLine turns one line of JSON Lines input into a batch. Its errors
// are the reasons of INVALID replies: they say what is wrong with the
// line, without a package prefix.
func parseLine(line []byte, def lineDefaults) (*batchSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var jb jsonBatch
	if err := dec.Decode(&jb); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: more after the batch object (one batch per line)")
	}
	s := &batchSpec{
		topic:         def.topic,
		partition:     def.partition,
		producerID:    recordbatch.NoProducerID,
		producerEpoch: recordbatch.NoProducerEpoch,
		baseSequence:  recordbatch.NoSequence,
		codec:         def.codec,
	}
	if jb.Topic != nil {
		s.topic = *jb.Topic
	}
	var err error
	if jb.Partition != nil {
		if s.partition, err = int32Field("partition", *jb.Partition); err != nil {
			return nil, err
		}
	}
	if jb.ProducerID != nil {
		s.producerID = *jb.ProducerID
	}
	if jb.ProducerEpoch != nil {
		if *jb.ProducerEpoch < math.MinInt16 || *jb.ProducerEpoch > math.MaxInt16 {
			return nil, fmt.Errorf("producerEpoch %d is outside the 16-bit range", *jb.ProducerEpoch)
		}
		s.producerEpoch = int16(*jb.ProducerEpoch)
	}
	if jb.BaseSequence != nil {
		if s.baseSequence, err = int32Field("baseSequence", *jb.BaseSequence); err != nil {
			return nil, err
		}
	}
	if jb.Compression != nil {
		if s.codec, err = parseCodecName(*jb.Compression); err != nil {
			return nil, err
		}
	}
	if jb.Transactional != nil {
		s.transactional = *jb.Transactional
	}
	if len(jb.Records) == 0 {
		return nil, errors.New("no records")
	}
	s.records = make([]recordSpec, len(jb.Records))
	for i, jr := range jb.Records {
		r, err := jr.spec(def.timestamp)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i+1, err)
		}
		s.records[i] = r
	}
	return s, nil
}

func (jr *jsonRecord) spec(defaultTS int64) (recordSpec, error) {
	r := recordSpec{timestamp: defaultTS}
	if jr.Timestamp != nil {
		r.timestamp = *jr.Timestamp
	}
	if err := checkTimestamp(r.timestamp); err != nil {
		return r, err
	}
	var err error
	if r.key, err = textOrBase64("key", jr.Key, jr.KeyBase64); err != nil {
		return r, err
	}
	if r.value, err = textOrBase64("value", jr.Value, jr.ValueBase64); err != nil {
		return r, err
	}
	for i, jh := range jr.Headers {
		if jh.Key == nil {
			return r, fmt.Errorf("header %d: a header key is required (it may be empty, not null)", i+1)
		}
		v, err := textOrBase64("value", jh.Value, jh.ValueBase64)
		if err != nil {
			return r, fmt.Errorf("header %d: %w", i+1, err)
		}
		r.headers = append(r.headers, recordbatch.RecordHeader{Key: []byte(*jh.Key), Value: v})
	}
	return r, nil
}

// textOrBase64 returns the bytes of a field given as UTF-8 text (name) or
// as standard base64 (nameBase64); neither, or null, is a null field.
func textOrBase64(name string, text, b64 *string) ([]byte, error) {
	switch {
	case text != nil && b64 != nil:
		return nil, fmt.Errorf("both %q and %q are given", name, name+"Base64")
	case text != nil:
		return []byte(*text), nil
	case b64 != nil:
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, fmt.Errorf("%q is not standard base64: %w", name+"Base64", err)
		}
		return b, nil
	}
	return nil, nil
}

func int32Field(name string, v int64) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s %d is outside the 32-bit range", name, v)
	}
	return int32(v), nil
}

// jsonError says what is wrong with a line that does not decode, without
// encoding/json's "json: " prefix.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: the line ends inside the batch object")
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("invalid JSON: field %q: a %s where %s belongs", typ.Field, typ.Value, jsonTypeName(typ.Type.Kind()))
	case errors.As(err, &typ):
		return fmt.Errorf("invalid JSON: a %s where the batch object belongs", typ.Value)
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonTypeName names, for a user, what a field of the line format holds.
func jsonTypeName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return "another type"
}

// lineReader reads --input line by line. A line longer than maxLineBytes
// is skipped to its end and reported, so memory stays bounded.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
	n   int // number of the line last read, from 1
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending. tooLong says the
// line was longer than maxLineBytes and was dropped. At the end of the
// input it returns io.EOF.
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	read := false
	for {
		frag, err := l.r.ReadSlice('\n')
		read = read || len(frag) > 0
		if !tooLong {
			if len(l.buf)+len(frag) > maxLineBytes+2 { // +2 for "\r\n"
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && read:
			// The last line, without a final newline.
		case err != nil:
			return nil, false, err
		}
		l.n++
		line = bytes.TrimSuffix(bytes.TrimSuffix(l.buf, []byte("\n")), []byte("\r"))
		if !tooLong && len(line) > maxLineBytes {
			tooLong = true
		}
		return line, tooLong, nil
	}
}
