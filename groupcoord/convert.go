package groupcoord

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/internal/boltfile"
)

// The previous format (1) of groups.db: a bbolt file, read only to
// convert it (Open) or to read it as it is (Read). Its buckets: "meta"
// holds "version" = 1; "groups" maps a group id to its record;
// "offsets" maps offsetKey to an offset record; "pending" maps
// pendingKey to the offset record of a transaction not ended yet.
var (
	bucketMeta    = []byte("meta")
	bucketGroups  = []byte("groups")
	bucketOffsets = []byte("offsets")
	bucketPending = []byte("pending")
	keyVersion    = []byte("version")
)

// boltFormatVersion is the version the bbolt file's meta bucket holds.
const boltFormatVersion = 1

// openBolt opens the bbolt file at path (boltfile.Open): a damaged one
// is an error matching ErrDamaged.
func openBolt(path string, opts *bolt.Options) (*bolt.DB, error) {
	return boltfile.Open(path, opts, ErrDamaged)
}

// readAll reads every record in tx, a bbolt groups.db of format 1.
// With emptyOK, a file without the meta bucket is empty (the previous
// build made the buckets at its first Open, in the transaction that
// read them: a file left without them held nothing).
func readAll(tx *bolt.Tx, path string, emptyOK bool) (loaded, error) {
	res := newLoaded()
	meta := tx.Bucket(bucketMeta)
	if meta == nil && emptyOK {
		return res, nil
	}
	if meta == nil {
		return res, &DamagedError{File: path, Bucket: string(bucketMeta), Reason: "no meta bucket"}
	}
	if v := meta.Get(keyVersion); len(v) != 1 || v[0] != boltFormatVersion {
		return res, &DamagedError{File: path, Bucket: string(bucketMeta), Key: keyVersion, Reason: fmt.Sprintf("format version %x, this build reads %d", v, boltFormatVersion)}
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
