package snapshot

import (
	"math"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/producerstate"
)

// TestDeleteNothingCommitsNothing: DeleteAbove and DeleteBelow with
// nothing to delete, as at most opens, commit no transaction (so bbolt
// syncs nothing); with something to delete they commit one.
func TestDeleteNothingCommitsNothing(t *testing.T) {
	s, _, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, off := range []int64{10, 20, 30} {
		if err := s.Save(producerstate.Snapshot{Offset: off}); err != nil {
			t.Fatal(err)
		}
	}
	txid := func() int {
		var id int
		if err := s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := txid()
	for name, f := range map[string]func() (int, error){
		"DeleteAbove(30)":       func() (int, error) { return s.DeleteAbove(30) },
		"DeleteAbove(MaxInt64)": func() (int, error) { return s.DeleteAbove(math.MaxInt64) },
		"DeleteBelow(10)":       func() (int, error) { return s.DeleteBelow(10) },
		"DeleteBelow(0)":        func() (int, error) { return s.DeleteBelow(0) },
	} {
		if n, err := f(); n != 0 || err != nil {
			t.Fatalf("%s = %d, %v", name, n, err)
		}
		if after := txid(); after != before {
			t.Fatalf("%s committed: transaction id %d, was %d", name, after, before)
		}
	}
	if n, err := s.DeleteAbove(25); n != 1 || err != nil {
		t.Fatalf("DeleteAbove(25) = %d, %v", n, err)
	}
	if after := txid(); after != before+1 {
		t.Fatalf("DeleteAbove(25): transaction id %d, want %d", after, before+1)
	}
}
