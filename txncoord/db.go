package txncoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/internal/boltfile"
	"github.com/logstore/logstore/internal/metalog"
)

// The previous format (version 1) of transactions.db: a bbolt file,
// read only to convert it. Its buckets and keys:
var (
	bucketMeta          = []byte("meta")
	bucketTransactions  = []byte("transactions")
	keyVersion          = []byte("version")
	keyCoordinatorEpoch = []byte("coordinator-epoch")
)

// boltFormatVersion is the version the bbolt file's meta bucket holds.
const boltFormatVersion = 1

// lockTimeout is how long Open waits for transactions.db's lock.
const lockTimeout = 10 * time.Second

// openBolt opens the bbolt file at path (boltfile.Open): a damaged one
// is an error matching ErrDamaged.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	return boltfile.Open(path, opts, ErrDamaged)
}

// readBolt reads a bbolt transactions.db of the previous format: the
// coordinator epoch it holds (0 when it has none yet) and every record,
// checked as the previous version checked them. It changes nothing.
func readBolt(db *bolt.DB, path string) (int32, map[string][]byte, error) {
	epoch := int32(0)
	records := map[string][]byte{}
	err := db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keyVersion); v != nil && (len(v) != 1 || v[0] != boltFormatVersion) {
				return &DamagedError{File: path, Bucket: string(bucketMeta), Key: string(keyVersion), Reason: fmt.Sprintf("format version %x, this build reads %d", v, boltFormatVersion)}
			}
			if v := meta.Get(keyCoordinatorEpoch); v != nil {
				if len(v) != 4 || int32(binary.BigEndian.Uint32(v)) < 0 {
					return &DamagedError{File: path, Bucket: string(bucketMeta), Key: string(keyCoordinatorEpoch), Offset: min(len(v), 4), Reason: fmt.Sprintf("coordinator epoch %x is not a non-negative 32-bit integer", v)}
				}
				epoch = int32(binary.BigEndian.Uint32(v))
			}
		}
		txns := tx.Bucket(bucketTransactions)
		if txns == nil {
			return nil
		}
		return txns.ForEach(func(k, v []byte) error {
			if v == nil {
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Reason: "a nested bucket, not a record"}
			}
			if _, err := decodeRecord(v); err != nil {
				var de *decodeError
				errors.As(err, &de)
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Offset: de.offset, Reason: de.reason}
			}
			if len(k) == 0 || len(k) > math.MaxUint16 {
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Reason: fmt.Sprintf("transactional id of %d bytes", len(k))}
			}
			records[string(k)] = slices.Clone(v)
			return nil
		})
	})
	return epoch, records, err
}

// loadResult is what Open reads from transactions.db.
type loadResult struct {
	coordinatorEpoch int32
	records          map[string]record
	// closed: the previous coordinator was closed cleanly (the file
	// ended with its close record), so every write it answered for is
	// in records.
	closed bool
}

// openLog opens DIR/transactions.db for the coordinator: it takes the
// file's lock, replays it (or, for a bbolt file of the previous format,
// reads it), increments the coordinator epoch and writes the file anew
// with the live state and the new epoch (rewrite: a new file, synced,
// renamed over the old one, the directory synced). That compacts the
// file, drops a torn tail (logged with the file and offset), converts a
// bbolt file, and creates the file in a new store, each crash-safe.
//
// A record of the previous record layout, which has no last update
// time, is stamped with nowMs (and written so): an id idle since before
// this build expires an expiration after this Open.
func openLog(path string, compactBytes int64, nowMs int64, log *slog.Logger) (*logFile, loadResult, error) {
	res := loadResult{records: map[string]record{}}
	epoch := int32(0)
	var records map[string][]byte
	f, data, err := readLocked(path, true, lockTimeout)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		records = map[string][]byte{}
	case errors.Is(err, errLockTimeout):
		return nil, res, fmt.Errorf("%w: %w", ErrInUse, err)
	case err != nil:
		return nil, res, err
	case isLogFile(data):
		// Held until the new file is in place.
		defer f.Close()
		st, err := decodeLog(data, path)
		if err != nil {
			return nil, res, err
		}
		if st.tail != "" {
			log.Warn("txncoord: dropped a torn tail of transactions.db", "file", path, "offset", st.end, "dropped_bytes", int64(len(data))-st.end, "reason", st.tail)
		}
		epoch, records, res.closed = st.epoch, st.records, st.closed
	default:
		// The previous format. bbolt takes its own lock (flock, the
		// same kind): this one must go first.
		f.Close()
		db, err := openBolt(path, &bolt.Options{Timeout: lockTimeout})
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, res, fmt.Errorf("%w: %w", ErrInUse, err)
		}
		if err != nil {
			return nil, res, err
		}
		defer db.Close() // after the new file is in place
		if epoch, records, err = readBolt(db, path); err != nil {
			return nil, res, err
		}
		log.Info("txncoord: converting transactions.db from bbolt to the record file", "file", path, "transactional_ids", len(records))
	}
	if epoch == math.MaxInt32 {
		return nil, res, fmt.Errorf("the coordinator epoch is at its limit %d", epoch)
	}
	res.coordinatorEpoch = epoch + 1
	for id, v := range records {
		r, err := decodeRecord(v)
		if err != nil { // checked by decodeLog and readBolt
			return nil, res, fmt.Errorf("transactional id %q: %w", id, err)
		}
		if r.lastUpdateMs < 0 {
			r.lastUpdateMs = nowMs
			records[id] = r.encode()
		}
		res.records[id] = r
	}
	l, err := newLogFile(path, res.coordinatorEpoch, records, compactBytes)
	if err != nil {
		return nil, res, err
	}
	return l, res, nil
}

// lazyDelay bounds how long the committer holds lazy writes when no
// synchronous write comes to carry them (a variable for the tests).
var lazyDelay = time.Second

// committer writes records to transactions.db through a
// metalog.Committer: many per commit (one append, one fdatasync), in
// the order they were queued. Its goroutine takes every write queued
// while the previous commit ran and commits them together, so
// concurrent transactions share fsyncs without waiting for a timer (as
// bolt.DB.Batch does, 10 ms by default).
//
// Lazy writes cost no commit of their own: the committer holds them
// until a synchronous write comes (they are committed with it, before
// it), or lazyDelay passes, or close. A newer write of the same key,
// lazy or not, replaces a held one, which is then never written.
type committer struct {
	log *logFile
	c   *metalog.Committer
}

// newCommitter starts the committer of l. onError is called with the
// error of a commit that had lazy writes, and of a compaction;
// onCommit, when set, after every commit with its result, and after
// every compaction that follows a commit.
func newCommitter(l *logFile, path string, onError, onCommit func(error)) *committer {
	cfg := metalog.CommitterConfig{Name: "txncoord", Delay: lazyDelay, OnLazyError: onError,
		OnCompact: func(err error) {
			if err != nil {
				onError(err)
			} else if onCommit != nil {
				onCommit(nil)
			}
		}}
	if onCommit != nil {
		cfg.OnCommit = func(_ int, err error) { onCommit(err) }
	}
	return &committer{log: l, c: metalog.NewCommitter(l.Log, cfg)}
}

// write queues key=r and waits until it is committed (durable),
// together with the lazy writes held.
func (c *committer) write(key string, r record) error {
	return c.c.Write(metalog.Put{Key: key, Val: r.encode()})
}

// remove queues a tombstone for each of keys and waits until all are
// committed (durable): queued together, they share commits, and each
// is whole or not there. errs[i] is the result of keys[i].
func (c *committer) remove(keys []string) (errs []error) {
	errs = make([]error, len(keys))
	var wg sync.WaitGroup
	wg.Add(len(keys))
	for i, k := range keys {
		c.c.Push(&metalog.Item{Puts: []metalog.Put{{Key: k}}, Done: func(err error) { errs[i] = err; wg.Done() }})
	}
	wg.Wait()
	return errs
}

// writeLazy queues key=r without waiting: it is committed with the
// next synchronous write, or within lazyDelay, or at close, unless a
// newer write of key replaces it first; either way before any write
// queued after it.
func (c *committer) writeLazy(key string, r record) {
	c.c.Push(&metalog.Item{Puts: []metalog.Put{{Key: key, Val: r.encode()}}, Lazy: true})
}

// close commits what is queued and held and stops the committer. No
// write may be queued after.
func (c *committer) close() { c.c.Close() }
