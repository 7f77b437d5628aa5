package txncoord

import (
	"errors"
	"fmt"
	"maps"
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
// reads it under a shared lock, waiting at most timeout for a process
// that has it open for writing (then ErrInUse), does not bump the
// coordinator epoch, finishes nothing, and leaves a torn tail for the
// next Open to drop (it reads what is before it). A bbolt file of the
// previous format is read as it is (Open converts it). A file that does
// not exist is an error matching fs.ErrNotExist; a damaged one,
// ErrDamaged.
func Read(dir string, timeout time.Duration) ([]Transaction, error) {
	path := filepath.Join(dir, FileName)
	f, data, err := readLocked(path, false, timeout)
	if errors.Is(err, errLockTimeout) {
		return nil, fmt.Errorf("txncoord: read %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
	}
	f.Close()
	var records map[string][]byte
	if isLogFile(data) {
		st, err := decodeLog(data, path)
		if err != nil {
			return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
		}
		records = st.records
	} else {
		db, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("txncoord: read %s: %w", path, ErrInUse)
		}
		if err != nil {
			return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
		}
		_, records, err = readBolt(db, path)
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("txncoord: read %s: %w", path, err)
		}
	}
	out := make([]Transaction, 0, len(records))
	for _, id := range slices.Sorted(maps.Keys(records)) {
		r, err := decodeRecord(records[id])
		if err != nil { // checked by decodeLog and readBolt
			return nil, fmt.Errorf("txncoord: read %s: transactional id %q: %w", path, id, err)
		}
		t := txn{id: id, rec: r}
		out = append(out, t.describe())
	}
	return out, nil
}
