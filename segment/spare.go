package segment

import (
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// A Log keeps the files of its next segment ready: created, and their
// directory entries made durable, in the background under these names
// (which Kafka ignores). A roll starts writing to them as they are, with
// no creation, rename or sync under the append lock; the roll's flush renames them
// to the segment's names. A batch written to the new segment is durable
// once the file's data is synced, whether or not the rename has reached
// the disk: after a crash, Open names a spare .log holding batches by its
// first batch's base offset (its indexes are rebuilt: it is the last
// segment). So an acknowledgement never waits for a directory sync.
const (
	spareName          = "logstore.next-segment"
	spareIndexName     = "logstore.next-index"
	spareTimeIndexName = "logstore.next-timeindex"
)

// spare is the open files of the next segment.
type spare struct{ log, index, timeIndex vfs.File }

// spareNames are the spare files, in the order log, index, time index.
var spareNames = [...]string{spareName, spareIndexName, spareTimeIndexName}

// sparePipe hands a roll the next segment's files, made ahead, as etcd's
// filePipeline hands its WAL a preallocated file: one channel holding at
// most one spare, filled by one goroutine at a time and emptied by the
// roll. Open makes the first spare; each roll takes it (take, under the
// Log's lock, after the previous roll's flush has made it durable), and
// that roll's flush goroutine names the taken files after the new
// segment and makes the next spare (renew), then syncs the directory
// once for both. Making the spares in the flush rather than in a
// goroutine of their own keeps that to one directory sync per roll. A
// second one could add a journal commit for an acknowledgement's
// fdatasync to wait behind (BENCHMARKS.md, AppendDuringRoll, measures
// that wait); a separate goroutine was not measured.
//
// Who owns the spare: the pipe while it is in ready; the roll that took
// it, whose new segment it becomes; Close, which closes a spare still in
// ready and removes its names.
type sparePipe struct {
	fs    vfs.FS
	dir   string
	ready chan *spare // capacity 1: the next roll's files, durable once the flush that made them closes durable
}

// newSparePipe creates the first spare. The caller syncs the directory.
func newSparePipe(fsys vfs.FS, dir string) (*sparePipe, error) {
	p := &sparePipe{fs: fsys, dir: dir, ready: make(chan *spare, 1)}
	s, err := createSpare(fsys, dir)
	if err != nil {
		return nil, err
	}
	p.ready <- s
	return p, nil
}

// take returns the spare for a roll, or nil when there is none (the
// flush that was to make it failed, which poisons the log first). It
// never waits: the roll has waited for the previous flush's directory
// sync.
func (p *sparePipe) take() *spare {
	select {
	case s := <-p.ready:
		return s
	default:
		return nil
	}
}

// renew names the spare files the roll to base took after that segment,
// and makes the next spare, ready for the next roll once the caller has
// synced the directory. Only a roll's flush calls it, after the roll
// took the spare: the channel is empty.
func (p *sparePipe) renew(base int64) error {
	if err := nameSpare(p.fs, p.dir, base); err != nil {
		return err
	}
	s, err := createSpare(p.fs, p.dir)
	if err != nil {
		return err
	}
	p.ready <- s
	return nil
}

// close closes the files of a spare no roll took. The caller has waited
// for every flush, so nothing fills the channel any more.
func (p *sparePipe) close() error {
	if s := p.take(); s != nil {
		return s.close()
	}
	return nil
}

// createSpare creates the empty files of the next segment. The caller
// syncs the directory.
func createSpare(fsys vfs.FS, dir string) (*spare, error) {
	files := make([]vfs.File, 3)
	for i, n := range spareNames {
		f, err := fsys.OpenFile(filepath.Join(dir, n), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			for _, f := range files[:i] {
				f.Close()
			}
			return nil, err
		}
		files[i] = f
	}
	return &spare{files[0], files[1], files[2]}, nil
}

// nameSpare renames the spare files that became the segment at base.
func nameSpare(fsys vfs.FS, dir string, base int64) error {
	for i, suffix := range [3]string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := fsys.Rename(filepath.Join(dir, spareNames[i]), fileName(dir, base, suffix)); err != nil {
			return err
		}
	}
	return nil
}

func (s *spare) close() error {
	return errors.Join(s.log.Close(), s.index.Close(), s.timeIndex.Close())
}

// removeSpare removes whatever spare files are in dir. The caller syncs
// the directory if it must.
func removeSpare(fsys vfs.FS, dir string) error {
	for _, n := range spareNames {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// adoptSpare gives a spare that holds batches (a crash came before the
// rename that made it a segment reached the disk) its segment name, from
// its first batch's base offset, and returns that base offset; an empty
// spare, or one whose first batch header was never written whole (so
// nothing in it was acknowledged), is removed and -1 returned.
func adoptSpare(fsys vfs.FS, dir string, segs map[int64]bool) (int64, error) {
	name := filepath.Join(dir, spareName)
	base, ok, err := spareBase(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		ok, err = false, nil
	}
	if err != nil {
		return -1, err
	}
	if ok {
		if err := planSpare(name, base, segs); err != nil {
			return -1, err
		}
		// Its indexes go with the other spares: the scan rebuilds them.
		if err := fsys.Rename(name, fileName(dir, base, logSuffix)); err != nil {
			return -1, err
		}
	} else {
		base = -1
	}
	return base, removeSpare(fsys, dir)
}

// spareBase reads the first batch header of the spare file name: its
// base offset, or false when the spare does not hold a whole v2 batch
// header (then nothing in it was acknowledged). The batch itself is
// checked later, as the last segment's are, by the recovery scan.
func spareBase(fsys vfs.FS, name string) (int64, bool, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, false, err
	}
	hdr := make([]byte, recordbatch.HeaderSize)
	n, rerr := f.ReadAt(hdr, 0)
	if err := f.Close(); err != nil {
		return 0, false, err
	}
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		return 0, false, rerr
	}
	// Kafka's v2 layout: base offset at byte 0, magic at byte 16.
	if n < recordbatch.HeaderSize || hdr[16] != 2 {
		return 0, false, nil
	}
	return int64(binary.BigEndian.Uint64(hdr)), true, nil
}
