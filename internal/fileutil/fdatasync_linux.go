package fileutil

import (
	"io/fs"
	"os"
	"syscall"
)

// Fdatasync flushes the file's data and the metadata needed to read it
// back (its size), not its timestamps.
func Fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
}
