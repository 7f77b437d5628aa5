package jsonl

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

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
