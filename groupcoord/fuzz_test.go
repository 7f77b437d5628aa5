package groupcoord

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// fuzzRoundTrip fuzzes decode: what it decodes must encode back to the
// same bytes, and what it refuses must be a decodeError inside them.
func fuzzRoundTrip[R interface{ encode() []byte }](f *testing.F, decode func([]byte) (R, error)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decode(b)
		if err != nil {
			checkDecodeError(t, err, b)
			return
		}
		if string(r.encode()) != string(b) {
			t.Fatalf("round trip %x -> %+v", b, r)
		}
	})
}

// checkDecodeError fails the test unless err is a *decodeError at an
// offset within b.
func checkDecodeError(t *testing.T, err error, b []byte) {
	t.Helper()
	var de *decodeError
	if !errors.As(err, &de) || de.offset < 0 || de.offset > len(b) {
		t.Fatalf("error %v", err)
	}
}

func FuzzDecodeOffsetRecord(f *testing.F) {
	f.Add(offsetRecord{offset: 5, leaderEpoch: 2, metadata: "m", commitMs: 7, expireMs: -1}.encode())
	f.Add([]byte{1})
	fuzzRoundTrip(f, decodeOffsetRecord)
}

// FuzzDecodeGroupRecord: versions 1 and 2; what decodes encodes back
// to the same bytes, in its version.
func FuzzDecodeGroupRecord(f *testing.F) {
	f.Add(groupRecord{generation: 3, protocolType: "consumer", emptyMs: -1}.encodeV1())
	f.Add(groupRecord{generation: 3, protocolType: "consumer", emptyMs: 5}.encode())
	f.Add(groupRecord{state: Stable, generation: 3, protocolType: "consumer", emptyMs: -1, protocol: "range", leader: "a",
		members: []memberRecord{{id: "a", instanceID: "i", clientID: "c", clientHost: "h", rebalanceMs: 1, sessionMs: 2, metadata: []byte("m"), assignment: []byte("x")}, {id: "b"}}}.encode())
	f.Add([]byte{1, 0})
	f.Add([]byte{2, 3})
	fuzzRoundTrip(f, decodeGroupRecord)
}

func FuzzDecodeOffsetKey(f *testing.F) {
	f.Add(offsetKey("group", TopicPartition{"topic", 3}))
	f.Add([]byte{0, 1, 'g'})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, tp, err := decodeOffsetKey(b)
		if err != nil {
			checkDecodeError(t, err, b)
			return
		}
		if string(offsetKey(g, tp)) != string(b) {
			t.Fatalf("round trip %x -> %q %+v", b, g, tp)
		}
	})
}

// TestDamagedFile: Open refuses a bbolt file it cannot read, naming the
// file and, for a record, the bucket, key and byte (the record file's
// damage: TestRecordFileDamage).
func TestDamagedFile(t *testing.T) {
	t.Run("garbage", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), make([]byte, 8192), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Config{})
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("got %v", err)
		}
	})
	// A bbolt file of format 1 that does not decode: the conversion
	// refuses it as the previous build did.
	damage := func(t *testing.T, fn func(tx *bolt.Tx) error) error {
		dir := t.TempDir()
		writeBolt(t, filepath.Join(dir, FileName), fn)
		_, err := Open(dir, Config{Clock: newFakeClock()})
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("got %v", err)
		}
		return err
	}
	t.Run("offset record", func(t *testing.T) {
		err := damage(t, func(tx *bolt.Tx) error {
			v := offsetRecord{offset: 1, expireMs: -1, metadata: "abc"}.encode()
			return tx.Bucket(bucketOffsets).Put(offsetKey("g", TopicPartition{"t", 0}), v[:len(v)-1])
		})
		var de *DamagedError
		if !errors.As(err, &de) || de.Bucket != "offsets" || de.Offset != 29 || de.InKey {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("offset key", func(t *testing.T) {
		err := damage(t, func(tx *bolt.Tx) error {
			return tx.Bucket(bucketOffsets).Put([]byte{0, 9, 'g'}, offsetRecord{expireMs: -1}.encode())
		})
		var de *DamagedError
		if !errors.As(err, &de) || !de.InKey {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("group record", func(t *testing.T) {
		damage(t, func(tx *bolt.Tx) error {
			return tx.Bucket(bucketGroups).Put([]byte("g"), []byte{2, 0, 0})
		})
	})
	t.Run("format version", func(t *testing.T) {
		damage(t, func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyVersion, []byte{9})
		})
	})
}

func FuzzDecodePendingKey(f *testing.F) {
	f.Add(pendingKey("group", TopicPartition{"topic", 3}, 42))
	f.Add([]byte{0, 1, 'g', 0, 1, 't', 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, tp, pid, err := decodePendingKey(b)
		if err != nil {
			checkDecodeError(t, err, b)
			return
		}
		if string(pendingKey(g, tp, pid)) != string(b) {
			t.Fatalf("round trip %x", b)
		}
	})
}
