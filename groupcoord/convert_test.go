package groupcoord

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureV1 is a groups.db of format 1 (bbolt) as the last build with
// the bbolt format wrote it, with GROUPCOORD_WRITE_FIXTURE=1 (see
// writeFixtureV1): a consumer group with a member's offsets, a simple
// consumer's offsets, a transaction's pending offsets, a deleted group.
const fixtureV1 = "testdata/groups-v1.db"

// writeFixtureV1 runs the workload of the fixture in dir.
func writeFixtureV1(t *testing.T, dir string) {
	e := &env{t: t, dir: dir, clk: newFakeClock()}
	e.cfg = Config{Clock: e.clk, InitialRebalanceDelay: testDelay}
	e.open()
	ids, gen := e.stable("g", 2)
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{
		{TopicPartition: TopicPartition{"t", 0}, Offset: 5, LeaderEpoch: 3, Metadata: "m0"},
		{TopicPartition: TopicPartition{"t", 1}, Offset: 7, LeaderEpoch: -1},
	}}); c[0] != None {
		t.Fatal(c)
	}
	e.commit(CommitRequest{Group: "simple", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 1}}})
	e.commit(CommitRequest{Group: "gone", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 2}}})
	done := make(chan []Code, 1)
	e.c.DeleteGroups([]string{"gone"}, func(c []Code) { done <- c })
	if c := <-done; c[0] != None {
		t.Fatal(c)
	}
	if c := e.commitTxn(TxnCommitRequest{Group: "tx", Generation: -1, ProducerID: 7, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"v", 2}, Offset: 10, Metadata: "pending"}}}); c[0] != None {
		t.Fatal(c)
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFixtureV1(t *testing.T) {
	if os.Getenv("GROUPCOORD_WRITE_FIXTURE") == "" {
		t.Skip("writes the fixture with GROUPCOORD_WRITE_FIXTURE=1, on a build of the bbolt format")
	}
	dir := t.TempDir()
	writeFixtureV1(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureV1, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
