//go:build !linux

package fileutil

import "os"

// Fdatasync falls back to a full fsync where fdatasync is not available.
func Fdatasync(f *os.File) error { return f.Sync() }
