package main

// Java and Scala behaviour that kafka-dump-log.sh's output depends on,
// reproduced so that `logstore dump` prints the same bytes: how java.io.File
// prints and resolves a path, how String.split drops trailing empty
// strings, how new String(bytes, UTF_8) replaces malformed input, and the
// iteration order of the Scala 2.13 mutable.HashMap that holds the
// non-consecutive offset reports.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// javaFile is a path as java.io.File holds it on Unix: repeated slashes
// collapsed and a trailing slash removed. Its String is what DumpLogSegments
// prints in "Dumping <file>".
type javaFile struct{ path string }

func newJavaFile(pathname string) javaFile {
	var b strings.Builder
	b.Grow(len(pathname))
	var prev byte
	for i := 0; i < len(pathname); i++ {
		c := pathname[i]
		if c == '/' && prev == '/' {
			continue
		}
		b.WriteByte(c)
		prev = c
	}
	p := b.String()
	if len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return javaFile{path: p}
}

func (f javaFile) String() string { return f.path }

// Name is File.getName: what follows the last slash.
func (f javaFile) Name() string { return f.path[strings.LastIndexByte(f.path, '/')+1:] }

// AbsolutePath is File.getAbsolutePath: the path resolved against userDir
// by plain concatenation, with no cleaning of "." or "..".
func (f javaFile) AbsolutePath(userDir string) string {
	switch {
	case strings.HasPrefix(f.path, "/"):
		return f.path
	case f.path == "":
		return userDir
	case userDir == "/":
		return "/" + f.path
	default:
		return userDir + "/" + f.path
	}
}

// javaUserDir is the JVM's user.dir: the working directory as getcwd(3)
// reports it, symbolic links resolved (os.Getwd may return $PWD instead).
func javaUserDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return wd, nil
}

// javaSplit is Java's s.split(sep) for a one-character separator: an input
// without the separator gives itself (even when empty), and trailing empty
// strings are dropped, so "a,b," gives [a b] and "," gives nothing.
func javaSplit(s string, sep string) []string {
	parts := strings.Split(s, sep)
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// appendJavaString appends b as Java's new String(b, UTF_8) decodes it and
// a UTF-8 PrintStream prints it: valid UTF-8 is copied unchanged and each
// malformed sequence becomes one U+FFFD. Where a malformed sequence ends
// follows the JDK's decoder (String.decodeUTF8_UTF16 in JDK 17), which
// replaces each maximal subpart of an ill-formed sequence (Unicode 3.9,
// "U+FFFD substitution of maximal subparts") except for surrogates: an
// encoded surrogate ED A0..BF xx is one replacement where maximal subparts
// would give three.
func appendJavaString(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += javaMalformedLen(b[i:])
	}
	return dst
}

func isContinuation(c byte) bool { return c&0xc0 == 0x80 }

// javaMalformedLen returns how many bytes at the start of b, which starts
// with a byte that does not begin a valid UTF-8 sequence, the JDK replaces
// with one U+FFFD.
func javaMalformedLen(b []byte) int {
	b1 := b[0]
	switch {
	case b1 >= 0xe0 && b1 <= 0xef: // three-byte lead
		if len(b) >= 3 {
			b2, b3 := b[1], b[2]
			if (b1 == 0xe0 && b2&0xe0 == 0x80) || !isContinuation(b2) {
				return 1
			}
			if !isContinuation(b3) {
				return 2
			}
			return 3 // well formed but a surrogate: one replacement
		}
		if len(b) == 2 && ((b1 == 0xe0 && b[1]&0xe0 == 0x80) || !isContinuation(b[1])) {
			return 1
		}
		return len(b) // a truncated sequence at the end of the input
	case b1 >= 0xf0 && b1 <= 0xf4: // four-byte lead
		if len(b) < 2 {
			return 1
		}
		b2 := b[1]
		if (b1 == 0xf0 && (b2 < 0x90 || b2 > 0xbf)) || (b1 == 0xf4 && b2&0xf0 != 0x80) || !isContinuation(b2) {
			return 1
		}
		if len(b) < 3 || !isContinuation(b[2]) {
			return 2
		}
		return 3
	default: // a continuation byte, C0, C1, F5..FF, or a two-byte lead without its continuation
		return 1
	}
}

// javaStringHash is String.hashCode over the UTF-16 form of s.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// gapReport holds the non-consecutive offset pairs of one file.
type gapReport struct {
	path  string     // absolute path, the map key
	hash  int32      // Scala's improved hash of path
	pairs [][2]int64 // in order of discovery; printed newest first
}

// scalaGapMap stands for DumpLogSegments' nonConsecutivePairsForLogFilesMap,
// a Scala 2.13 mutable.HashMap[String, List[(Long, Long)]]: every pair is a
// put, and the reports print in the map's iteration order, which is by
// bucket (improved hash & (table length - 1)), then by improved hash
// within a bucket, then by insertion. The table starts at 16 slots, and a
// put doubles it first whenever size+1 reaches 0.75 of its length, even
// when the key is already present.
type scalaGapMap struct {
	tableLen  int
	threshold int
	reports   []*gapReport // in insertion order
	byPath    map[string]*gapReport
}

func newScalaGapMap() *scalaGapMap {
	return &scalaGapMap{tableLen: 16, threshold: 12, byPath: map[string]*gapReport{}}
}

func (m *scalaGapMap) put(path string, prev, next int64) {
	if len(m.reports)+1 >= m.threshold {
		m.tableLen *= 2
		m.threshold = m.tableLen * 3 / 4
	}
	r := m.byPath[path]
	if r == nil {
		h := javaStringHash(path)
		r = &gapReport{path: path, hash: h ^ int32(uint32(h)>>16)}
		m.byPath[path] = r
		m.reports = append(m.reports, r)
	}
	r.pairs = append(r.pairs, [2]int64{prev, next})
}

// ordered returns the reports in the order Scala's foreachEntry visits them.
func (m *scalaGapMap) ordered() []*gapReport {
	out := slices.Clone(m.reports)
	mask := int32(m.tableLen - 1)
	slices.SortStableFunc(out, func(a, b *gapReport) int {
		if ia, ib := a.hash&mask, b.hash&mask; ia != ib {
			return int(ia) - int(ib)
		}
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return out
}
