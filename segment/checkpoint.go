package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// checkpointName is the file in a partition directory where a Log keeps
// what it must know at the next open. Kafka ignores files it does not
// know, so the directory stays readable by Kafka's tools.
const checkpointName = "logstore.checkpoint"

// CheckpointName is the checkpoint's file name in a partition directory:
// a directory with one has been opened as a Log.
const CheckpointName = checkpointName

// checkpoint is the content of checkpointName:
//
//	logstore-checkpoint 1
//	log-start-offset <n>
//	recovery-point <n>
//	clean-shutdown <true|false>
//	crc32c <8 hex digits of CRC-32C over the lines above>
//
// It is replaced atomically (temporary file, fsync, rename, directory fsync).
type checkpoint struct {
	logStart      int64 // offsets below it are gone (retention, DeleteRecordsBefore)
	recoveryPoint int64 // every byte below this offset is durable
	clean         bool  // written by Close; cleared as the log opens
}

const checkpointVersion = 1

func (c checkpoint) marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "logstore-checkpoint %d\nlog-start-offset %d\nrecovery-point %d\nclean-shutdown %t\n",
		checkpointVersion, c.logStart, c.recoveryPoint, c.clean)
	fmt.Fprintf(&b, "crc32c %08x\n", recordbatch.Checksum(b.Bytes()))
	return b.Bytes()
}

// errBadCheckpoint marks a checkpoint that cannot be read. It never leaves
// the package as an error: Open keeps it in RecoveryReport.CheckpointError
// and Verify in a note, which say where; so it has no package prefix.
var errBadCheckpoint = errors.New("unreadable checkpoint")

func unmarshalCheckpoint(data []byte) (checkpoint, error) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 6 || lines[5] != "" {
		return checkpoint{}, fmt.Errorf("%w: %d lines", errBadCheckpoint, len(lines)-1)
	}
	body := strings.Join(lines[:4], "\n") + "\n"
	var sum uint32
	if _, err := fmt.Sscanf(lines[4], "crc32c %08x", &sum); err != nil || sum != recordbatch.Checksum([]byte(body)) {
		return checkpoint{}, fmt.Errorf("%w: checksum mismatch", errBadCheckpoint)
	}
	field := func(i int, key string) (string, error) {
		k, v, ok := strings.Cut(lines[i], " ")
		if !ok || k != key {
			return "", fmt.Errorf("%w: line %d is not %q", errBadCheckpoint, i+1, key)
		}
		return v, nil
	}
	var c checkpoint
	v, err := field(0, "logstore-checkpoint")
	if err == nil && v != strconv.Itoa(checkpointVersion) {
		err = fmt.Errorf("%w: version %s, this build reads %d", errBadCheckpoint, v, checkpointVersion)
	}
	for i, dst := range []*int64{&c.logStart, &c.recoveryPoint} {
		if err != nil {
			break
		}
		key := []string{"log-start-offset", "recovery-point"}[i]
		if v, err = field(i+1, key); err == nil {
			*dst, err = strconv.ParseInt(v, 10, 64)
		}
	}
	if err == nil {
		if v, err = field(3, "clean-shutdown"); err == nil {
			c.clean, err = strconv.ParseBool(v)
		}
	}
	if err != nil {
		return checkpoint{}, err
	}
	return c, nil
}

// readCheckpoint returns the checkpoint in dir; ok is false when there is
// none.
func readCheckpoint(fsys vfs.FS, dir string) (c checkpoint, ok bool, err error) {
	f, err := fsys.OpenFile(filepath.Join(dir, checkpointName), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return checkpoint{}, false, err
	}
	if size > 4096 {
		return checkpoint{}, false, fmt.Errorf("%w: %d bytes", errBadCheckpoint, size)
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return checkpoint{}, false, err
	}
	c, err = unmarshalCheckpoint(data)
	return c, err == nil, err
}

// writeCheckpoint replaces the checkpoint in dir durably.
func writeCheckpoint(fsys vfs.FS, dir string, c checkpoint) error {
	name := filepath.Join(dir, checkpointName)
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(c.marshal(), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("logstore/segment: writing %s: %w", name, err)
	}
	return nil
}
