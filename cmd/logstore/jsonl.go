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
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
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
	// inBuilder says the records are in the builder already: parseLine
	// appends a line's records to it as it decodes them.
	inBuilder bool
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
// offset is 0: Partition.Append stamps the real one. A spec from
// parseLine must be built with the builder parseLine filled.
func (s *batchSpec) build(bld *recordbatch.Builder, dst []byte) ([]byte, error) {
	if !s.inBuilder {
		if len(s.records) == 0 {
			return dst, errors.New("no records")
		}
		bld.Reset(0)
		for i, r := range s.records {
			if err := bld.Append(r.timestamp, r.key, r.value, r.headers); err != nil {
				return dst, fmt.Errorf("record %d: %w", i+1, err)
			}
		}
	}
	bld.Compression = s.codec
	bld.Transactional = s.transactional
	bld.ProducerID = s.producerID
	bld.ProducerEpoch = s.producerEpoch
	bld.BaseSequence = s.baseSequence
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

// jsonBatch is the batch fields of one line of --input; its records go
// straight into a builder (see parseLine). Pointers tell a missing or
// null field from a zero one.
type jsonBatch struct {
	Topic         *string
	Partition     *int64
	ProducerID    *int64
	ProducerEpoch *int64
	BaseSequence  *int64
	Compression   *string
	Transactional *bool
}

// batchField is a field of a line besides "records": its name, and where
// its value is decoded to.
type batchField struct {
	name string
	dst  func(*jsonBatch) any
}

// batchFields are the fields of a line besides "records".
var batchFields = []batchField{
	{"topic", func(jb *jsonBatch) any { return &jb.Topic }},
	{"partition", func(jb *jsonBatch) any { return &jb.Partition }},
	{"producerId", func(jb *jsonBatch) any { return &jb.ProducerID }},
	{"producerEpoch", func(jb *jsonBatch) any { return &jb.ProducerEpoch }},
	{"baseSequence", func(jb *jsonBatch) any { return &jb.BaseSequence }},
	{"compression", func(jb *jsonBatch) any { return &jb.Compression }},
	{"transactional", func(jb *jsonBatch) any { return &jb.Transactional }},
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

// Limits of one line's batch. Without compression it is refused as soon
// as it passes the store's batch limit; compressed, only its compressed
// size counts there, so the records may take more, up to what a reader
// inflates (and a line of maxLineBytes never reaches that).
const (
	maxBatchBytes       = segment.DefaultMaxBatchBytes
	maxInflatedBatch    = recordbatch.DefaultMaxRecordsBytes
	errTooLargeAdvice   = "give fewer records per line"
	errBinaryTextAdvice = `JSON text is UTF-8: give binary keys and values as "keyBase64" and "valueBase64" (standard base64)`
)

// parseLine turns one line of JSON Lines input into a batch. The
// records are appended to bld as they are decoded, one at a time, so a
// line of a million records never holds a million Go values, and the
// line is refused as soon as its batch passes the limit (see
// maxBatchBytes): memory stays within a small multiple of the line.
// Build the returned spec with the same bld. Its errors are the reasons
// of INVALID replies: they say what is wrong with the line, without a
// package prefix.
func parseLine(line []byte, def lineDefaults, bld *recordbatch.Builder) (*batchSpec, error) {
	if err := checkText(line); err != nil {
		return nil, err
	}
	p := lineParser{line: line, def: def, bld: bld}
	s, err := p.parse()
	if err == errCodecLate {
		// The records passed the uncompressed limit before "compression"
		// named a codec: once more, knowing it.
		s, err = p.parse()
	}
	return s, err
}

// errCodecLate: the records passed the limit of the default codec
// before the line named its own, whose limit is higher.
var errCodecLate = errors.New("the codec came after the records")

// lineParser decodes one line, streaming its records into bld.
type lineParser struct {
	line  []byte
	def   lineDefaults
	bld   *recordbatch.Builder
	codec *recordbatch.Codec // the line's "compression", once known

	recordsLimit int // the limit the records were held to as they were decoded
}

func (p *lineParser) parse() (*batchSpec, error) {
	p.bld.Reset(0)
	dec := json.NewDecoder(bytes.NewReader(p.line))
	dec.DisallowUnknownFields()
	tok, err := dec.Token()
	if err != nil {
		return nil, p.jsonError(err)
	}
	switch tok {
	case nil:
		return nil, errors.New("no records") // null: no fields at all
	case json.Delim('{'):
	default:
		return nil, fmt.Errorf("invalid JSON: a %s where the batch object belongs", tokenKind(tok))
	}
	var jb jsonBatch
	overflow := 0 // the record that passed the limit, from 1
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.jsonError(err)
		}
		name, _ := tok.(string)
		if strings.EqualFold(name, "records") {
			if overflow, err = p.records(dec); err != nil {
				return nil, err
			}
			continue
		}
		i := slices.IndexFunc(batchFields, func(f batchField) bool { return strings.EqualFold(f.name, name) })
		if i < 0 {
			return nil, fmt.Errorf("invalid JSON: unknown field %q", name)
		}
		if err := dec.Decode(batchFields[i].dst(&jb)); err != nil {
			return nil, p.jsonError(fieldError(err, batchFields[i].name))
		}
		if jb.Compression != nil && p.codec == nil {
			c, err := parseCodecName(*jb.Compression)
			if err != nil {
				return nil, err
			}
			p.codec = &c
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, p.jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: more after the batch object (one batch per line)")
	}
	s := &batchSpec{
		topic:         p.def.topic,
		partition:     p.def.partition,
		producerID:    recordbatch.NoProducerID,
		producerEpoch: recordbatch.NoProducerEpoch,
		baseSequence:  recordbatch.NoSequence,
		codec:         p.def.codec,
		inBuilder:     true,
	}
	if jb.Compression != nil {
		if s.codec, err = parseCodecName(*jb.Compression); err != nil {
			return nil, err
		}
	}
	if overflow > 0 && p.limit(s.codec) > p.recordsLimit {
		return nil, errCodecLate
	}
	if overflow > 0 || p.bld.Size() > p.limit(s.codec) {
		return nil, p.tooLarge(s.codec, max(overflow, p.bld.Len()))
	}
	if jb.Topic != nil {
		s.topic = *jb.Topic
	}
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
	if jb.Transactional != nil {
		s.transactional = *jb.Transactional
	}
	if p.bld.Len() == 0 {
		return nil, errors.New("no records")
	}
	return s, nil
}

// limit is how large the batch may grow before compression with codec c.
func (p *lineParser) limit(c recordbatch.Codec) int {
	if c == recordbatch.CodecNone {
		return maxBatchBytes
	}
	return maxInflatedBatch
}

// limitUsed is the limit the records are held to while they are decoded:
// that of the line's codec when it came before them, else the default's.
func (p *lineParser) limitUsed() int {
	if p.codec != nil {
		return p.limit(*p.codec)
	}
	return p.limit(p.def.codec)
}

func (p *lineParser) tooLarge(c recordbatch.Codec, record int) error {
	if c == recordbatch.CodecNone {
		return fmt.Errorf("batch too large: by record %d it passes the store's limit of %d bytes (%s)", record, maxBatchBytes, errTooLargeAdvice)
	}
	return fmt.Errorf("batch too large: by record %d its records pass %d bytes before compression, more than a reader inflates (%s)", record, maxInflatedBatch, errTooLargeAdvice)
}

// records decodes the "records" array into the builder, one record at a
// time. When the batch passes the limit it stops building and returns
// the number of the record that passed it, reading the rest of the
// array without keeping it (a "compression" field after it may still
// raise the limit: then parseLine starts over).
func (p *lineParser) records(dec *json.Decoder) (overflow int, err error) {
	p.bld.Reset(0) // a second "records" replaces the first, as in encoding/json
	tok, err := dec.Token()
	if err != nil {
		return 0, p.jsonError(err)
	}
	switch tok {
	case nil:
		return 0, nil
	case json.Delim('['):
	default:
		return 0, fmt.Errorf("invalid JSON: field %q: a %s where an array belongs", "records", tokenKind(tok))
	}
	limit := p.limitUsed()
	p.recordsLimit = limit
	var jr jsonRecord
	var skip skipValue
	for n := 1; dec.More(); n++ {
		if overflow > 0 {
			if err := dec.Decode(&skip); err != nil {
				return 0, p.jsonError(err)
			}
			continue
		}
		jr = jsonRecord{}
		if err := dec.Decode(&jr); err != nil {
			return 0, p.jsonError(fieldError(err, "records"))
		}
		if p.bld.Size()+jr.leastSize() > limit {
			overflow = n
			continue
		}
		r, err := jr.spec(p.def.timestamp)
		if err != nil {
			return 0, fmt.Errorf("record %d: %w", n, err)
		}
		if err := p.bld.Append(r.timestamp, r.key, r.value, r.headers); err != nil {
			return 0, fmt.Errorf("record %d: %w", n, err)
		}
		if p.bld.Size() > limit {
			overflow = n
		}
		if overflow > 0 && p.codec == nil && !containsFoldASCII(p.line, "compre") {
			// No field can name a codec (any spelling that encoding/json
			// matches to "compression" holds these letters): too large
			// now, without reading the rest.
			return 0, p.tooLarge(p.def.codec, overflow)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return 0, p.jsonError(err)
	}
	if overflow > 0 && p.codec != nil {
		return 0, p.tooLarge(*p.codec, overflow)
	}
	return overflow, nil
}

// leastSize is a lower bound of the bytes the record takes in a batch:
// its key, value and headers, so that a huge one is refused before it
// is copied.
func (jr *jsonRecord) leastSize() int {
	n := textLen(jr.Key) + textLen(jr.Value) + base64Len(jr.KeyBase64) + base64Len(jr.ValueBase64)
	for _, h := range jr.Headers {
		n += textLen(h.Key) + textLen(h.Value) + base64Len(h.ValueBase64)
	}
	return n
}

func textLen(f *string) int {
	if f == nil {
		return 0
	}
	return len(*f)
}

// base64Len is the least number of bytes the base64 text *f decodes to.
func base64Len(f *string) int {
	if f == nil {
		return 0
	}
	return max(base64.StdEncoding.DecodedLen(len(*f))-2, 0)
}

// containsFoldASCII says b holds lower, an ASCII lower-case word, in any
// mix of case.
func containsFoldASCII(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		j := 0
		for j < len(lower) && b[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// skipValue reads a JSON value and keeps nothing of it.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// fieldError puts the field name in front of the path of a type error
// from decoding that field's value.
func fieldError(err error, name string) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field == "" {
			typ.Field = name
		} else {
			typ.Field = name + "." + typ.Field
		}
	}
	return err
}

// tokenKind names a JSON token as encoding/json's type errors do.
func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "number"
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
// encoding/json's "json: " prefix. A syntax error is located in the whole
// line (the stream's offsets count from the value it was reading), and a
// byte that is not ASCII is shown as a byte, not as the Latin-1
// character encoding/json names it by.
func (p *lineParser) jsonError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
		var whole struct{}
		if e := json.Unmarshal(p.line, &whole); e != nil {
			err = e
		}
	}
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: the line ends inside the batch object")
	case errors.As(err, &syn) && syn.Offset >= int64(len(p.line)) && strings.HasPrefix(syn.Error(), "unexpected end of JSON input"):
		return errors.New("invalid JSON: the line ends inside the batch object")
	case errors.As(err, &syn):
		msg := syn.Error()
		if at := syn.Offset - 1; at >= 0 && at < int64(len(p.line)) && p.line[at] >= utf8.RuneSelf {
			c := p.line[at]
			msg = strings.Replace(msg, "invalid character '"+string(rune(c))+"'", fmt.Sprintf("byte 0x%02x at %d", c, at), 1)
		}
		return fmt.Errorf("invalid JSON at byte %d: %s", syn.Offset, msg)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("invalid JSON: field %q: a %s where %s belongs", typ.Field, typ.Value, jsonTypeName(typ.Type.Kind()))
	case errors.As(err, &typ):
		return fmt.Errorf("invalid JSON: a %s where the batch object belongs", typ.Value)
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// checkText refuses a line that is not valid UTF-8, or whose strings
// escape half of a UTF-16 surrogate pair: encoding/json would replace
// either with U+FFFD, so the stored bytes would differ from the line's.
// The error names the first bad byte, as a byte, and its position (from
// 0) in the line.
func checkText(line []byte) error {
	if !utf8.Valid(line) {
		at := 0
		for at < len(line) {
			r, n := utf8.DecodeRune(line[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return fmt.Errorf("invalid UTF-8: byte 0x%02x at %d; %s", line[at], at, errBinaryTextAdvice)
	}
	for i := 0; ; {
		j := bytes.Index(line[i:], []byte(`\u`))
		if j < 0 {
			return nil
		}
		at := i + j
		i = at + 2
		if !escaped(line, at) {
			continue // an escaped backslash, then a 'u'
		}
		r, ok := hex4(line[at+2:])
		if !ok || !utf16.IsSurrogate(r) {
			continue // not a surrogate (or bad JSON, which the decoder reports)
		}
		if r < 0xdc00 && len(line) >= at+12 && line[at+6] == '\\' && line[at+7] == 'u' {
			if r2, ok := hex4(line[at+8:]); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
				i = at + 12 // a whole pair: one character
				continue
			}
		}
		return fmt.Errorf("invalid JSON text at byte %d: %s is half of a UTF-16 surrogate pair, not a character; %s", at, line[at:at+6], errBinaryTextAdvice)
	}
}

// escaped says the backslash at line[at] starts an escape: an even number
// of backslashes come before it.
func escaped(line []byte, at int) bool {
	n := 0
	for k := at - 1; k >= 0 && line[k] == '\\'; k-- {
		n++
	}
	return n%2 == 0
}

// hex4 reads the 4 hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	r, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(r), err == nil
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
				l.grow(len(frag))
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

// grow makes room for n more bytes in buf, doubling its capacity (up to
// a whole line) so that reading a long line allocates at most about
// twice the line, where append's smaller steps for large slices would
// leave five times as much behind.
func (l *lineReader) grow(n int) {
	if len(l.buf)+n <= cap(l.buf) {
		return
	}
	c := max(2*cap(l.buf), len(l.buf)+n, 64<<10)
	if 2*c > maxLineBytes {
		c = max(maxLineBytes+2, len(l.buf)+n) // the last step: a whole line
	}
	l.buf = append(make([]byte, 0, c), l.buf...)
}

// isBlank says a line holds only white space: it is skipped.
func isBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }
