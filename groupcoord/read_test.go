package groupcoord

import (
	"errors"
	"io/fs"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	e := newEnv(t, Config{})
	if _, err := Read(t.TempDir(), time.Second); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v", err)
	}
	ids, gen := e.stable("g", 1)
	e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{
		{TopicPartition: TopicPartition{"t", 1}, Offset: 7, Metadata: "x"},
		{TopicPartition: TopicPartition{"t", 0}, Offset: 5},
	}})
	e.commit(CommitRequest{Group: "a-simple", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 1}}})
	// The coordinator holds the file: Read says it is in use.
	if _, err := Read(e.dir, 50*time.Millisecond); !errors.Is(err, ErrInUse) {
		t.Fatalf("while open: %v", err)
	}
	e.c.Close()
	gs, err := Read(e.dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].Group != "a-simple" || gs[1].Group != "g" {
		t.Fatalf("%+v", gs)
	}
	g := gs[1]
	if g.State != Stable || len(g.Members) != 1 || g.Members[0].MemberID != ids[0] || g.Leader != ids[0] || string(g.Members[0].Assignment) != "assignment of "+ids[0] {
		t.Fatalf("members %+v", g)
	}
	if g.ProtocolType != "consumer" || g.Generation != gen || len(g.Offsets) != 2 || g.Offsets[0].Partition != 0 || g.Offsets[1].Offset != 7 || g.Offsets[1].Metadata != "x" {
		t.Fatalf("%+v", g)
	}
	e.open()
}
