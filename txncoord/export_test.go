package txncoord

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SetLazyDelay sets how long coordinators opened from now on hold lazy
// writes; the returned func restores it.
func SetLazyDelay(d time.Duration) (restore func()) {
	old := lazyDelay
	lazyDelay = d
	return func() { lazyDelay = old }
}

// CheckTimeouts runs one timeout scan now.
func (c *Coordinator) CheckTimeouts() { c.checkTimeouts() }

// ExpireIDs runs one expiration scan now.
func (c *Coordinator) ExpireIDs() { c.expireIDs() }

// SeedRecord is a record for Seed.
type SeedRecord struct {
	State                      string
	ProducerID, PrevProducerID int64
	Epoch, LastEpoch           int16
	TimeoutMs                  int32
	StartMs                    int64
	Partitions                 []TopicPartition
	// FirstOffsets: of a PrepareX, per partition (nil: none kept, as
	// before record version 3).
	FirstOffsets []int64
	// LastUpdateMs: 0 is none, a version 1 record (as a build without
	// expiration wrote it).
	LastUpdateMs int64
}

// Seed writes records into DIR/transactions.db (created if absent, at
// coordinator epoch 0), as a coordinator would have: over the records
// of the same ids, the others kept.
func Seed(dir string, recs map[string]SeedRecord) error {
	path := filepath.Join(dir, FileName)
	epoch, records := int32(0), map[string][]byte{}
	data, err := os.ReadFile(path)
	if err == nil {
		st, err := decodeLog(data, path)
		if err != nil {
			return err
		}
		epoch, records = st.epoch, st.records
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for id, s := range recs {
		records[id] = EncodeSeed(s)
	}
	return os.WriteFile(path, compactImage(epoch, records), 0o644)
}

// SeedBolt writes records into DIR/transactions.db as a bbolt file of
// the previous format, with the meta bucket the previous version wrote
// (version 1, coordinator epoch epoch).
func SeedBolt(dir string, epoch int32, recs map[string]SeedRecord) error {
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyVersion, []byte{boltFormatVersion}); err != nil {
			return err
		}
		if err := meta.Put(keyCoordinatorEpoch, binary.BigEndian.AppendUint32(nil, uint32(epoch))); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(bucketTransactions)
		if err != nil {
			return err
		}
		for id, s := range recs {
			if err := b.Put([]byte(id), EncodeSeed(s)); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutRaw writes val under key in bucket of DIR/transactions.db, a bbolt
// file of the previous format.
func PutRaw(dir, bucket string, key, val []byte) error {
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put(key, val)
	})
}

// DecodeRecord decodes a record and encodes it again (for the fuzzer).
func DecodeRecord(b []byte) ([]byte, error) {
	r, err := decodeRecord(b)
	if err != nil {
		return nil, err
	}
	return r.encode(), nil
}

// EncodeSeed encodes s as a record value.
func EncodeSeed(s SeedRecord) []byte {
	r := record{producerID: s.ProducerID, prevProducerID: s.PrevProducerID, epoch: s.Epoch, lastEpoch: s.LastEpoch, timeoutMs: s.TimeoutMs, startMs: s.StartMs, partitions: s.Partitions, firstOffsets: s.FirstOffsets, lastUpdateMs: s.LastUpdateMs}
	if r.lastUpdateMs == 0 {
		r.lastUpdateMs = -1
	}
	for i, n := range stateNames {
		if n == s.State {
			r.state = state(i)
		}
	}
	return r.encode()
}

// TmpName is TmpFileName.
const TmpName = TmpFileName

// SetStepHook sets the hook called at each step of writing
// transactions.db anew ("tmp written", "tmp synced", "renamed", "dir
// synced") and after a commit's append ("appended"), before its sync;
// an error stops the write there. The returned func restores it.
func SetStepHook(fn func(step string) error) (restore func()) {
	old := stepHook
	stepHook = fn
	return func() { stepHook = old }
}

// LogState is a replay of a record file.
type LogState struct {
	Epoch   int32
	Records map[string][]byte
	End     int64  // the offset after the last good frame
	Tail    string // why the bytes from End on were dropped
	Closed  bool   // the last good frame is the close record
}

// DecodeLog replays the bytes of a record file.
func DecodeLog(data []byte) (LogState, error) {
	st, err := decodeLog(data, "file")
	return LogState{Epoch: st.epoch, Records: st.records, End: st.end, Tail: st.tail, Closed: st.closed}, err
}

// LogImage is the compacted file holding epoch and records.
func LogImage(epoch int32, records map[string][]byte) []byte {
	return compactImage(epoch, records)
}

// CloseRecordSize is the bytes of the close record's frame.
var CloseRecordSize = len(appendFrame(nil, []byte{payloadClosed}))

// Frame is a frame of the record file around payload.
func Frame(payload []byte) []byte { return appendFrame(nil, payload) }
