package appender

import (
	"errors"
	"fmt"
	"io"

	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Args yields the one batch spec.
func Args(spec *jsonl.Batch) Source { return &argsSource{spec: spec} }

// argsSource yields the one batch of the flags and arguments.
type argsSource struct {
	spec *jsonl.Batch
	done bool
}

func (s *argsSource) next() (item, error) {
	if s.done {
		return item{}, io.EOF
	}
	s.done = true
	var bld recordbatch.Builder
	b, err := s.spec.Build(&bld, nil)
	if err != nil {
		return item{}, err
	}
	return item{topic: s.spec.Topic, partition: s.spec.Partition, batch: b}, nil
}

// Lines yields a batch for each line of JSON Lines input r (see package
// jsonl), named name in errors; def is what a line leaves out.
func Lines(r io.Reader, name string, def jsonl.Defaults) Source {
	return &lineSource{lines: jsonl.NewLineReader(r), defaults: def, name: name}
}

// lineSource yields the batches of JSON Lines input.
type lineSource struct {
	lines    *jsonl.LineReader
	defaults jsonl.Defaults
	name     string
	bld      recordbatch.Builder
	buf      []byte
}

func (s *lineSource) next() (item, error) {
	for {
		line, tooLong, err := s.lines.Next()
		if err == io.EOF {
			return item{}, io.EOF
		}
		if err != nil {
			return item{}, fmt.Errorf("--input %s: line %d: %w", s.name, s.lines.Line()+1, err)
		}
		from := origin{line: s.lines.Line()}
		if tooLong {
			return item{from: from, invalid: fmt.Sprintf("the line is longer than %d bytes", jsonl.MaxLineBytes)}, nil
		}
		if jsonl.IsBlank(line) {
			continue
		}
		spec, err := jsonl.ParseLine(line, s.defaults, &s.bld)
		if err != nil {
			return item{from: from, invalid: err.Error()}, nil
		}
		s.buf, err = spec.Build(&s.bld, s.buf[:0])
		if err != nil {
			return item{from: from, invalid: err.Error()}, nil
		}
		return item{from: from, topic: spec.Topic, partition: spec.Partition, batch: s.buf}, nil
	}
}

// logSource yields the batches of a segment file (see
// segment.StreamReader).
type logSource struct {
	batches   *segment.StreamReader
	name      string
	topic     string
	partition int32
}

// Log yields the batches of segment file r, named name, to send
// unchanged to topic's partition.
func Log(r io.Reader, name, topic string, partition int32) Source {
	return &logSource{batches: segment.NewStreamReader(r, name), name: name, topic: topic, partition: partition}
}

func (s *logSource) next() (item, error) {
	b, err := s.batches.Next()
	if se := (*segment.StreamError)(nil); errors.As(err, &se) {
		return item{}, fmt.Errorf("--from-log %s: position %d: %w", s.name, se.Offset, se.Err)
	} else if err != nil {
		return item{}, err // io.EOF
	}
	from := origin{batch: b.N, position: b.Pos, next: b.Pos + b.Size}
	if b.Data == nil {
		return item{from: from, invalid: fmt.Sprintf("batch of %d bytes is larger than the store's limit of %d", b.Size, segment.DefaultMaxBatchBytes)}, nil
	}
	return item{from: from, topic: s.topic, partition: s.partition, batch: b.Data}, nil
}

func (s *argsSource) unsent(origin) string { return "the batch was not sent" }

func (s *lineSource) unsent(last origin) string {
	if last.line == 0 {
		return "no line was answered: nothing of the input was sent"
	}
	return fmt.Sprintf("lines 1 to %d were answered; the input from line %d on was not sent", last.line, last.line+1)
}

func (s *logSource) unsent(last origin) string {
	if last.batch == 0 {
		return fmt.Sprintf("no batch was answered: nothing of %s was sent", s.name)
	}
	return fmt.Sprintf("batches 1 to %d were answered; %s from batch %d at position %d on was not sent", last.batch, s.name, last.batch+1, last.next)
}
