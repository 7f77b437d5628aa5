package jsonl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// jsonBatch is the batch fields of one line of --input; its records go
// straight into a builder (see ParseLine). Pointers tell a missing or
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

// jsonRecord is a record object of a line; pointers tell a missing or
// null field from an empty one.
type jsonRecord struct {
	Key         *string      `json:"key"`
	KeyBase64   *string      `json:"keyBase64"`
	Value       *string      `json:"value"`
	ValueBase64 *string      `json:"valueBase64"`
	Headers     []jsonHeader `json:"headers"`
	Timestamp   *int64       `json:"timestamp"`
	// Offset and TimestampType are what a reader of the log printed
	// (AppendRecord); a batch gets new offsets, and its own timestamp
	// type, so they are checked and not kept.
	Offset        *int64  `json:"offset"`
	TimestampType *string `json:"timestampType"`
}

// recordField is a field of a record object: its name, and where its
// value is decoded to.
type recordField struct {
	name string
	dst  func(*jsonRecord) any
}

// recordFields are the fields of a record object, for a line that is
// one record.
var recordFields = []recordField{
	{"key", func(jr *jsonRecord) any { return &jr.Key }},
	{"keyBase64", func(jr *jsonRecord) any { return &jr.KeyBase64 }},
	{"value", func(jr *jsonRecord) any { return &jr.Value }},
	{"valueBase64", func(jr *jsonRecord) any { return &jr.ValueBase64 }},
	{"headers", func(jr *jsonRecord) any { return &jr.Headers }},
	{"timestamp", func(jr *jsonRecord) any { return &jr.Timestamp }},
	{"offset", func(jr *jsonRecord) any { return &jr.Offset }},
	{"timestampType", func(jr *jsonRecord) any { return &jr.TimestampType }},
}

// jsonHeader is a header object of a record.
type jsonHeader struct {
	Key         *string `json:"key"`
	KeyBase64   *string `json:"keyBase64"`
	Value       *string `json:"value"`
	ValueBase64 *string `json:"valueBase64"`
}

// Limits of one line's batch. Without compression it is refused as soon
// as it passes the store's batch limit; compressed, only its compressed
// size counts there, so the records may take more, up to what a reader
// inflates (and a line of MaxLineBytes never reaches that).
const (
	maxBatchBytes       = segment.DefaultMaxBatchBytes
	maxInflatedBatch    = recordbatch.DefaultMaxRecordsBytes
	errTooLargeAdvice   = "give fewer records per line"
	errBinaryTextAdvice = `JSON text is UTF-8: give binary keys and values as "keyBase64" and "valueBase64" (standard base64)`
)

// ParseLine turns one line of JSON Lines input into a batch. The
// records are appended to bld as they are decoded, one at a time, so a
// line of a million records never holds a million Go values, and the
// line is refused as soon as its batch passes the limit (see
// maxBatchBytes): memory stays within a small multiple of the line.
// Build the returned spec with the same bld. Its errors are the reasons
// of INVALID replies: they say what is wrong with the line, without a
// package prefix.
func ParseLine(line []byte, def Defaults, bld *recordbatch.Builder) (*Batch, error) {
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
	def   Defaults
	bld   *recordbatch.Builder
	codec *recordbatch.Codec // the line's "compression", once known

	recordsLimit int // the limit the records were held to as they were decoded
}

func (p *lineParser) parse() (*Batch, error) {
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
	var jr jsonRecord // the fields of a line that is one record
	hasRecords, oneRecord := false, false
	overflow := 0 // the record that passed the limit, from 1
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, p.jsonError(err)
		}
		name, _ := tok.(string)
		if strings.EqualFold(name, "records") {
			hasRecords = true
			if overflow, err = p.records(dec); err != nil {
				return nil, err
			}
			continue
		}
		if i := slices.IndexFunc(recordFields, func(f recordField) bool { return strings.EqualFold(f.name, name) }); i >= 0 {
			oneRecord = true
			if err := dec.Decode(recordFields[i].dst(&jr)); err != nil {
				return nil, p.jsonError(fieldError(err, recordFields[i].name))
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
			c, err := ParseCodec(*jb.Compression)
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
	if oneRecord {
		if hasRecords || jb != (jsonBatch{}) {
			return nil, errors.New(`invalid JSON: a line is a batch object (with "records") or one record object, not both`)
		}
		p.recordsLimit = p.limit(p.def.Codec)
		if overflow, err = p.record(&jr, 1, p.recordsLimit); err != nil {
			return nil, err
		}
	}
	s := &Batch{
		Topic:         p.def.Topic,
		Partition:     p.def.Partition,
		ProducerID:    recordbatch.NoProducerID,
		ProducerEpoch: recordbatch.NoProducerEpoch,
		BaseSequence:  recordbatch.NoSequence,
		Codec:         p.def.Codec,
		inBuilder:     true,
	}
	if jb.Compression != nil {
		if s.Codec, err = ParseCodec(*jb.Compression); err != nil {
			return nil, err
		}
	}
	if overflow > 0 && p.limit(s.Codec) > p.recordsLimit {
		return nil, errCodecLate
	}
	if overflow > 0 || p.bld.Size() > p.limit(s.Codec) {
		return nil, p.tooLarge(s.Codec, max(overflow, p.bld.Len()))
	}
	if jb.Topic != nil {
		s.Topic = *jb.Topic
	}
	if jb.Partition != nil {
		if s.Partition, err = int32Field("partition", *jb.Partition); err != nil {
			return nil, err
		}
	}
	if jb.ProducerID != nil {
		s.ProducerID = *jb.ProducerID
	}
	if jb.ProducerEpoch != nil {
		if *jb.ProducerEpoch < math.MinInt16 || *jb.ProducerEpoch > math.MaxInt16 {
			return nil, fmt.Errorf("producerEpoch %d is outside the 16-bit range", *jb.ProducerEpoch)
		}
		s.ProducerEpoch = int16(*jb.ProducerEpoch)
	}
	if jb.BaseSequence != nil {
		if s.BaseSequence, err = int32Field("baseSequence", *jb.BaseSequence); err != nil {
			return nil, err
		}
	}
	if jb.Transactional != nil {
		s.Transactional = *jb.Transactional
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
	return p.limit(p.def.Codec)
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
// raise the limit: then ParseLine starts over).
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
		if overflow, err = p.record(&jr, n, limit); err != nil {
			return 0, err
		}
		if overflow > 0 && p.bld.Len() < n {
			continue // refused before it was copied
		}
		if overflow > 0 && p.codec == nil && !containsFoldASCII(p.line, "compre") {
			// No field can name a codec (any spelling that encoding/json
			// matches to "compression" holds these letters): too large
			// now, without reading the rest.
			return 0, p.tooLarge(p.def.Codec, overflow)
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

// record appends record n (from 1) to the builder, unless it would pass
// limit before it is copied. overflow is n when the batch passes limit
// with it (whether it was appended or not), else 0.
func (p *lineParser) record(jr *jsonRecord, n, limit int) (overflow int, err error) {
	if p.bld.Size()+jr.leastSize() > limit {
		return n, nil
	}
	r, err := jr.spec(p.def.Timestamp)
	if err != nil {
		return 0, fmt.Errorf("record %d: %w", n, err)
	}
	if err := p.bld.Append(r.Timestamp, r.Key, r.Value, r.Headers); err != nil {
		return 0, fmt.Errorf("record %d: %w", n, err)
	}
	if p.bld.Size() > limit {
		return n, nil
	}
	return 0, nil
}

// leastSize is a lower bound of the bytes the record takes in a batch:
// its key, value and headers, so that a huge one is refused before it
// is copied.
func (jr *jsonRecord) leastSize() int {
	n := textLen(jr.Key) + textLen(jr.Value) + base64Len(jr.KeyBase64) + base64Len(jr.ValueBase64)
	for _, h := range jr.Headers {
		n += textLen(h.Key) + base64Len(h.KeyBase64) + textLen(h.Value) + base64Len(h.ValueBase64)
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

func (jr *jsonRecord) spec(defaultTS int64) (Record, error) {
	r := Record{Timestamp: defaultTS}
	if jr.Timestamp != nil {
		r.Timestamp = *jr.Timestamp
	}
	if err := CheckTimestamp(r.Timestamp); err != nil {
		return r, err
	}
	if t := jr.TimestampType; t != nil && *t != recordbatch.CreateTime.String() && *t != recordbatch.LogAppendTime.String() {
		return r, fmt.Errorf("timestampType %q: want %s or %s", *t, recordbatch.CreateTime, recordbatch.LogAppendTime)
	}
	var err error
	if r.Key, err = textOrBase64("key", jr.Key, jr.KeyBase64); err != nil {
		return r, err
	}
	if r.Value, err = textOrBase64("value", jr.Value, jr.ValueBase64); err != nil {
		return r, err
	}
	for i, jh := range jr.Headers {
		if jh.Key == nil && jh.KeyBase64 == nil {
			return r, fmt.Errorf("header %d: a header key is required (it may be empty, not null)", i+1)
		}
		k, err := textOrBase64("key", jh.Key, jh.KeyBase64)
		if err != nil {
			return r, fmt.Errorf("header %d: %w", i+1, err)
		}
		v, err := textOrBase64("value", jh.Value, jh.ValueBase64)
		if err != nil {
			return r, fmt.Errorf("header %d: %w", i+1, err)
		}
		r.Headers = append(r.Headers, recordbatch.RecordHeader{Key: k, Value: v})
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
