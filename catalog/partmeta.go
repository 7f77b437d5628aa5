package catalog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/logstore/logstore/vfs"
)

// MetadataFileName is Kafka's per-partition file that names the topic id.
const MetadataFileName = "partition.metadata"

// metadataTempName is where a new partition.metadata is written before
// it is renamed over the old one (Kafka's name too).
const metadataTempName = MetadataFileName + ".tmp"

// maxMetadataBytes bounds what is read of a partition.metadata file.
// Kafka writes 43 bytes; anything over this is not one.
const maxMetadataBytes = 1024

// metadataVersion is the version Kafka writes and this package writes.
const metadataVersion = 0

// EncodePartitionMetadata returns the bytes of a partition.metadata file
// naming id, exactly as Kafka writes them (PartitionMetadata.encode):
// "version: 0\ntopic_id: <id>", with no newline at the end.
func EncodePartitionMetadata(id TopicID) []byte {
	return []byte("version: " + strconv.Itoa(metadataVersion) + "\ntopic_id: " + id.String())
}

// DecodePartitionMetadata decodes the bytes of a partition.metadata file
// (file names it in errors) as Kafka's PartitionMetadataReadBuffer does:
// exactly two lines (a line ends at "\n", "\r" or "\r\n"; the last may
// end without one), "version:" then whitespace then an integer >= 0
// (Kafka accepts a newer version, whose second line is the same), and
// "topic_id:" then whitespace then the id as ParseTopicID takes it, not
// the zero id. Unlike Kafka it also checks the two keys' names. It never
// panics; a failure is a *MetadataError with the byte offset where it
// stopped. data longer than 1 KiB is refused.
func DecodePartitionMetadata(file string, data []byte) (TopicID, error) {
	bad := func(off int, format string, args ...any) (TopicID, error) {
		return TopicID{}, &MetadataError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) > maxMetadataBytes {
		return bad(maxMetadataBytes, "the file is %d bytes, more than %d", len(data), maxMetadataBytes)
	}
	off := 0
	field := func(key string) (value string, start int, err error) {
		start = off
		line, next, ok := cutLine(data, off)
		if !ok {
			_, err = bad(off, "want the line %q, found the end of the file", key+": ...")
			return
		}
		k := len(key) + 1
		if len(line) < k || string(line[:k]) != key+":" {
			_, err = bad(off, "want a line starting %q, found %q", key+":", truncate(line))
			return
		}
		i := k
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == k {
			_, err = bad(off+k, "want whitespace after %q", key+":")
			return
		}
		value, start = string(line[i:]), off+i
		for j := i; j < len(line); j++ {
			if line[j] == ':' {
				_, err = bad(off+j, "a second ':' in the %s line", key)
				return
			}
		}
		off = next
		return
	}
	v, at, err := field("version")
	if err != nil {
		return TopicID{}, err
	}
	version, perr := strconv.ParseInt(v, 10, 32)
	if perr != nil {
		return bad(at, "version %q is not an integer", truncate([]byte(v)))
	}
	if version < metadataVersion {
		return bad(at, "version %d is below %d", version, metadataVersion)
	}
	s, at, err := field("topic_id")
	if err != nil {
		return TopicID{}, err
	}
	id, perr := ParseTopicID(s)
	if perr != nil {
		return bad(at, "%v", perr)
	}
	if off != len(data) {
		return bad(off, "%d bytes follow the topic_id line", len(data)-off)
	}
	return id, nil
}

// cutLine returns the line of data at off without its terminator, and
// where the next one starts; ok is false at the end of data.
func cutLine(data []byte, off int) (line []byte, next int, ok bool) {
	if off >= len(data) {
		return nil, off, false
	}
	for i := off; i < len(data); i++ {
		switch data[i] {
		case '\n':
			return data[off:i], i + 1, true
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return data[off:i], i + 2, true
			}
			return data[off:i], i + 1, true
		}
	}
	return data[off:], len(data), true
}

// isSpace is Java's regex \s within a line: space, tab, vertical tab,
// form feed.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }

// truncate shortens b for an error message.
func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// ReadPartitionMetadata reads and decodes pdir/partition.metadata through
// fsys. A missing file is an error matching fs.ErrNotExist. The file's
// size is checked before anything is read or allocated.
func ReadPartitionMetadata(fsys vfs.FS, pdir string) (TopicID, error) {
	name := filepath.Join(pdir, MetadataFileName)
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return TopicID{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return TopicID{}, err
	}
	if size > maxMetadataBytes {
		return TopicID{}, &MetadataError{File: name, Offset: maxMetadataBytes, Reason: fmt.Sprintf("the file is %d bytes, more than %d", size, maxMetadataBytes)}
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(data)) {
		return TopicID{}, fmt.Errorf("read %s: %w", name, err)
	}
	return DecodePartitionMetadata(name, data)
}

// WritePartitionMetadata writes pdir/partition.metadata naming id,
// atomically and durably, through fsys: the bytes go to
// partition.metadata.tmp, which is synced, then renamed over
// partition.metadata, then pdir is synced. A crash leaves the old file or
// the new one, never a part of either. pdir must exist; syncing its
// parent (so that pdir itself survives) is the caller's.
func WritePartitionMetadata(fsys vfs.FS, pdir string, id TopicID) error {
	tmp := filepath.Join(pdir, metadataTempName)
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	data := EncodePartitionMetadata(id)
	if _, err := f.WriteAt(data, 0); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, filepath.Join(pdir, MetadataFileName)); err != nil {
		return err
	}
	return fsys.SyncDir(pdir)
}
