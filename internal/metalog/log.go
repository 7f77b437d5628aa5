package metalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/logstore/logstore/internal/fileutil"
)

// TmpSuffix is added to a file's name for the file a rewrite writes
// before it renames it over the file. One left by a crash is ignored,
// and replaced by the next rewrite.
const TmpSuffix = ".new"

// DefaultCompactBytes is Options.CompactBytes's default.
const DefaultCompactBytes = 1 << 20

// Options are a Log's settings beyond its format.
type Options struct {
	// CompactBytes: once the file is larger than this and twice the
	// size a rewrite would give it, a commit (through a Committer)
	// compacts it. 0 is DefaultCompactBytes.
	CompactBytes int64
	// Step, when set (by tests), is called at each step of writing a
	// new file ("tmp written", "tmp synced", "renamed", "dir synced")
	// and after a commit's append ("appended"), before its sync. A
	// non-nil error stops the write there, as a crash would.
	Step func(step string) error
}

func (o *Options) step(name string) error {
	if o.Step != nil {
		return o.Step(name)
	}
	return nil
}

// Put is one write of a commit: Val under Key, or, with Val empty, a
// tombstone (the key is deleted). With Prefix, every key that starts
// with Key (in the file, or put earlier in the same commit) is
// deleted: the commit holds a tombstone for each.
type Put struct {
	Key    string
	Val    []byte
	Prefix bool
}

// Log is a file open for appends: locked exclusively, with the state it
// holds as durable. Its methods are not safe for concurrent use (a
// Committer is its one writer).
type Log struct {
	format *Format
	opts   Options
	path   string
	f      *os.File
	size   int64 // the bytes written and synced
	meta   []byte
	live   map[string][]byte // key -> value, as durable
	// liveSize is the size compaction would give the file now.
	liveSize int64
	// failed, when set, is the error that left the file in a state this
	// Log does not know: every later commit fails with it.
	failed error
	// dirPending: a rename is not known durable yet (its directory sync
	// failed); it is retried before the next append.
	dirPending bool
	// lost: a commit failed, so the puts it carried are not in the
	// file, though the user may hold them (a lazy write's caller was
	// answered): the file is not known to hold every write. Set
	// whenever failed is.
	lost bool
}

// Create writes path anew holding meta and records (a rewrite: a new
// file, synced, renamed over path, the directory synced) and returns it
// open for appends. records is the Log's from then on: the caller no
// longer changes it.
func Create(path string, format *Format, meta []byte, records map[string][]byte, opts Options) (*Log, error) {
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = DefaultCompactBytes
	}
	if format.MetaSize > 0 && len(meta) != format.MetaSize {
		return nil, fmt.Errorf("a meta value of %d bytes, not %d", len(meta), format.MetaSize)
	}
	l := &Log{format: format, opts: opts, path: path, meta: meta, live: records}
	if l.live == nil {
		l.live = map[string][]byte{}
	}
	f, size, err := l.rewrite()
	var dse *dirSyncError
	if errors.As(err, &dse) {
		f.Close()
	}
	if err != nil {
		return nil, err
	}
	l.f, l.size, l.liveSize = f, size, size
	return l, nil
}

// Adopt makes f, the file at path as ReadLocked returned it (opened
// for writing, locked exclusively) and replayed to st, a Log that
// appends to it, without writing anything. It is for a file whose
// replay had no torn tail (st.Tail empty): appending after a torn tail
// would make it damage in the middle of the file, so such a file is
// written anew with Create. The Log owns f from then on.
func Adopt(f *os.File, path string, format *Format, st State, opts Options) (*Log, error) {
	if st.Tail != "" {
		return nil, fmt.Errorf("%s: a file with a torn tail (%s) is written anew, not appended to", path, st.Tail)
	}
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = DefaultCompactBytes
	}
	l := &Log{format: format, opts: opts, path: path, f: f, size: st.End, meta: st.Meta, live: st.Records}
	if l.live == nil {
		l.live = map[string][]byte{}
	}
	l.liveSize = l.imageSize()
	return l, nil
}

// imageSize is about the size of the file a rewrite would write now.
func (l *Log) imageSize() int64 {
	n := int64(HeaderSize)
	if l.format.MetaSize > 0 {
		n += FrameHeaderSize + 1 + int64(l.format.MetaSize)
	}
	var entries int64
	for k, v := range l.live {
		entries += int64(l.format.entrySize(k, v))
	}
	frames := (entries + compactFrameBytes - 1) / compactFrameBytes
	return n + entries + frames*(FrameHeaderSize+1)
}

// Path is the file's name.
func (l *Log) Path() string { return l.path }

// Meta is the meta value the file holds.
func (l *Log) Meta() []byte { return l.meta }

// Size is the bytes of the file written and synced.
func (l *Log) Size() int64 { return l.size }

// Get returns the value of key as durable (nil: none).
func (l *Log) Get(key string) []byte { return l.live[key] }

// Len is the number of keys the file holds.
func (l *Log) Len() int { return len(l.live) }

// rewrite writes a new file holding l's meta and live records, synced,
// and renames it over path (the old file, if any, goes away with the
// rename; the directory is synced after). It returns the new file,
// locked exclusively, and its size. A crash at any step leaves path as
// it was or the new file at path, both whole; a leftover tmp file is
// ignored and replaced by the next rewrite.
func (l *Log) rewrite() (*os.File, int64, error) {
	tmp := l.path + TmpSuffix
	img := l.format.Image(l.meta, l.live)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*os.File, int64, error) {
		f.Close()
		os.Remove(tmp)
		return nil, 0, err
	}
	if _, err := f.Write(img); err != nil {
		return fail(fmt.Errorf("write %s: %w", tmp, err))
	}
	if err := l.opts.step("tmp written"); err != nil {
		return fail(err)
	}
	if err := fileutil.Fdatasync(f); err != nil {
		return fail(fmt.Errorf("sync %s: %w", tmp, err))
	}
	if err := l.opts.step("tmp synced"); err != nil {
		return fail(err)
	}
	if err := lockFile(f, true, 0); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fail(err)
	}
	if err := l.opts.step("renamed"); err != nil {
		f.Close()
		return nil, 0, err
	}
	if err := fileutil.SyncDir(filepath.Dir(l.path)); err != nil {
		// The rename is done: path is this file, whose rename may not
		// be durable. The caller keeps it and syncs the directory again
		// before anything is appended.
		return f, int64(len(img)), &dirSyncError{err}
	}
	if err := l.opts.step("dir synced"); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, int64(len(img)), nil
}

// dirSyncError: rewrite renamed the new file into place but could not
// sync the directory.
type dirSyncError struct{ err error }

func (e *dirSyncError) Error() string { return e.err.Error() }
func (e *dirSyncError) Unwrap() error { return e.err }

// expand returns puts with each Prefix put replaced by a tombstone of
// every key it deletes: the keys of the file and those put before it
// in puts, in key order.
func (l *Log) expand(puts []Put) []Put {
	hasPrefix := false
	for _, p := range puts {
		hasPrefix = hasPrefix || p.Prefix
	}
	if !hasPrefix {
		return puts
	}
	out := make([]Put, 0, len(puts))
	present := map[string]bool{} // keys put (true) or deleted (false) so far
	for _, p := range puts {
		if !p.Prefix {
			out = append(out, p)
			present[p.Key] = len(p.Val) > 0
			continue
		}
		var gone []string
		for k := range l.live {
			if strings.HasPrefix(k, p.Key) {
				if on, seen := present[k]; !seen || on {
					gone = append(gone, k)
				}
			}
		}
		for k, on := range present {
			if on && strings.HasPrefix(k, p.Key) {
				if _, inFile := l.live[k]; !inFile {
					gone = append(gone, k)
				}
			}
		}
		slices.Sort(gone)
		for _, k := range gone {
			out = append(out, Put{Key: k})
			present[k] = false
		}
	}
	return out
}

// Commit appends one frame holding every put, in one write, and syncs
// the file once (fdatasync): the commit is whole or, torn by a crash,
// dropped whole at the next replay. A commit that deletes nothing and
// puts nothing (only Prefix puts that match no key) writes nothing. On
// a failed write or sync, the file is written anew from the state
// before puts (a rewrite), so it holds exactly what is durable; if that
// fails too, the Log fails every later commit.
func (l *Log) Commit(puts []Put) error {
	if l.failed != nil {
		return fmt.Errorf("an earlier failure left the file unknown: %w", l.failed)
	}
	puts = l.expand(puts)
	if len(puts) == 0 {
		return nil
	}
	if l.dirPending {
		if err := fileutil.SyncDir(filepath.Dir(l.path)); err != nil {
			l.lost = true
			return err
		}
		l.dirPending = false
	}
	payload := []byte{PayloadPuts}
	for _, p := range puts {
		if p.Key == "" || len(p.Key) > l.format.maxKey() {
			l.lost = true
			return fmt.Errorf("a key of %d bytes: keys are 1 to %d bytes", len(p.Key), l.format.maxKey())
		}
		payload = l.format.appendEntry(payload, p.Key, p.Val)
	}
	if len(payload) > MaxPayload {
		l.lost = true
		return fmt.Errorf("a commit of %d bytes is over the limit of %d", len(payload), MaxPayload)
	}
	buf := AppendFrame(make([]byte, 0, FrameHeaderSize+len(payload)), payload)
	_, err := l.f.WriteAt(buf, l.size)
	if err == nil {
		err = l.opts.step("appended")
	}
	if err == nil {
		if err = fileutil.Fdatasync(l.f); err != nil {
			err = fmt.Errorf("sync %s after appending at byte %d: %w", l.path, l.size, err)
		}
	} else {
		err = fmt.Errorf("append to %s at byte %d: %w", l.path, l.size, err)
	}
	if err != nil {
		l.lost = true
		if rerr := l.Compact(); rerr != nil {
			l.failed = errors.Join(err, rerr)
		}
		return err
	}
	l.size += int64(len(buf))
	for _, p := range puts {
		if old, ok := l.live[p.Key]; ok {
			l.liveSize -= int64(l.format.entrySize(p.Key, old))
		}
		if len(p.Val) == 0 {
			// A tombstone: a compaction drops it with the key.
			delete(l.live, p.Key)
			continue
		}
		l.live[p.Key] = p.Val
		l.liveSize += int64(l.format.entrySize(p.Key, p.Val))
	}
	return nil
}

// CompactDue reports whether the file has grown past its bound.
func (l *Log) CompactDue() bool {
	return l.size > l.opts.CompactBytes && l.size > 2*l.liveSize
}

// Compact writes the file anew with the live state only (a rewrite)
// and appends to the new file from then on. If it fails before the
// rename, the old file stays, whole, and is kept.
func (l *Log) Compact() error {
	f, size, err := l.rewrite()
	var dse *dirSyncError
	if errors.As(err, &dse) {
		l.dirPending = true
		err = nil
	}
	if err != nil {
		return err
	}
	l.f.Close() // the old file, no longer at path
	l.f, l.size, l.liveSize = f, size, size
	return nil
}

// MarkClosed appends the close frame and syncs it: the next replay
// knows every write was committed. After a failed commit it does
// nothing (the file is not known to hold them all).
func (l *Log) MarkClosed() error {
	if l.lost {
		return nil
	}
	buf := AppendFrame(nil, []byte{PayloadClosed})
	if _, err := l.f.WriteAt(buf, l.size); err != nil {
		return fmt.Errorf("append the close record to %s at byte %d: %w", l.path, l.size, err)
	}
	if err := fileutil.Fdatasync(l.f); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	l.size += int64(len(buf))
	return nil
}

// Close closes the file (and releases its lock).
func (l *Log) Close() error { return l.f.Close() }

// ReadLocked opens path, takes its lock (exclusive or shared), waiting
// at most timeout (then an error matching ErrLockTimeout), and reads it
// whole. A rewrite may rename a new file over path between the open and
// the lock: the lock is then on a file no longer at path, and it starts
// again. It returns the file, locked, and its bytes; whether the file
// is of a format is for the caller to check (Format.IsFile).
func ReadLocked(path string, exclusive bool, timeout time.Duration) (*os.File, []byte, error) {
	for {
		flag := os.O_RDONLY
		if exclusive {
			flag = os.O_RDWR
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return nil, nil, err
		}
		if err := lockFile(f, exclusive, timeout); err != nil {
			f.Close()
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		pi, err := os.Stat(path)
		if err != nil || !os.SameFile(fi, pi) {
			f.Close()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			continue
		}
		if fi.Size() > math.MaxInt32*4 {
			f.Close()
			return nil, nil, &DamagedError{File: path, Reason: fmt.Sprintf("%d bytes: far larger than a metadata file can grow", fi.Size())}
		}
		data := make([]byte, fi.Size())
		_, err = io.ReadFull(f, data)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		return f, data, nil
	}
}

// ErrLockTimeout: ReadLocked waited its timeout for the file's lock.
var ErrLockTimeout = errors.New("timed out waiting for the file lock")

// lockFile takes a flock on f, exclusive or shared (fileutil.Flock),
// trying until timeout has passed (once when timeout <= 0), then fails
// with an error wrapping ErrLockTimeout. bbolt takes the same lock on
// its files, so it excludes the previous format's readers and writers
// too.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	err := fileutil.Flock(context.Background(), f, exclusive, timeout)
	if errors.Is(err, fileutil.ErrLocked) {
		return fmt.Errorf("lock %s: %w", f.Name(), ErrLockTimeout)
	}
	return err
}
