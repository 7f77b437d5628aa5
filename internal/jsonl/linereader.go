package jsonl

import (
	"bufio"
	"bytes"
	"io"
)

// LineReader reads JSON Lines input line by line. A line longer than
// MaxLineBytes is skipped to its end and reported, so memory stays
// bounded.
type LineReader struct {
	r   *bufio.Reader
	buf []byte
	n   int // number of the line last read, from 1
}

// NewLineReader reads the lines of r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Line is the number of the line Next returned last, from 1 (0 before
// the first).
func (l *LineReader) Line() int { return l.n }

// Next returns the next line without its line ending. tooLong says the
// line was longer than MaxLineBytes and was dropped. At the end of the
// input it returns io.EOF.
func (l *LineReader) Next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	read := false
	for {
		frag, err := l.r.ReadSlice('\n')
		read = read || len(frag) > 0
		if !tooLong {
			if len(l.buf)+len(frag) > MaxLineBytes+2 { // +2 for "\r\n"
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
		if !tooLong && len(line) > MaxLineBytes {
			tooLong = true
		}
		return line, tooLong, nil
	}
}

// grow makes room for n more bytes in buf, doubling its capacity (up to
// a whole line) so that reading a long line allocates at most about
// twice the line, where append's smaller steps for large slices would
// leave five times as much behind.
func (l *LineReader) grow(n int) {
	if len(l.buf)+n <= cap(l.buf) {
		return
	}
	c := max(2*cap(l.buf), len(l.buf)+n, 64<<10)
	if 2*c > MaxLineBytes {
		c = max(MaxLineBytes+2, len(l.buf)+n) // the last step: a whole line
	}
	l.buf = append(make([]byte, 0, c), l.buf...)
}

// IsBlank says a line holds only white space: it is skipped.
func IsBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }
