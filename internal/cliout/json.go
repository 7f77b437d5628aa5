package cliout

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string (see the package doc), each
// malformed UTF-8 byte replaced by U+FFFD, as encoding/json replaces it.
func AppendJSONString[T string | []byte](dst []byte, s T) []byte {
	return AppendJSONStringFunc(dst, s, func(T) int { return 1 })
}

// AppendJSONStringFunc is AppendJSONString with the length of each
// malformed sequence, which becomes one U+FFFD, given by malformed: it
// gets the input from the first byte that does not start a valid UTF-8
// sequence and returns how many bytes to replace, at least 1.
func AppendJSONStringFunc[T string | []byte](dst []byte, s T, malformed func(T) int) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			dst = appendJSONByte(dst, c)
			i++
			continue
		}
		if r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))])); r != utf8.RuneError || n > 1 {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += max(1, malformed(s[i:]))
	}
	return append(dst, '"')
}

// appendJSONByte appends one ASCII byte, escaped as JSON requires.
func appendJSONByte(dst []byte, c byte) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(dst, '\\', c)
	case c == '\n':
		return append(dst, '\\', 'n')
	case c == '\r':
		return append(dst, '\\', 'r')
	case c == '\t':
		return append(dst, '\\', 't')
	case c < 0x20:
		return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(dst, c)
}
