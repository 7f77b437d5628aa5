package groupcoord

import (
	"testing"
)

// TestOffsetsPartition: Kafka's partitionFor (abs(hashCode) % 50), on
// values computed with Java's String.hashCode.
func TestOffsetsPartition(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  int32
	}{
		{"", 0},
		{"a", 97 % 50},                 // "a".hashCode() = 97
		{"group", 98629247 % 50},       // "group".hashCode() = 98629247
		{"polygenelubricants", 0},      // hashCode() = Integer.MIN_VALUE: abs is 0
		{"test-group", 627841412 % 50}, // "test-group".hashCode() = 627841412
	} {
		if got := OffsetsPartition(tc.group); got != tc.want {
			t.Errorf("OffsetsPartition(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
}

func (e *env) commitTxn(req TxnCommitRequest) []Code {
	e.t.Helper()
	ch := make(chan []Code, 1)
	e.c.CommitTxn(req, func(c []Code) { ch <- c })
	return <-ch
}

func TestTxnOffsetsCommitAbortReopen(t *testing.T) {
	e := newEnv(t, Config{})
	tp := TopicPartition{"t", 0}
	part := OffsetsPartition("g")
	off := func(o int64) []OffsetCommit {
		return []OffsetCommit{{TopicPartition: tp, Offset: o, LeaderEpoch: -1, Metadata: "tx"}}
	}
	// Pending offsets: not visible, and unstable when asked for stable.
	if c := e.commitTxn(TxnCommitRequest{Group: "g", Generation: -1, ProducerID: 7, Offsets: off(10)}); c[0] != None {
		t.Fatal(c)
	}
	got, _ := e.c.Fetch("g", []TopicPartition{tp}, false)
	if got[0].Offset != -1 {
		t.Fatalf("pending offset visible: %+v", got)
	}
	if got, _ := e.c.Fetch("g", []TopicPartition{tp}, true); got[0].Code != UnstableOffsetCommit {
		t.Fatalf("require stable: %+v", got)
	}
	// A marker of another partition or producer does nothing.
	if err := e.c.CompleteTxn(7, (part+1)%50, true); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CompleteTxn(8, part, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.Fetch("g", []TopicPartition{tp}, false); got[0].Offset != -1 {
		t.Fatalf("%+v", got)
	}
	// Pending offsets survive a restart (the transaction may commit after it).
	e.reopen()
	if got, _ := e.c.Fetch("g", []TopicPartition{tp}, true); got[0].Code != UnstableOffsetCommit {
		t.Fatalf("pending lost at reopen: %+v", got)
	}
	if err := e.c.CompleteTxn(7, part, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.Fetch("g", []TopicPartition{tp}, true); got[0].Offset != 10 || got[0].Metadata != "tx" || got[0].Code != None {
		t.Fatalf("after commit: %+v", got)
	}
	// A second transaction, aborted: the committed offset stays.
	e.commitTxn(TxnCommitRequest{Group: "g", Generation: -1, ProducerID: 7, Offsets: off(20)})
	if err := e.c.CompleteTxn(7, part, false); err != nil {
		t.Fatal(err)
	}
	// The marker again (a restart of the transaction coordinator writes
	// it again): nothing changes.
	if err := e.c.CompleteTxn(7, part, true); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if got, _ := e.c.Fetch("g", []TopicPartition{tp}, true); got[0].Offset != 10 || got[0].Code != None {
		t.Fatalf("after abort and reopen: %+v", got)
	}
}

func TestTxnOffsetsMemberChecks(t *testing.T) {
	e := newEnv(t, Config{})
	ids, gen := e.stable("g", 1)
	o := []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 3}}
	if c := e.commitTxn(TxnCommitRequest{Group: "g", MemberID: ids[0], Generation: gen + 1, ProducerID: 1, Offsets: o}); c[0] != IllegalGeneration {
		t.Fatal(c)
	}
	if c := e.commitTxn(TxnCommitRequest{Group: "g", MemberID: "x", Generation: gen, ProducerID: 1, Offsets: o}); c[0] != UnknownMemberID {
		t.Fatal(c)
	}
	// Transactional commits without a generation are accepted in a group
	// with members (unlike plain ones).
	if c := e.commitTxn(TxnCommitRequest{Group: "g", Generation: -1, ProducerID: 1, Offsets: o}); c[0] != None {
		t.Fatal(c)
	}
	if c := e.commitTxn(TxnCommitRequest{Group: "g", MemberID: ids[0], Generation: gen, ProducerID: 1, Offsets: o}); c[0] != None {
		t.Fatal(c)
	}
}
