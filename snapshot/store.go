package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/internal/fileutil"
	"github.com/logstore/logstore/producerstate"
)

// FileName is the bbolt file of a partition directory. Kafka ignores
// files it does not know, so the directory stays readable by its tools.
const FileName = "producer-snapshots.db"

// DefaultTimeout is how long Open waits for bbolt's lock on the file when
// Options.Timeout is 0. A partition is opened by one process at a time,
// so a held lock is an anomaly to report quickly, not to wait out.
const DefaultTimeout = 500 * time.Millisecond

// bucketName is the one bucket of the db. Part of the on-disk format.
var bucketName = []byte("producer-snapshots")

// Options tune Open.
type Options struct {
	// Timeout bounds the wait for bbolt's lock on the file (0:
	// DefaultTimeout). When it expires Open returns an error; a locked
	// file is never set aside.
	Timeout time.Duration

	// NoSync skips bbolt's fdatasync on commit. For tests only: a crash
	// may then lose or tear saved snapshots.
	NoSync bool

	// ReadOnly opens an existing db without writing anything: nothing is
	// created or set aside (Open fails instead), Save and the Delete
	// methods return ErrReadOnly, and LoadLatest reports corrupt
	// snapshots without deleting them. For inspection tools.
	ReadOnly bool
}

// OpenReport says what Open did besides opening.
type OpenReport struct {
	// Created: there was no usable db file, and an empty one was created
	// (and its directory synced).
	Created bool

	// Warning is set when an unusable db file was set aside: what, why,
	// and where it went. Log it.
	Warning string

	// SetAside is the path the unusable file was renamed to
	// (producer-snapshots.db.corrupt-<unix nanos>), and Cause why bbolt
	// could not use it. Both are empty when nothing was set aside.
	SetAside string
	Cause    error
}

// SkippedSnapshot is a stored snapshot LoadLatest could not use.
type SkippedSnapshot struct {
	Offset int64
	Err    error // a *DecodeError, wrapping ErrCorrupt or ErrVersion
}

// Store is the producer-snapshots.db of one partition. Its methods are
// safe for concurrent use.
type Store struct {
	db       *bolt.DB
	path     string
	readOnly bool

	mu     sync.Mutex
	closed bool
	poison error // set by a failed commit; returned by every later call
}

// Open opens the snapshot db in dir, creating it when absent. A file that
// bbolt cannot use is renamed aside and replaced by an empty db (see the
// package doc); the report says so. The error is for what a retry or an
// operator must fix: a lock held by another process past opts.Timeout,
// an OS error, a failed rename or directory sync.
func Open(dir string, opts Options) (*Store, OpenReport, error) {
	var rep OpenReport
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	path := filepath.Join(dir, FileName)
	info, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, rep, fmt.Errorf("logstore/snapshot: %w", err)
	}
	if exists && !info.Mode().IsRegular() {
		return nil, rep, fmt.Errorf("logstore/snapshot: %s is not a regular file", path)
	}

	if opts.ReadOnly {
		if !exists {
			return nil, rep, fmt.Errorf("logstore/snapshot: %w", &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist})
		}
		db, cause, err := openChecked(path, opts, true)
		if err == nil && cause != nil {
			err = fmt.Errorf("%w: %s cannot be used: %w", ErrCorrupt, path, cause)
		}
		if err != nil {
			return nil, rep, err
		}
		return &Store{db: db, path: path, readOnly: true}, rep, nil
	}

	// setAside renames the unusable file out of the way (never deleting
	// what an operator may want to look at) and says so in the report.
	setAside := func(cause error) error {
		aside := path + ".corrupt-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := os.Rename(path, aside); err != nil {
			return fmt.Errorf("logstore/snapshot: setting aside unusable %s (%v): %w", path, cause, err)
		}
		if err := fileutil.SyncDir(dir); err != nil {
			return fmt.Errorf("logstore/snapshot: after setting aside %s: %w", path, err)
		}
		rep.SetAside, rep.Cause = aside, cause
		rep.Warning = fmt.Sprintf("producer snapshot db %s is unusable (%v); set aside as %s; "+
			"starting with no snapshots, so producer state comes from a full replay of the log",
			path, cause, filepath.Base(aside))
		exists = false
		return nil
	}

	// A file with content is probed read-only first: bbolt's read-write
	// open reads the freelist page, which lies past the end of a truncated
	// file, and a fault inside bbolt.Open leaks its file handle.
	if exists && info.Size() > 0 {
		probe, cause, err := openChecked(path, opts, true)
		if err != nil {
			return nil, rep, err
		}
		if probe != nil {
			if err := probe.Close(); err != nil {
				return nil, rep, fmt.Errorf("logstore/snapshot: closing %s after checking it: %w", path, err)
			}
		}
		if cause != nil {
			if err := setAside(cause); err != nil {
				return nil, rep, err
			}
		}
	}

	db, err := openBolt(path, opts, false)
	if err != nil && exists && unusable(err) {
		// The probe passed but the freelist, which only a read-write open
		// reads, is damaged. The failed open's handle is lost (bbolt
		// panicked inside Open); its lock is on the file set aside.
		if err := setAside(err); err != nil {
			return nil, rep, err
		}
		db, err = openBolt(path, opts, false)
	}
	if err != nil {
		return nil, rep, fmt.Errorf("logstore/snapshot: opening %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	var hasBucket bool
	err = s.view(func(b *bolt.Bucket) error { hasBucket = b != nil; return nil })
	if err == nil && !hasBucket {
		err = guard(func() error {
			return db.Update(func(tx *bolt.Tx) error {
				_, err := tx.CreateBucketIfNotExists(bucketName)
				return err
			})
		})
	}
	// A new file (or one created empty and never initialised) becomes
	// durable with its directory entry.
	if err == nil && (!exists || info.Size() == 0) {
		rep.Created = true
		err = fileutil.SyncDir(dir)
	}
	if err != nil {
		_ = db.Close() // the open already failed; its error is the one to return
		return nil, rep, fmt.Errorf("logstore/snapshot: initialising %s: %w", path, err)
	}
	return s, rep, nil
}

// openChecked opens path with bbolt and checks that every page it will
// touch is inside the file and that the layout is this package's. cause
// is why the file is unusable (then db is nil); err is any other failure.
func openChecked(path string, opts Options, readOnly bool) (db *bolt.DB, cause, err error) {
	db, err = openBolt(path, opts, readOnly)
	if err != nil {
		if unusable(err) {
			return nil, err, nil
		}
		return nil, nil, fmt.Errorf("logstore/snapshot: opening %s: %w", path, err)
	}
	if cause = checkLayout(db, path); cause != nil {
		_ = db.Close() // the file is being given up on; its close error adds nothing
		return nil, cause, nil
	}
	return db, nil, nil
}

func openBolt(path string, opts Options, readOnly bool) (db *bolt.DB, err error) {
	err = guard(func() error {
		db, err = bolt.Open(path, 0o644, &bolt.Options{
			Timeout:  opts.Timeout,
			NoSync:   opts.NoSync,
			ReadOnly: readOnly,
		})
		return err
	})
	return db, err
}

// unusable says whether a bbolt open error means the file's content is
// bad (set it aside) rather than the environment (report it).
func unusable(err error) bool {
	return errors.Is(err, bolterrors.ErrInvalid) ||
		errors.Is(err, bolterrors.ErrVersionMismatch) ||
		errors.Is(err, bolterrors.ErrChecksum) ||
		errors.Is(err, ErrCorrupt) || // a recovered panic or fault
		// bbolt v1.5.0 has no sentinel for a file shorter than its two
		// meta pages; this text is tested by TestOpenTruncatedDB.
		strings.HasPrefix(err.Error(), "file size too small")
}

// checkLayout returns why db is not usable as a snapshot store, or nil:
// pages past the end of the file, a non-bucket under the bucket's name,
// keys that are not snapshot offsets.
func checkLayout(db *bolt.DB, path string) error {
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			info, err := os.Stat(path)
			if err != nil {
				return err
			}
			if tx.Size() > info.Size() {
				return fmt.Errorf("%w: truncated: the file is %d bytes, its pages reach byte %d", ErrCorrupt, info.Size(), tx.Size())
			}
			b := tx.Bucket(bucketName)
			if b == nil {
				if k, _ := tx.Cursor().Seek(bucketName); bytes.Equal(k, bucketName) {
					return fmt.Errorf("%w: %q is not a bucket", ErrCorrupt, bucketName)
				}
				return nil
			}
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if _, ok := keyOffset(k); !ok || v == nil {
					return fmt.Errorf("%w: key %x is not a snapshot offset", ErrCorrupt, k)
				}
			}
			return nil
		})
	})
}

// guard runs fn and turns a panic, or a memory fault on bbolt's mapping
// of a damaged file, into an error wrapping ErrCorrupt.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt failed on the file: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}

// Path returns the db file's path.
func (s *Store) Path() string { return s.path }

// Save stores snap under snap.Offset, replacing any snapshot there, in one
// transaction that is synced before Save returns.
func (s *Store) Save(snap producerstate.Snapshot) error {
	val, err := AppendValue(make([]byte, 0, 16+64*len(snap.Producers)), snap)
	if err != nil {
		return err
	}
	return s.update(func(b *bolt.Bucket) error {
		return b.Put(offsetKey(snap.Offset), val)
	})
}

// Load returns the snapshot stored at offset: ErrNotFound when there is
// none, a *DecodeError when it does not decode.
func (s *Store) Load(offset int64) (producerstate.Snapshot, error) {
	var snap producerstate.Snapshot
	err := s.view(func(b *bolt.Bucket) error {
		var v []byte
		if b != nil && offset >= 0 {
			v = b.Get(offsetKey(offset))
		}
		if v == nil {
			return fmt.Errorf("%w: %d", ErrNotFound, offset)
		}
		var err error
		snap, err = decodeValue(v, offset)
		return err
	})
	return snap, err
}

// LoadLatest returns the newest snapshot with an offset at or below
// maxOffset that decodes and passes its checks. Each newer one that does
// not is reported in skipped and deleted (unless the store is
// read-only), and the next older is tried. ok is false when none is
// left: the caller replays the whole log. err is for I/O and db
// failures, not for bad snapshots.
func (s *Store) LoadLatest(maxOffset int64) (snap producerstate.Snapshot, skipped []SkippedSnapshot, ok bool, err error) {
	skipped, ok, err = s.loadLatest(maxOffset, func(v []byte, off int64) error {
		got, err := decodeValue(v, off)
		if err == nil {
			snap = got
		}
		return err
	})
	return snap, skipped, ok, err
}

// LoadLatestState is LoadLatest followed by producerstate.FromSnapshot
// with cfg, in one step: it decodes the snapshot straight into the
// State, a few producers at a time, without ever holding the whole
// Snapshot: that saves its memory (about 2 MB for 10,000 producers with
// full windows, all of it fresh pages at startup) and the copy out of
// it. st is nil when ok is false. Like FromSnapshot, it expires nothing.
func (s *Store) LoadLatestState(maxOffset int64, cfg producerstate.Config) (st *producerstate.State, skipped []SkippedSnapshot, ok bool, err error) {
	skipped, ok, err = s.loadLatest(maxOffset, func(v []byte, off int64) error {
		got, err := decodeState(v, off, cfg)
		if err == nil {
			st = got
		}
		return err
	})
	return st, skipped, ok, err
}

// loadLatest runs decode on the newest stored value at or below
// maxOffset, then on each older one, until decode accepts one (ok) or
// none is left, reporting and deleting each refused (see LoadLatest).
func (s *Store) loadLatest(maxOffset int64, decode func(value []byte, offset int64) error) (skipped []SkippedSnapshot, ok bool, err error) {
	if maxOffset < 0 {
		return nil, false, s.state()
	}
	err = s.view(func(b *bolt.Bucket) error {
		if b == nil {
			return nil
		}
		c := b.Cursor()
		want := offsetKey(maxOffset)
		k, v := c.Seek(want)
		switch {
		case k == nil:
			k, v = c.Last()
		case !bytes.Equal(k, want):
			k, v = c.Prev()
		}
		for ; k != nil; k, v = c.Prev() {
			off, valid := keyOffset(k)
			if !valid {
				continue // not ours; Open refuses such files, so never reached
			}
			err := decode(v, off)
			if err == nil {
				ok = true
				return nil
			}
			skipped = append(skipped, SkippedSnapshot{Offset: off, Err: err})
		}
		return nil
	})
	if err != nil || len(skipped) == 0 || s.readOnly {
		return skipped, ok, err
	}
	// Delete what was skipped, unless a Save replaced it meanwhile.
	err = s.update(func(b *bolt.Bucket) error {
		n := 0
		for _, sk := range skipped {
			key := offsetKey(sk.Offset)
			if v := b.Get(key); v != nil {
				if _, err := decodeValue(v, sk.Offset); err == nil {
					continue
				}
				if err := b.Delete(key); err != nil {
					return err
				}
				n++
			}
		}
		if n == 0 {
			return errNoChange
		}
		return nil
	})
	return skipped, ok, err
}

// DeleteAbove deletes every snapshot with an offset above offset (all of
// them when offset is negative) and returns how many it deleted.
func (s *Store) DeleteAbove(offset int64) (int, error) {
	if offset == math.MaxInt64 {
		return 0, s.state()
	}
	return s.deleteRange(max(offset+1, 0), math.MaxInt64)
}

// DeleteBelow deletes every snapshot with an offset below offset and
// returns how many it deleted.
func (s *Store) DeleteBelow(offset int64) (int, error) {
	if offset <= 0 {
		return 0, s.state()
	}
	return s.deleteRange(0, offset-1)
}

// deleteRange deletes the snapshots in [lo, hi], both >= 0. When there
// are none, as at most opens and after most saves, it finds that out in
// a read transaction and never takes bbolt's writer lock (so it does not
// wait for a Save in progress, and commits nothing).
func (s *Store) deleteRange(lo, hi int64) (int, error) {
	keysIn := func(b *bolt.Bucket) [][]byte {
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(offsetKey(lo)); k != nil; k, _ = c.Next() {
			off, valid := keyOffset(k)
			if !valid || off > hi {
				break
			}
			keys = append(keys, bytes.Clone(k)) // k points into the mapping
		}
		return keys
	}
	if s.readOnly {
		return 0, ErrReadOnly
	}
	var any bool
	if err := s.view(func(b *bolt.Bucket) error {
		if b != nil {
			k, _ := b.Cursor().Seek(offsetKey(lo))
			off, valid := keyOffset(k)
			any = valid && off <= hi
		}
		return nil
	}); err != nil || !any {
		return 0, err
	}
	var n int
	err := s.update(func(b *bolt.Bucket) error {
		keys := keysIn(b) // again: a Save may have come in between
		if len(keys) == 0 {
			return errNoChange
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// List returns the offsets of every stored snapshot, ascending, whether or
// not they decode.
func (s *Store) List() ([]int64, error) {
	var offsets []int64
	err := s.view(func(b *bolt.Bucket) error {
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if off, valid := keyOffset(k); valid {
				offsets = append(offsets, off)
			}
		}
		return nil
	})
	return offsets, err
}

// Close closes the db. Later calls return ErrClosed; closing again does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("logstore/snapshot: closing %s: %w", s.path, err)
	}
	return nil
}

// state returns why the store cannot be used, or nil.
func (s *Store) state() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.poison
}

// view runs fn in a read transaction. b is nil only in a read-only
// store whose db has never been initialised by Open.
func (s *Store) view(fn func(b *bolt.Bucket) error) error {
	if err := s.state(); err != nil {
		return err
	}
	var fnErr error
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			fnErr = fn(tx.Bucket(bucketName))
			return fnErr
		})
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		return fnErr
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return ErrClosed
	default:
		return fmt.Errorf("logstore/snapshot: reading %s: %w", s.path, err)
	}
}

// errNoChange makes update roll back a transaction with nothing to
// write, so no commit (and no fsync) is paid for it.
var errNoChange = errors.New("no change")

// update runs fn in a write transaction and commits it. An error from fn
// rolls back and is returned as is; a failed commit poisons the store.
func (s *Store) update(fn func(b *bolt.Bucket) error) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if err := s.state(); err != nil {
		return err
	}
	var fnErr error // what fn returned; a commit error leaves it nil
	err := guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketName)
			if b == nil {
				fnErr = fmt.Errorf("%w: bucket %q is missing", ErrCorrupt, bucketName)
			} else {
				fnErr = fn(b)
			}
			return fnErr
		})
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		if fnErr == errNoChange {
			return nil
		}
		return fnErr
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return ErrClosed
	}
	// The commit failed, or bbolt panicked mid-transaction: what reached
	// the disk is unknown.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.poison == nil {
		s.poison = fmt.Errorf("%w: %s: %w", ErrPoisoned, s.path, err)
	}
	return s.poison
}

// offsetKey is the key of the snapshot at offset (>= 0): 8 bytes
// big-endian, so keys sort as offsets do.
func offsetKey(offset int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(offset))
}

// keyOffset is the offset a key holds, and whether it is a valid key.
func keyOffset(k []byte) (int64, bool) {
	if len(k) != 8 || k[0]&0x80 != 0 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(k)), true
}
