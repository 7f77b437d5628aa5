package crashtest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/logstore/logstore/segment"
)

// CheckNothingThrownAway compares a crash image's files before the open
// that recovered it with after: every byte of a segment's .log is still
// in the log or in a cut file beside it (<segment>.log.cut-<position>,
// the whole of a deleted segment at position 0). The exceptions are what
// was never the log's: segments wholly below the log start (retention
// had let them go) and spare files without a whole batch header.
func CheckNothingThrownAway(before, after map[string][]byte, logStart int64) error {
	cuts := map[string][][]byte{} // by the .log's path: the cut files' bytes
	for name, data := range after {
		if _, _, ok := segment.IsCutFile(filepath.Base(name)); ok {
			log, _, _ := strings.Cut(name, ".cut-")
			cuts[log] = append(cuts[log], data)
		}
	}
	for name, old := range before {
		base, ok := strings.CutSuffix(filepath.Base(name), ".log")
		if !ok {
			continue
		}
		off, err := strconv.ParseInt(base, 10, 64)
		if err != nil || len(base) != 20 {
			continue
		}
		now, kept := after[name]
		if kept && bytes.Equal(now, old) {
			continue
		}
		if !kept && off < logStart {
			continue // below the log start: retention's to delete
		}
		if kept && !bytes.HasPrefix(old, now) {
			return fmt.Errorf("%s: recovery changed bytes it kept (%d bytes, were %d)", name, len(now), len(old))
		}
		lost := old[len(now):]
		found := false
		for _, c := range cuts[name] {
			found = found || bytes.Equal(c, lost)
		}
		if !found {
			return fmt.Errorf("%s: recovery cut %d bytes at %d and no cut file holds them", name, len(lost), len(now))
		}
	}
	return nil
}
