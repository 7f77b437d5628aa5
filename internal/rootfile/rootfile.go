// Package rootfile keeps one of the small files at a store's root that
// a serve process reads and that a command (or serve itself) changes
// while it runs: users.json, acls.json.
//
// A change replaces the file whole: the new bytes go to NAME.tmp, which
// is fsynced and renamed over NAME, and the directory is fsynced
// (fileutil.WriteFileDurably), under a flock of NAME.lock, so that two
// writers, in one process or two, do not lose each other's change; each
// reads the file again under the lock before it changes it. A reader
// sees the old file or the new one, never a part, and reads it again
// when its size or modification time is not what it read last.
package rootfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/logstore/logstore/internal/fileutil"
)

// lockTimeout bounds how long Update waits for another writer.
const lockTimeout = 30 * time.Second

// Codec is how a file's bytes are a value: Decode (path names the file
// in its errors) checks everything a value must be, Empty is the value
// of a file that does not exist, MaxBytes bounds what a read takes in.
type Codec[T any] struct {
	Decode   func(path string, data []byte) (T, error)
	Encode   func(T) ([]byte, error)
	Empty    func() T
	MaxBytes int64
	// Corrupt is wrapped by the error of a file larger than MaxBytes.
	Corrupt error
}

// File is one root file and the value last read from it.
type File[T any] struct {
	path  string
	codec Codec[T]

	mu     sync.Mutex
	val    T
	loaded bool
	stamp  stamp  // what the file was when val was read
	gen    uint64 // counts the times val was replaced
}

type stamp struct {
	size int64
	mod  time.Time
	ok   bool
}

// Open reads the file at path (none is codec.Empty).
func Open[T any](path string, codec Codec[T]) (*File[T], error) {
	f := &File[T]{path: path, codec: codec}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file's path.
func (f *File[T]) Path() string { return f.path }

func (f *File[T]) statFile() stamp {
	fi, err := os.Stat(f.path)
	if err != nil {
		return stamp{}
	}
	return stamp{size: fi.Size(), mod: fi.ModTime(), ok: true}
}

// reload reads the file again when it changed; f.mu is held or f is not
// yet shared.
func (f *File[T]) reload() error {
	st := f.statFile()
	if st == f.stamp && f.loaded {
		return nil
	}
	v, err := f.read()
	if err != nil {
		return err
	}
	f.val, f.stamp, f.loaded = v, st, true
	f.gen++
	return nil
}

func (f *File[T]) read() (T, error) {
	var zero T
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f.codec.Empty(), nil
	}
	if err != nil {
		return zero, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return zero, err
	}
	if fi.Size() > f.codec.MaxBytes {
		return zero, fmt.Errorf("%s: %w: %d bytes, more than the file may hold (%d)", f.path, f.codec.Corrupt, fi.Size(), f.codec.MaxBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := fh.ReadAt(data, 0); err != nil {
		return zero, fmt.Errorf("%s: %w", f.path, err)
	}
	return f.codec.Decode(f.path, data)
}

// Current returns the value, read again if the file changed, and its
// generation, which changes with it. A file that changed and does not
// read keeps the value read before, and err says why. The value is
// shared: the caller does not change it.
func (f *File[T]) Current() (v T, gen uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err = f.reload()
	return f.val, f.gen, err
}

// Fresh is Current, but a file that does not read is an error.
func (f *File[T]) Fresh() (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reload(); err != nil {
		var zero T
		return zero, err
	}
	return f.val, nil
}

// Update changes the file with fn, which gets the value as the file has
// it (read again under the lock: fn's own, to change) and returns the
// new one; it is checked as a read checks it, then written durably
// before Update returns. A file that does not read is not changed.
func (f *File[T]) Update(ctx context.Context, fn func(T) (T, error)) error {
	lock, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := fileutil.Flock(ctx, lock, true, lockTimeout); err != nil {
		return fmt.Errorf("%s: %w", lock.Name(), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.read()
	if err != nil {
		return err
	}
	if v, err = fn(v); err != nil {
		return err
	}
	data, err := f.codec.Encode(v)
	if err != nil {
		return err
	}
	if v, err = f.codec.Decode(f.path, data); err != nil {
		return err
	}
	if err := fileutil.WriteFileDurably(f.path, data, 0o600); err != nil {
		return err
	}
	f.val, f.stamp, f.loaded = v, f.statFile(), true
	f.gen++
	return nil
}

// DecodeJSON decodes a root file's JSON into v, refusing fields v does
// not have; its error names path and wraps corrupt.
func DecodeJSON(path string, data []byte, v any, corrupt error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w: %w", path, corrupt, err)
	}
	return nil
}
