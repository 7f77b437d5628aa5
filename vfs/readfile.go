package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is ReadFile's error for a file longer than its limit.
var ErrTooLarge = errors.New("file larger than the limit read")

// ReadFile reads the whole of name from fsys, refusing, before it
// allocates, a file longer than limit bytes (an error wrapping
// ErrTooLarge that gives both lengths). A missing file is an error
// matching fs.ErrNotExist, as OpenFile's.
func ReadFile(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d", name, ErrTooLarge, size, limit)
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(data)) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}
