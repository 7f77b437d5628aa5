package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cutInfix follows "<segment>.log" in the name of a file that keeps
// bytes recovery cut off that segment (see the package doc): nothing a
// disk held is thrown away unseen, as etcd keeps a torn WAL file's copy
// as .broken.
const cutInfix = ".cut-"

// cutFileName is the name of the nth file (from 0) keeping bytes cut at
// pos from the segment whose .log is logName.
func cutFileName(logName string, pos int64, n int) string {
	name := logName + cutInfix + strconv.FormatInt(pos, 10)
	if n > 0 {
		name += "." + strconv.Itoa(n)
	}
	return name
}

// IsCutFile says name (a base name) is a file that keeps bytes recovery
// cut off a segment, and returns the segment's base offset and the byte
// position of the cut.
func IsCutFile(name string) (base, pos int64, ok bool) {
	seg, rest, found := strings.Cut(name, cutInfix)
	if !found {
		return 0, 0, false
	}
	if base, ok = parseSegmentName(seg, logSuffix); !ok {
		return 0, 0, false
	}
	digits, n, _ := strings.Cut(rest, ".")
	pos, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || pos < 0 || digits != strconv.FormatInt(pos, 10) {
		return 0, 0, false
	}
	if n != "" {
		if k, err := strconv.Atoi(n); err != nil || k < 1 || n != strconv.Itoa(k) {
			return 0, 0, false
		}
	}
	return base, pos, true
}

// cutCopyChunk bounds the buffer that copies cut bytes.
const cutCopyChunk = 1 << 20

// keepCut copies bytes [pos, end) of the segment's log to a cut file and
// makes it and its directory entry durable, so that the caller may then
// truncate the log at pos. It is idempotent: an open that a crash
// interrupted before the log was truncated (or before the truncation was
// durable) left the same bytes, or a prefix of them, under the same name,
// and the next open writes that file again.
func (s *segment) keepCut(pos, end int64) (string, error) {
	for n := 0; ; n++ {
		name := cutFileName(s.logName, pos, n)
		ok, err := s.cutFileReusable(name, pos, end)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if err := s.writeCut(name, pos, end); err != nil {
			return "", err
		}
		return name, s.fs.SyncDir(s.dir)
	}
}

// cutFileReusable says name does not exist, or holds a prefix of the
// log's bytes from pos to end (what an interrupted keepCut left).
func (s *segment) cutFileReusable(name string, pos, end int64) (bool, error) {
	f, err := s.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return false, err
	}
	if size > end-pos {
		return false, nil
	}
	a := make([]byte, min(size, cutCopyChunk))
	b := make([]byte, len(a))
	for off := int64(0); off < size; off += int64(len(a)) {
		n := int(min(int64(len(a)), size-off))
		if _, err := f.ReadAt(a[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		if _, err := s.log.ReadAt(b[:n], pos+off); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		if string(a[:n]) != string(b[:n]) {
			return false, nil
		}
	}
	return true, nil
}

// writeCut writes the log's bytes from pos to end to name, and syncs it.
func (s *segment) writeCut(name string, pos, end int64) error {
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, min(end-pos, cutCopyChunk))
	for off := int64(0); off < end-pos; off += int64(len(buf)) {
		n := int(min(int64(len(buf)), end-pos-off))
		if _, err := s.log.ReadAt(buf[:n], pos+off); err != nil && !errors.Is(err, io.EOF) {
			return errors.Join(err, f.Close())
		}
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// keepSegment sets aside the whole segment at base, whose batches a cut
// in the segment before it left without a place in the log: its .log is
// renamed to a free cut-file name (position 0) and its indexes, derived
// data, are removed. The caller syncs the directory.
func keepSegment(cfg *Config, dir string, base int64) (string, error) {
	s := newSegment(cfg, dir, base)
	for n := 0; ; n++ {
		name := cutFileName(s.logName, 0, n)
		_, err := cfg.FS.Lstat(name)
		if err == nil {
			continue // the name is taken
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err := cfg.FS.Rename(s.logName, name); err != nil {
			return "", fmt.Errorf("logstore/segment: keeping %s: %w", filepath.Base(s.logName), err)
		}
		// The .txnindex goes too: a later segment may start at this base.
		for _, idx := range []string{s.index.name, s.timeIndex.name, s.txn.name} {
			if err := cfg.FS.Remove(idx); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		return name, nil
	}
}
