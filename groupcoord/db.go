package groupcoord

import (
	"bytes"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/internal/boltfile"
)

// FileName is the coordinator's bbolt file at the root of the store.
const FileName = "groups.db"

// formatVersion is the layout of groups.db this package writes.
const formatVersion = 1

var (
	bucketMeta    = []byte("meta")
	bucketGroups  = []byte("groups")
	bucketOffsets = []byte("offsets")
	bucketPending = []byte("pending")
	keyVersion    = []byte("version")
)

// openBolt opens (creating it if absent) the bbolt file at path
// (boltfile.Open): a damaged one is an error matching ErrDamaged.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	return boltfile.Open(path, opts, ErrDamaged)
}

// loaded is what groups.db holds: group records and offsets by group.
type loaded struct {
	groups  map[string]groupRecord
	offsets map[string]map[TopicPartition]offsetRecord
	// pending: group, producer id, partition.
	pending map[string]map[int64]map[TopicPartition]offsetRecord
}

// readAll reads every record in tx. With create, missing buckets are
// made and the format version written (tx must be writable).
func readAll(tx *bolt.Tx, path string, create bool) (loaded, error) {
	res := loaded{groups: map[string]groupRecord{}, offsets: map[string]map[TopicPartition]offsetRecord{}, pending: map[string]map[int64]map[TopicPartition]offsetRecord{}}
	meta := tx.Bucket(bucketMeta)
	if meta == nil && create {
		var err error
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return res, err
		}
		if err := meta.Put(keyVersion, []byte{formatVersion}); err != nil {
			return res, err
		}
		for _, b := range [][]byte{bucketGroups, bucketOffsets, bucketPending} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return res, err
			}
		}
	}
	if meta == nil {
		return res, &DamagedError{File: path, Bucket: string(bucketMeta), Reason: "no meta bucket"}
	}
	if v := meta.Get(keyVersion); len(v) != 1 || v[0] != formatVersion {
		return res, &DamagedError{File: path, Bucket: string(bucketMeta), Key: keyVersion, Reason: fmt.Sprintf("format version %x, this build reads %d", v, formatVersion)}
	}
	groups, offsets := tx.Bucket(bucketGroups), tx.Bucket(bucketOffsets)
	if groups == nil || offsets == nil {
		return res, &DamagedError{File: path, Bucket: string(bucketGroups), Reason: "the groups or offsets bucket is missing"}
	}
	err := groups.ForEach(func(k, v []byte) error {
		if v == nil {
			return &DamagedError{File: path, Bucket: string(bucketGroups), Key: clone(k), Reason: "a nested bucket, not a record"}
		}
		if len(k) == 0 || len(k) > maxGroupIDBytes {
			return &DamagedError{File: path, Bucket: string(bucketGroups), Key: clone(k), InKey: true, Reason: fmt.Sprintf("group id of %d bytes", len(k))}
		}
		r, err := decodeGroupRecord(v)
		if err != nil {
			de := err.(*decodeError)
			return &DamagedError{File: path, Bucket: string(bucketGroups), Key: clone(k), Offset: de.offset, Reason: de.reason}
		}
		res.groups[string(k)] = r
		return nil
	})
	if err != nil {
		return res, err
	}
	err = offsets.ForEach(func(k, v []byte) error {
		if v == nil {
			return &DamagedError{File: path, Bucket: string(bucketOffsets), Key: clone(k), Reason: "a nested bucket, not a record"}
		}
		g, tp, err := decodeOffsetKey(k)
		if err != nil {
			de := err.(*decodeError)
			return &DamagedError{File: path, Bucket: string(bucketOffsets), Key: clone(k), InKey: true, Offset: de.offset, Reason: de.reason}
		}
		r, err := decodeOffsetRecord(v)
		if err != nil {
			de := err.(*decodeError)
			return &DamagedError{File: path, Bucket: string(bucketOffsets), Key: clone(k), Offset: de.offset, Reason: de.reason}
		}
		m := res.offsets[g]
		if m == nil {
			m = map[TopicPartition]offsetRecord{}
			res.offsets[g] = m
		}
		m[tp] = r
		return nil
	})
	if err != nil {
		return res, err
	}
	// A file of an earlier layout of format 1 may lack the bucket: no
	// pending offsets then.
	pending := tx.Bucket(bucketPending)
	if pending == nil {
		return res, nil
	}
	err = pending.ForEach(func(k, v []byte) error {
		if v == nil {
			return &DamagedError{File: path, Bucket: string(bucketPending), Key: clone(k), Reason: "a nested bucket, not a record"}
		}
		g, tp, pid, err := decodePendingKey(k)
		if err != nil {
			de := err.(*decodeError)
			return &DamagedError{File: path, Bucket: string(bucketPending), Key: clone(k), InKey: true, Offset: de.offset, Reason: de.reason}
		}
		r, err := decodeOffsetRecord(v)
		if err != nil {
			de := err.(*decodeError)
			return &DamagedError{File: path, Bucket: string(bucketPending), Key: clone(k), Offset: de.offset, Reason: de.reason}
		}
		byPID := res.pending[g]
		if byPID == nil {
			byPID = map[int64]map[TopicPartition]offsetRecord{}
			res.pending[g] = byPID
		}
		m := byPID[pid]
		if m == nil {
			m = map[TopicPartition]offsetRecord{}
			byPID[pid] = m
		}
		m[tp] = r
		return nil
	})
	return res, err
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// opKind is what an op does to groups.db.
type opKind uint8

const (
	opPutOffset opKind = iota
	opPutGroup
	opDeleteOffset
	// opDeleteGroup deletes the group record and every offset of the
	// group, committed or pending (the keys under groupPrefix).
	opDeleteGroup
	opPutPending
	opDeletePending
)

type op struct {
	kind opKind
	key  []byte
	val  []byte
}

// item is one unit of the committer's queue: ops committed together,
// then apply called (in the committer's goroutine) with the commit's
// result. When prepare is set, the item's ops are what prepare returns,
// called once every item queued before it is committed and applied (the
// retention scan, whose view must include them).
type item struct {
	ops     []op
	prepare func() []op
	apply   func(error)
}

// committer writes items to groups.db in queue order, many per bbolt
// commit (one fsync): a goroutine takes every item queued while the
// previous commit ran and commits them together, so concurrent
// OffsetCommits share fsyncs without a timer. Its queue is unbounded:
// the coordinator queues while holding its lock, and the applies take
// that lock, so a bounded queue could deadlock.
type committer struct {
	db       *bolt.DB
	path     string
	mu       sync.Mutex
	items    []*item
	closing  bool
	wake     chan struct{}
	done     chan struct{}
	onCommit func(items int, err error)
}

func newCommitter(db *bolt.DB, path string, onCommit func(int, error)) *committer {
	c := &committer{db: db, path: path, wake: make(chan struct{}, 1), done: make(chan struct{}), onCommit: onCommit}
	go c.run()
	return c
}

// push queues it; it never blocks.
func (c *committer) push(it *item) {
	c.mu.Lock()
	c.items = append(c.items, it)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		batch, closing := c.items, c.closing
		c.items = nil
		c.mu.Unlock()
		if len(batch) == 0 {
			if closing {
				return
			}
			<-c.wake
			continue
		}
		// Items with prepare split the batch: they run after what is
		// before them is applied.
		start := 0
		for i, it := range batch {
			if it.prepare == nil {
				continue
			}
			c.commit(batch[start:i])
			it.ops = it.prepare()
			c.commit(batch[i : i+1])
			start = i + 1
		}
		c.commit(batch[start:])
	}
}

func (c *committer) commit(items []*item) {
	if len(items) == 0 {
		return
	}
	n := 0
	for _, it := range items {
		n += len(it.ops)
	}
	var err error
	if n > 0 {
		err = c.db.Update(func(tx *bolt.Tx) error {
			offsets, groups := tx.Bucket(bucketOffsets), tx.Bucket(bucketGroups)
			pending, err := tx.CreateBucketIfNotExists(bucketPending)
			if err != nil {
				return err
			}
			for _, it := range items {
				for _, o := range it.ops {
					var err error
					switch o.kind {
					case opPutOffset:
						err = offsets.Put(o.key, o.val)
					case opPutGroup:
						err = groups.Put(o.key, o.val)
					case opDeleteOffset:
						err = offsets.Delete(o.key)
					case opPutPending:
						err = pending.Put(o.key, o.val)
					case opDeletePending:
						err = pending.Delete(o.key)
					case opDeleteGroup:
						err = groups.Delete(o.key)
						if err != nil {
							break
						}
						prefix := groupPrefix(string(o.key))
						for _, b := range []*bolt.Bucket{offsets, pending} {
							cur := b.Cursor()
							for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Seek(prefix) {
								if err = cur.Delete(); err != nil {
									break
								}
							}
							if err != nil {
								break
							}
						}
					}
					if err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			err = fmt.Errorf("groupcoord: commit to %s: %w", c.path, err)
		}
	}
	if c.onCommit != nil {
		c.onCommit(len(items), err)
	}
	for _, it := range items {
		if it.apply != nil {
			it.apply(err)
		}
	}
}

// close commits what is queued and stops the committer.
func (c *committer) close() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
}
