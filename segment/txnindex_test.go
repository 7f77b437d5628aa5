package segment

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseTxnIndexRefuses(t *testing.T) {
	e := func(pid, first, last, lso int64) []byte {
		return AppendTxnEntry(nil, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso})
	}
	good := append(e(1, 10, 12, 13), e(2, 11, 14, 15)...)
	if got, whole, err := ParseTxnIndex("x", append(good, 0, 0, 1), 10); err != nil || len(got) != 2 || whole != int64(len(good)) {
		t.Fatalf("good file: %v %d %v", got, whole, err)
	}
	for name, data := range map[string][]byte{
		"version 1":        append([]byte{0, 1}, e(1, 10, 12, 13)[2:]...),
		"below base":       e(1, 1, 5, 6),
		"not increasing":   append(e(1, 10, 12, 13), e(2, 10, 12, 13)...),
		"first after last": e(1, 13, 12, 13),
		"negative first":   e(1, -1, 12, 13),
	} {
		_, _, err := ParseTxnIndex("x.txnindex", data, 10)
		var ce *CorruptionError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.File != "x.txnindex" {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func FuzzParseTxnIndex(f *testing.F) {
	f.Add(AppendTxnEntry(nil, AbortedTxn{ProducerID: 5, FirstOffset: 12, LastOffset: 16, LastStableOffset: 8}), int64(0))
	f.Add([]byte{0, 0, 1}, int64(3))
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		got, whole, err := ParseTxnIndex("f", data, base)
		if err != nil {
			return
		}
		if whole > int64(len(data)) || whole%TxnEntrySize != 0 {
			t.Fatalf("whole %d of %d bytes", whole, len(data))
		}
		var enc []byte
		for _, e := range got {
			enc = AppendTxnEntry(enc, e)
		}
		if !bytes.Equal(enc, data[:whole]) {
			t.Fatalf("round trip differs")
		}
	})
}
