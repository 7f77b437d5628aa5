package txncoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/internal/boltfile"
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

// put is one write of a record (or, with val nil, a tombstone: the id
// expired) for the committer. done receives the commit's result; nil for a lazy write
// whose caller does not wait.
type put struct {
	key  string
	val  []byte // the encoded record
	done chan error
}

// lazyDelay bounds how long the committer holds lazy writes when no
// synchronous write comes to carry them (a variable for the tests).
var lazyDelay = time.Second

// committer writes puts to transactions.db, many per commit (one
// append, one fdatasync), in the order they were queued: a goroutine takes every put
// queued while the previous commit ran and commits them together, so
// concurrent transactions share fsyncs without waiting for a timer (as
// bolt.DB.Batch does, 10 ms by default).
//
// Lazy puts cost no commit of their own: the committer holds them until
// a synchronous put comes (they are committed with it, before it), or
// lazyDelay passes, or close. A newer put of the same key, lazy or not,
// replaces a held one, which is then never written.
type committer struct {
	log   *logFile
	path  string
	queue chan *put
	done  chan struct{}
	delay time.Duration
	// onError is called with the error of a commit that had lazy puts.
	onError func(error)
	// onCommit, when set, is called after every commit with its result,
	// and after every compaction that follows a commit.
	onCommit func(error)
}

func newCommitter(l *logFile, path string, onError, onCommit func(error)) *committer {
	c := &committer{log: l, path: path, queue: make(chan *put, 256), done: make(chan struct{}), delay: lazyDelay, onError: onError, onCommit: onCommit}
	go c.run()
	return c
}

func (c *committer) run() {
	defer close(c.done)
	var (
		batch  []*put
		held   []*put // lazy puts waiting for a commit, oldest first
		timer  *time.Timer
		timerC <-chan time.Time
		open   = true
	)
	for open {
		due := false
		batch = batch[:0]
		select {
		case p, ok := <-c.queue:
			if !ok {
				open = false
				break
			}
			batch = append(batch[:0], p)
		drain:
			for {
				select {
				case p, ok := <-c.queue:
					if !ok {
						open = false
						break drain
					}
					batch = append(batch, p)
				default:
					break drain
				}
			}
		case <-timerC:
			timerC, due = nil, true
		}
		// A put replaces the held put of its key.
		for _, p := range batch {
			held = slices.DeleteFunc(held, func(h *put) bool { return h.key == p.key })
		}
		waited := slices.ContainsFunc(batch, func(p *put) bool { return p.done != nil })
		if !waited && !due && open {
			// Only lazy puts: hold them for the next commit.
			held = append(held, batch...)
			clear(batch)
			if timerC == nil && len(held) > 0 {
				if timer == nil {
					timer = time.NewTimer(c.delay)
				} else {
					timer.Reset(c.delay)
				}
				timerC = timer.C
			}
			continue
		}
		batch = append(held, batch...)
		held = nil
		if timerC != nil {
			timer.Stop()
			timerC = nil
		}
		if len(batch) > 0 {
			c.commit(batch)
		}
		clear(batch)
	}
	if timer != nil {
		timer.Stop()
	}
}

// commit writes batch in one commit (logFile.commit) and reports its
// result; then compacts the file if it has grown past its bound.
func (c *committer) commit(batch []*put) {
	err := c.log.commit(batch)
	if err != nil {
		err = fmt.Errorf("txncoord: commit to %s: %w", c.path, err)
	}
	if c.onCommit != nil {
		c.onCommit(err)
	}
	if err == nil && c.log.compactDue() {
		// The commit is durable in the old file: a failed compaction
		// leaves that file, which is kept.
		if cerr := c.log.compact(); cerr != nil {
			c.onError(fmt.Errorf("txncoord: compact %s: %w", c.path, cerr))
		} else if c.onCommit != nil {
			c.onCommit(nil)
		}
	}
	lazyFailed := false
	for _, p := range batch {
		if p.done != nil {
			p.done <- err
		} else if err != nil {
			lazyFailed = true
		}
	}
	if lazyFailed {
		c.onError(err)
	}
}

// write queues key=val and waits until it is committed (durable),
// together with the lazy puts held.
func (c *committer) write(key string, r record) error {
	p := &put{key: key, val: r.encode(), done: make(chan error, 1)}
	c.queue <- p
	return <-p.done
}

// remove queues a tombstone for each of keys and waits until all are
// committed (durable): queued together, they share commits (as many
// as the queue holds in one), and each is whole or not there. errs[i] is the result of keys[i].
func (c *committer) remove(keys []string) (errs []error) {
	puts := make([]*put, len(keys))
	for i, k := range keys {
		puts[i] = &put{key: k, done: make(chan error, 1)}
		c.queue <- puts[i]
	}
	errs = make([]error, len(keys))
	for i, p := range puts {
		errs[i] = <-p.done
	}
	return errs
}

// writeLazy queues key=val without waiting: it is committed with the
// next synchronous write, or within lazyDelay, or at close, unless a
// newer put of key replaces it first; either way before any write
// queued after it.
func (c *committer) writeLazy(key string, r record) {
	c.queue <- &put{key: key, val: r.encode()}
}

// close commits what is queued and held and stops the committer. No
// write may be queued after.
func (c *committer) close() {
	close(c.queue)
	<-c.done
}
