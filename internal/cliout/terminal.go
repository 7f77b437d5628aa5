package cliout

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a character device, as a terminal is
// (so is /dev/null, where progress does no harm). golang.org/x/term is
// not a dependency of this module.
func IsTerminal(w io.Writer) bool {
	_, ok := charDevice(w)
	return ok
}

// ProgressWriter returns stderr when a progress line belongs there:
// stderr is a terminal and stdout is not that same terminal (there the
// output itself shows progress, and a redirected stderr stays clean).
// Else it returns nil.
func ProgressWriter(stdout, stderr io.Writer) io.Writer {
	errInfo, ok := charDevice(stderr)
	if !ok {
		return nil
	}
	if outInfo, ok := charDevice(stdout); ok && os.SameFile(outInfo, errInfo) {
		return nil
	}
	return stderr
}

func charDevice(w io.Writer) (os.FileInfo, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return nil, false
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil, false
	}
	return info, true
}
