package groupcoord

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/internal/metalog"
)

// FileName is the coordinator's file at the root of the store.
const FileName = "groups.db"

// TmpFileName is the file a compaction or a conversion writes, next to
// FileName, before it renames it over FileName. One left by a crash is
// ignored, and replaced by the next Open.
const TmpFileName = FileName + metalog.TmpSuffix

// The record file layout of groups.db (format 2; format 1 was a bbolt
// file, converted at Open): a metalog file of groupsFormat, whose keys
// start with the kind of their record.
const (
	// logMagic opens the file. A bbolt file starts with a page id of 0,
	// so the two cannot be taken for each other.
	logMagic = "LSGRPLOG"
	// formatVersion is the layout this package writes.
	formatVersion = 2
	// keyGroup + group id: a group record.
	keyGroup = 'g'
	// keyOffset + offsetKey: a committed offset record.
	keyOffset = 'o'
	// keyPending + pendingKey: the offset record of a transaction not
	// ended yet.
	keyPending = 'p'
)

// lockTimeout is how long Open waits for groups.db's lock.
const lockTimeout = time.Second

// groupsFormat: no meta value; keys of 4-byte lengths (an offset key
// holds a group id and a topic of up to 65,535 bytes each).
var groupsFormat = &metalog.Format{
	Magic:    logMagic,
	Version:  formatVersion,
	What:     "group coordinator file",
	WideKeys: true,
	CheckValue: func(key string, val []byte) error {
		_, err := decodeEntry(key, val)
		return err
	},
}

// entry is one record of groups.db, decoded.
type entry struct {
	kind  byte
	group string
	tp    TopicPartition
	pid   int64
	gr    groupRecord
	or    offsetRecord
}

// decodeEntry decodes the record val under key. An error is a
// *metalog.ValueError, its offset in val (a key that does not decode
// says so in the reason, with the offset in the key).
func decodeEntry(key string, val []byte) (entry, error) {
	e := entry{kind: key[0]}
	k := key[1:]
	keyErr := func(err error) error {
		de := err.(*decodeError)
		return &metalog.ValueError{Reason: fmt.Sprintf("key byte %d: %s", 1+de.offset, de.reason)}
	}
	valErr := func(err error) error {
		de := err.(*decodeError)
		return &metalog.ValueError{Offset: de.offset, Reason: de.reason}
	}
	var err error
	switch e.kind {
	case keyGroup:
		if len(k) == 0 || len(k) > maxGroupIDBytes {
			return e, &metalog.ValueError{Reason: fmt.Sprintf("key: group id of %d bytes", len(k))}
		}
		e.group = k
		if e.gr, err = decodeGroupRecord(val); err != nil {
			return e, valErr(err)
		}
	case keyOffset, keyPending:
		if e.kind == keyOffset {
			e.group, e.tp, err = decodeOffsetKey(k)
		} else {
			e.group, e.tp, e.pid, err = decodePendingKey(k)
		}
		if err != nil {
			return e, keyErr(err)
		}
		if e.or, err = decodeOffsetRecord(val); err != nil {
			return e, valErr(err)
		}
	default:
		return e, &metalog.ValueError{Reason: fmt.Sprintf("key of unknown kind %q", key[0])}
	}
	return e, nil
}

// bucketOf names the kind of record a key holds as the bucket of the
// bbolt format did.
func bucketOf(key string) string {
	if key == "" {
		return ""
	}
	switch key[0] {
	case keyGroup:
		return string(bucketGroups)
	case keyOffset:
		return string(bucketOffsets)
	case keyPending:
		return string(bucketPending)
	}
	return ""
}

// damaged makes a *metalog.DamagedError in err this package's
// *DamagedError (InFile: the offset is in the file); other errors are
// returned as they are.
func damaged(err error) error {
	var de *metalog.DamagedError
	if errors.As(err, &de) {
		e := &DamagedError{File: de.File, Offset: de.Offset, Reason: de.Reason, InFile: true}
		if de.Key != "" {
			e.Bucket, e.Key = bucketOf(de.Key), []byte(de.Key[1:])
		}
		return e
	}
	return err
}

// loaded is what groups.db holds: group records and offsets by group.
type loaded struct {
	groups  map[string]groupRecord
	offsets map[string]map[TopicPartition]offsetRecord
	// pending: group, producer id, partition.
	pending map[string]map[int64]map[TopicPartition]offsetRecord
}

func newLoaded() loaded {
	return loaded{groups: map[string]groupRecord{}, offsets: map[string]map[TopicPartition]offsetRecord{}, pending: map[string]map[int64]map[TopicPartition]offsetRecord{}}
}

// loadRecords decodes the records of a record file.
func loadRecords(records map[string][]byte, path string) (loaded, error) {
	res := newLoaded()
	for k, v := range records {
		e, err := decodeEntry(k, v)
		if err != nil { // checked by the replay
			return res, &DamagedError{File: path, Bucket: bucketOf(k), Key: []byte(k[1:]), Reason: err.Error()}
		}
		switch e.kind {
		case keyGroup:
			res.groups[e.group] = e.gr
		case keyOffset:
			m := res.offsets[e.group]
			if m == nil {
				m = map[TopicPartition]offsetRecord{}
				res.offsets[e.group] = m
			}
			m[e.tp] = e.or
		case keyPending:
			byPID := res.pending[e.group]
			if byPID == nil {
				byPID = map[int64]map[TopicPartition]offsetRecord{}
				res.pending[e.group] = byPID
			}
			m := byPID[e.pid]
			if m == nil {
				m = map[TopicPartition]offsetRecord{}
				byPID[e.pid] = m
			}
			m[e.tp] = e.or
		}
	}
	return res, nil
}

// records is l as the keys and values of the record file.
func (l loaded) records() map[string][]byte {
	out := map[string][]byte{}
	for g, r := range l.groups {
		out[string(keyGroup)+g] = r.encode()
	}
	for g, m := range l.offsets {
		for tp, r := range m {
			out[string(keyOffset)+string(offsetKey(g, tp))] = r.encode()
		}
	}
	for g, byPID := range l.pending {
		for pid, m := range byPID {
			for tp, r := range m {
				out[string(keyPending)+string(pendingKey(g, tp, pid))] = r.encode()
			}
		}
	}
	return out
}

// stepHook, when set (by tests), is called at each step of writing the
// file anew and of a commit (metalog.Options.Step); an error stops the
// write there, as a crash would.
var stepHook func(step string) error

func step(name string) error {
	if stepHook != nil {
		return stepHook(name)
	}
	return nil
}

// openFile opens path for the coordinator: it takes the file's lock
// and replays it (or, for a bbolt file of format 1, reads it). A whole
// record file is appended to as it is (compacted first when due).
// Otherwise the file is written anew with what it holds (a rewrite: a
// new file, synced, renamed over the old one, the directory synced).
// That drops a torn tail (logged with the file and offset), converts a
// bbolt file, and creates the file in a new store, each crash-safe: a
// crash leaves the old file (bbolt or record file) or the new one,
// whole.
func openFile(path string, log *slog.Logger) (*metalog.Log, loaded, error) {
	var records map[string][]byte
	f, data, err := metalog.ReadLocked(path, true, lockTimeout)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		records = map[string][]byte{}
	case errors.Is(err, metalog.ErrLockTimeout):
		return nil, loaded{}, fmt.Errorf("%w: %w", ErrInUse, err)
	case err != nil:
		return nil, loaded{}, damaged(err)
	case groupsFormat.IsFile(data):
		st, err := groupsFormat.Decode(data, path)
		if err != nil {
			f.Close()
			return nil, loaded{}, damaged(err)
		}
		if st.Tail == "" {
			// Whole: appended to as it is, compacted if due.
			return adopt(f, path, st)
		}
		// Held until the new file is in place.
		defer f.Close()
		log.Warn("groupcoord: dropped a torn tail of groups.db", "file", path, "offset", st.End, "dropped_bytes", int64(len(data))-st.End, "reason", st.Tail)
		records = st.Records
	default:
		// Format 1, bbolt. bbolt takes its own lock (flock, the same
		// kind): this one must go first.
		f.Close()
		db, err := openBolt(path, &bolt.Options{Timeout: lockTimeout})
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, loaded{}, fmt.Errorf("%w: %w", ErrInUse, err)
		}
		if err != nil {
			return nil, loaded{}, err
		}
		defer db.Close() // after the new file is in place
		var l loaded
		if err := db.View(func(tx *bolt.Tx) error {
			var err error
			l, err = readAll(tx, path, true)
			return err
		}); err != nil {
			return nil, loaded{}, err
		}
		records = l.records()
		log.Info("groupcoord: converting groups.db from bbolt to the record file", "file", path, "groups", len(l.groups), "records", len(records))
	}
	l, err := loadRecords(records, path)
	if err != nil {
		return nil, l, err
	}
	lf, err := metalog.Create(path, groupsFormat, nil, records, metalog.Options{Step: step})
	if err != nil {
		return nil, l, err
	}
	return lf, l, nil
}

// adopt opens f, the whole record file at path replayed to st, for
// appends (metalog.Adopt), compacting it first if it is due.
func adopt(f *os.File, path string, st metalog.State) (*metalog.Log, loaded, error) {
	l, err := loadRecords(st.Records, path)
	if err != nil {
		f.Close()
		return nil, l, err
	}
	lf, err := metalog.Adopt(f, path, groupsFormat, st, metalog.Options{Step: step})
	if err != nil {
		f.Close()
		return nil, l, err
	}
	if lf.CompactDue() {
		if err := lf.Compact(); err != nil {
			lf.Close()
			return nil, l, err
		}
	}
	return lf, l, nil
}

// opKind is what an op does to groups.db.
type opKind uint8

const (
	opPutOffset opKind = iota
	opPutGroup
	opDeleteOffset
	// opDeleteGroup deletes the group record and every offset of the
	// group, committed or pending (the keys under groupPrefix, as the
	// file holds them when the op is committed).
	opDeleteGroup
	// opDeleteGroupRecord deletes the group record only: for a group
	// known to have no offset in the file.
	opDeleteGroupRecord
	opPutPending
	opDeletePending
)

type op struct {
	kind opKind
	key  []byte
	val  []byte
}

// puts is what ops do, as puts of the record file.
func puts(ops []op) []metalog.Put {
	out := make([]metalog.Put, 0, len(ops))
	for _, o := range ops {
		switch o.kind {
		case opPutOffset:
			out = append(out, metalog.Put{Key: string(keyOffset) + string(o.key), Val: o.val})
		case opDeleteOffset:
			out = append(out, metalog.Put{Key: string(keyOffset) + string(o.key)})
		case opPutPending:
			out = append(out, metalog.Put{Key: string(keyPending) + string(o.key), Val: o.val})
		case opDeletePending:
			out = append(out, metalog.Put{Key: string(keyPending) + string(o.key)})
		case opPutGroup:
			out = append(out, metalog.Put{Key: string(keyGroup) + string(o.key), Val: o.val})
		case opDeleteGroupRecord:
			out = append(out, metalog.Put{Key: string(keyGroup) + string(o.key)})
		case opDeleteGroup:
			prefix := string(groupPrefix(string(o.key)))
			out = append(out, metalog.Put{Key: string(keyGroup) + string(o.key)},
				metalog.Put{Key: string(keyOffset) + prefix, Prefix: true},
				metalog.Put{Key: string(keyPending) + prefix, Prefix: true})
		}
	}
	return out
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

// committer writes items to groups.db through a metalog.Committer, in
// queue order, many per commit (one append, one fdatasync): its
// goroutine takes every item queued while the previous commit ran and
// commits them together, so concurrent OffsetCommits share fsyncs
// without a timer. Its queue is unbounded: the coordinator queues while
// holding its lock, and the applies take that lock, so a bounded queue
// could deadlock.
type committer struct {
	c *metalog.Committer
	// onCommit, when set (by tests), is called after every commit with
	// the number of items it carried and its result.
	onCommit func(items int, err error)
}

func newCommitter(l *metalog.Log, log *slog.Logger) *committer {
	w := &committer{}
	w.c = metalog.NewCommitter(l, metalog.CommitterConfig{
		Name: "groupcoord",
		OnCommit: func(n int, err error) {
			if w.onCommit != nil {
				w.onCommit(n, err)
			}
		},
		OnCompact: func(err error) {
			if err != nil {
				log.Error("groups.db compaction failed; the file is kept as it is", "err", err)
			}
		},
	})
	return w
}

// push queues it; it never blocks.
func (w *committer) push(it *item) {
	mi := &metalog.Item{Puts: puts(it.ops), Done: it.apply}
	if it.prepare != nil {
		prepare := it.prepare
		mi.Prepare = func() []metalog.Put { return puts(prepare()) }
	}
	w.c.Push(mi)
}

// close commits what is queued and stops the committer.
func (w *committer) close() { w.c.Close() }
