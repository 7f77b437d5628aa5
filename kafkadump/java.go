package kafkadump

// Java and Scala behaviour that kafka-dump-log.sh's output depends on,
// reproduced so that Dump prints the same bytes: how java.io.File prints
// and resolves a path, how String.split drops trailing empty strings, how
// new String(bytes, UTF_8) replaces malformed input, and the iteration
// order of the Scala 2.13 mutable.HashMaps that hold the reports printed
// after all files.

import (
	"encoding/binary"
	"fmt"
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

// pathReport holds the pairs Kafka reports for one file.
type pathReport struct {
	path  string   // absolute path, the map key
	hash  int32    // Scala's improved hash of path
	pairs pairList // in order of discovery
}

// reportPairsInMemory bounds the pairs a report keeps in memory. Kafka
// keeps every pair until all files are dumped, and a compacted segment
// can have a gap at nearly every record; beyond this bound the older
// pairs go to a temporary file, so memory stays flat. A variable for
// tests.
var reportPairsInMemory = 1 << 16

// pairList is a list of pairs that spills to a temporary file.
type pairList struct {
	tail    [][2]int64 // the newest pairs
	spill   *os.File   // the older ones, 16 bytes each, oldest first
	spilled int64      // pairs in spill
	remove  bool       // spill still has a name to remove
	buf     []byte     // encoding and decoding spilled pairs
}

func (l *pairList) add(a, b int64) {
	if len(l.tail) >= reportPairsInMemory {
		// If the file cannot be written, the pairs stay in memory: the
		// report is still right.
		_ = l.flush()
	}
	l.tail = append(l.tail, [2]int64{a, b})
}

func (l *pairList) flush() error {
	if l.spill == nil {
		f, err := os.CreateTemp("", "logstore-dump-*.pairs")
		if err != nil {
			return err
		}
		l.spill = f
		// Unlinked while open where the OS allows it, so nothing is left
		// behind even if the process dies.
		l.remove = os.Remove(f.Name()) != nil
	}
	buf := l.buf[:0]
	for _, p := range l.tail {
		buf = binary.BigEndian.AppendUint64(buf, uint64(p[0]))
		buf = binary.BigEndian.AppendUint64(buf, uint64(p[1]))
	}
	l.buf = buf
	if _, err := l.spill.WriteAt(buf, 16*l.spilled); err != nil {
		return err
	}
	l.spilled += int64(len(l.tail))
	l.tail = l.tail[:0]
	return nil
}

// len is the number of pairs.
func (l *pairList) len() int64 { return l.spilled + int64(len(l.tail)) }

// each calls fn for every pair, oldest first, or newest first if reverse,
// reading what was spilled back in chunks.
func (l *pairList) each(reverse bool, fn func(a, b int64)) error {
	const chunk = 4096 // pairs
	readSpilled := func(from, n int64) error {
		l.buf = slices.Grow(l.buf[:0], int(16*n))[:16*n]
		buf := l.buf
		if _, err := l.spill.ReadAt(buf, 16*from); err != nil {
			return fmt.Errorf("reading back the report pairs: %w", err)
		}
		for i := range n {
			j := i
			if reverse {
				j = n - 1 - i
			}
			fn(int64(binary.BigEndian.Uint64(buf[16*j:])), int64(binary.BigEndian.Uint64(buf[16*j+8:])))
		}
		return nil
	}
	if reverse {
		for i := len(l.tail) - 1; i >= 0; i-- {
			fn(l.tail[i][0], l.tail[i][1])
		}
		for end := l.spilled; end > 0; end -= chunk {
			from := max(0, end-chunk)
			if err := readSpilled(from, end-from); err != nil {
				return err
			}
		}
		return nil
	}
	for from := int64(0); from < l.spilled; from += chunk {
		if err := readSpilled(from, min(chunk, l.spilled-from)); err != nil {
			return err
		}
	}
	for _, p := range l.tail {
		fn(p[0], p[1])
	}
	return nil
}

// close drops the temporary file.
func (l *pairList) close() {
	if l.spill == nil {
		return
	}
	_ = l.spill.Close() // read only from now on; nothing to lose
	if l.remove {
		_ = os.Remove(l.spill.Name())
	}
	l.spill = nil
}

// scalaReportMap stands for the maps in which DumpLogSegments keeps what
// it reports after all files, each a Scala 2.13 mutable.HashMap keyed by
// absolute path: nonConsecutivePairsForLogFilesMap and
// misMatchesForIndexFilesMap, whose every pair is a put of a longer list,
// and the three maps of TimeIndexDumpErrors, where only the first pair of
// a file is a put (later ones are appended to the buffer already in the
// map). The reports print in the map's iteration order, which is by
// bucket (improved hash & (table length - 1)), then by improved hash
// within a bucket, then by insertion. The table starts at 16 slots, and a
// put doubles it first whenever size+1 reaches 0.75 of its length, even
// when the key is already present.
type scalaReportMap struct {
	tableLen  int
	threshold int
	reports   []*pathReport // in insertion order
	byPath    map[string]*pathReport
}

func newScalaReportMap() *scalaReportMap {
	return &scalaReportMap{tableLen: 16, threshold: 12, byPath: map[string]*pathReport{}}
}

// put adds a pair to path's list with a map put, as the log and index
// dumps do.
func (m *scalaReportMap) put(path string, a, b int64) {
	m.grow()
	m.report(path).pairs.add(a, b)
}

// add adds a pair to path's list, with a map put only for its first pair,
// as TimeIndexDumpErrors does.
func (m *scalaReportMap) add(path string, a, b int64) {
	if m.byPath[path] == nil {
		m.grow()
	}
	m.report(path).pairs.add(a, b)
}

// close drops what the reports spilled to disk.
func (m *scalaReportMap) close() {
	for _, r := range m.reports {
		r.pairs.close()
	}
}

// grow is the start of HashMap.put: the table doubles when one more key
// would reach the load factor.
func (m *scalaReportMap) grow() {
	if len(m.reports)+1 >= m.threshold {
		m.tableLen *= 2
		m.threshold = m.tableLen * 3 / 4
	}
}

func (m *scalaReportMap) report(path string) *pathReport {
	r := m.byPath[path]
	if r == nil {
		h := javaStringHash(path)
		r = &pathReport{path: path, hash: h ^ int32(uint32(h)>>16)}
		m.byPath[path] = r
		m.reports = append(m.reports, r)
	}
	return r
}

// ordered returns the reports in the order Scala's foreachEntry visits them.
func (m *scalaReportMap) ordered() []*pathReport {
	out := slices.Clone(m.reports)
	mask := int32(m.tableLen - 1)
	slices.SortStableFunc(out, func(a, b *pathReport) int {
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
