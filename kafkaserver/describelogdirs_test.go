package kafkaserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// logFilesSize is the sum of the .log files' sizes in dir.
func logFilesSize(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

// TestDescribeLogDirs: after producing, kadm's DescribeAllLogDirs (kgo
// at its newest version, v4) names one directory, the store's absolute
// path, with every partition at the size of its .log files on disk;
// asked partitions only, an unknown topic or partition left out; v4's
// total and usable bytes of the filesystem; an empty topic list answers
// no topics.
func TestDescribeLogDirs(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("a", 2)
	ts.createTopic("b", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 20; i++ {
		rs := []*kgo.Record{
			{Topic: "a", Partition: 0, Value: []byte(strings.Repeat("x", 100+i))},
			{Topic: "b", Partition: 0, Value: []byte("y")},
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := filepath.Abs(ts.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[0]
	if len(all) != 1 || len(dirs) != 1 {
		t.Fatalf("log dirs: %+v", all)
	}
	d, ok := dirs[dir]
	if !ok || d.Err != nil {
		t.Fatalf("log dirs %+v, want %s", dirs, dir)
	}
	want := map[string][]int32{"a": {0, 1}, "b": {0}}
	if len(d.Topics) != len(want) {
		t.Fatalf("topics %+v", d.Topics)
	}
	for topic, ps := range want {
		if len(d.Topics[topic]) != len(ps) {
			t.Fatalf("topic %s: %+v", topic, d.Topics[topic])
		}
		for _, p := range ps {
			got := d.Topics[topic][p]
			size := logFilesSize(t, filepath.Join(ts.store.Dir(), logstore.PartitionID{Topic: topic, Partition: p}.String()))
			if got.Size != size || got.OffsetLag != 0 || got.IsFuture {
				t.Fatalf("%s-%d: %+v, want size %d", topic, p, got, size)
			}
			if (p == 0) != (size > 0) {
				t.Fatalf("%s-%d: size %d on disk after producing to partition 0 only", topic, p, size)
			}
		}
	}

	var set kadm.TopicsSet
	set.Add("a", 1)
	some, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	d = some[0][dir]
	if len(d.Topics) != 1 || len(d.Topics["a"]) != 1 || d.Topics["a"][1].Size != 0 {
		t.Fatalf("asked a-1: %+v", d.Topics)
	}

	// Unknown topics and partitions, which kgo's sharding refuses before
	// asking, straight on the wire.
	c := ts.dial()
	r := kmsg.NewPtrDescribeLogDirsRequest()
	for topic, ps := range map[string][]int32{"a": {1, 7, -1, 1}, "nope": {0}, "b": {3}} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		r.Topics = append(r.Topics, rt)
	}
	for v := int16(0); v <= 4; v++ {
		r.Version = v
		resp := c.do(r).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].Topics[0].Topic != "a" ||
			len(resp.Dirs[0].Topics[0].Partitions) != 1 || resp.Dirs[0].Topics[0].Partitions[0].Partition != 1 {
			t.Fatalf("v%d asked a-1 (twice), a-7, a--1, nope-0, b-3: %+v", v, resp.Dirs)
		}
	}

	r = kmsg.NewPtrDescribeLogDirsRequest()
	r.Version = 4
	resp := c.do(r).(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
		t.Fatalf("v4: %+v", resp)
	}
	if rd := resp.Dirs[0]; rd.UsableBytes <= 0 || rd.TotalBytes < rd.UsableBytes {
		t.Fatalf("v4: total %d usable %d", rd.TotalBytes, rd.UsableBytes)
	}
	r.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	resp = c.do(r).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != dir || len(resp.Dirs[0].Topics) != 0 {
		t.Fatalf("empty topic list: %+v", resp)
	}
}
