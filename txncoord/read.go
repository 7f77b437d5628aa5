package txncoord

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrInUse: Read could not get transactions.db within its timeout
// because a process has it open for writing (a running server's
// coordinator).
var ErrInUse = errors.New("transactions.db is in use by another process (a running server?)")

// Read returns the transactional ids of DIR/transactions.db, sorted by
// id, as Describe would report them, without changing the file: it
// opens it read-only (a shared lock, waiting at most timeout for a
// process that has it open for writing: then ErrInUse), does not bump
// the coordinator epoch and finishes nothing. A file that does not
// exist is an error matching fs.ErrNotExist; a damaged one, ErrDamaged.
func Read(dir string, timeout time.Duration) ([]Transaction, error) {
	path := filepath.Join(dir, FileName)
	db, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("txncoord: read %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
	}
	defer db.Close()
	var out []Transaction
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return &DamagedError{File: path, Bucket: string(bucketMeta), Reason: "no meta bucket"}
		}
		if v := meta.Get(keyVersion); len(v) != 1 || v[0] != formatVersion {
			return &DamagedError{File: path, Bucket: string(bucketMeta), Key: string(keyVersion), Reason: fmt.Sprintf("format version %x, this build reads %d", v, formatVersion)}
		}
		b := tx.Bucket(bucketTransactions)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			r, err := decodeRecord(v)
			if err != nil {
				var de *decodeError
				errors.As(err, &de)
				return &DamagedError{File: path, Bucket: string(bucketTransactions), Key: string(k), Offset: de.offset, Reason: de.reason}
			}
			t := txn{id: string(k), rec: r}
			out = append(out, t.describe())
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
	}
	slices.SortFunc(out, func(a, b Transaction) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	return out, nil
}
