//go:build !linux

package txncoord

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
