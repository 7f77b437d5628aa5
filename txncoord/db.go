package txncoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/internal/boltfile"
)

// formatVersion is the layout of transactions.db this package writes.
const formatVersion = 1

// Buckets and keys of transactions.db.
var (
	bucketMeta          = []byte("meta")
	bucketTransactions  = []byte("transactions")
	keyVersion          = []byte("version")
	keyCoordinatorEpoch = []byte("coordinator-epoch")
)

// openBolt opens (creating it if absent) the bbolt file at path
// (boltfile.Open): a damaged one is an error matching ErrDamaged.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	return boltfile.Open(path, opts, ErrDamaged)
}

// loadResult is what Open reads from transactions.db.
type loadResult struct {
	coordinatorEpoch int32
	records          map[string]record
}

// load creates the buckets on first open, checks the format version,
// increments the coordinator epoch, and reads every record, in one
// commit.
func load(db *bolt.DB, path string) (loadResult, error) {
	res := loadResult{records: map[string]record{}}
	err := db.Update(func(tx *bolt.Tx) error {
		res.records = map[string]record{} // Update may not run twice, but be safe
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		txns, err := tx.CreateBucketIfNotExists(bucketTransactions)
		if err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v == nil {
			if err := meta.Put(keyVersion, []byte{formatVersion}); err != nil {
				return err
			}
		} else if len(v) != 1 || v[0] != formatVersion {
			return &DamagedError{File: path, Bucket: string(bucketMeta), Key: string(keyVersion), Reason: fmt.Sprintf("format version %x, this build reads %d", v, formatVersion)}
		}
		epoch := int32(0)
		if v := meta.Get(keyCoordinatorEpoch); v != nil {
			if len(v) != 4 || int32(binary.BigEndian.Uint32(v)) < 0 {
				return &DamagedError{File: path, Bucket: string(bucketMeta), Key: string(keyCoordinatorEpoch), Offset: min(len(v), 4), Reason: fmt.Sprintf("coordinator epoch %x is not a non-negative 32-bit integer", v)}
			}
			epoch = int32(binary.BigEndian.Uint32(v))
		}
		if epoch == math.MaxInt32 {
			return fmt.Errorf("%s: the coordinator epoch is at its limit %d", path, epoch)
		}
		res.coordinatorEpoch = epoch + 1
		if err := meta.Put(keyCoordinatorEpoch, binary.BigEndian.AppendUint32(nil, uint32(res.coordinatorEpoch))); err != nil {
			return err
		}
		return txns.ForEach(func(k, v []byte) error {
			if v == nil {
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Reason: "a nested bucket, not a record"}
			}
			r, err := decodeRecord(v)
			if err != nil {
				var de *decodeError
				errors.As(err, &de)
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Offset: de.offset, Reason: de.reason}
			}
			if len(k) == 0 {
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Reason: "empty transactional id"}
			}
			res.records[string(k)] = r
			return nil
		})
	})
	return res, err
}

// put is one write of a record (or, with val nil, a deletion) for the
// committer. done receives the commit's result; nil for a lazy write
// whose caller does not wait.
type put struct {
	key  string
	val  []byte
	done chan error
}

// lazyDelay bounds how long the committer holds lazy writes when no
// synchronous write comes to carry them (a variable for the tests).
var lazyDelay = time.Second

// committer writes puts to transactions.db, many per bbolt commit (one
// fsync), in the order they were queued: a goroutine takes every put
// queued while the previous commit ran and commits them together, so
// concurrent transactions share fsyncs without waiting for a timer (as
// bolt.DB.Batch does, 10 ms by default).
//
// Lazy puts cost no commit of their own: the committer holds them until
// a synchronous put comes (they are committed with it, before it), or
// lazyDelay passes, or close. A newer put of the same key, lazy or not,
// replaces a held one, which is then never written.
type committer struct {
	db    *bolt.DB
	path  string
	queue chan *put
	done  chan struct{}
	delay time.Duration
	// onError is called with the error of a commit that had lazy puts.
	onError func(error)
	// onCommit, when set, is called after every commit with its result.
	onCommit func(error)
}

func newCommitter(db *bolt.DB, path string, onError, onCommit func(error)) *committer {
	c := &committer{db: db, path: path, queue: make(chan *put, 256), done: make(chan struct{}), delay: lazyDelay, onError: onError, onCommit: onCommit}
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

// commit writes batch in one bbolt commit and reports its result.
func (c *committer) commit(batch []*put) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTransactions)
		for _, p := range batch {
			var err error
			if p.val == nil {
				err = b.Delete([]byte(p.key))
			} else {
				err = b.Put([]byte(p.key), p.val)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("txncoord: commit to %s: %w", c.path, err)
	}
	if c.onCommit != nil {
		c.onCommit(err)
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
