//go:build unix

package kafkaserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/catalog"
)

// TestE2EKillDuringCreatePartitions: `logstore serve` as a child process
// grows a topic again and again (kadm UpdatePartitions, one or two
// partitions at a time) between acknowledged produces, and is killed
// with SIGKILL at a random moment of each round. After each restart the
// topic has the count last acknowledged or the one being asked for,
// exactly that many partition directories, each with a partition.metadata
// naming the topic's id, and every acknowledged record where it was
// acknowledged; the next growth works.
func TestE2EKillDuringCreatePartitions(t *testing.T) {
	t.Parallel()
	const topic = "grow9"
	h := newKillHarness(t, topic, 1, 1<<20, "LOGSTORE_GROW_KILL_SEED")
	ctx, rng, fail, newClient := h.ctx, h.rng, h.fail, h.client

	count := int32(1)                     // the count last acknowledged
	acked := map[int32]map[int64]string{} // partition -> offset -> value
	rounds, grown, midGrowth := 6, 0, 0
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		admCl := newClient(kgo.RequestRetries(0))
		adm := kadm.NewClient(admCl)
		prod := h.producer()
		// kgo knows these partitions from its first metadata.
		known := count
		killing, dead := h.armKill(20, 300)
		attempt := count
		for i := 0; count < 1000; i++ {
			attempt = count + 1 + rng.Int32N(2)
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			rs, err := adm.UpdatePartitions(cctx, int(attempt), topic)
			ccancel()
			if err == nil {
				err = rs[topic].Err
			}
			if err != nil {
				if !killing.Load() {
					fail("round %d: UpdatePartitions(%d) before the kill: %v", round, attempt, err)
				}
				break
			}
			count = attempt
			grown++
			p := rng.Int32N(known)
			v := fmt.Sprintf("r%d-%d", round, i)
			cctx, ccancel = context.WithTimeout(ctx, 5*time.Second)
			r, err := prod.ProduceSync(cctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).First()
			ccancel()
			if err != nil {
				if !killing.Load() {
					fail("round %d: produce to partition %d before the kill: %v", round, p, err)
				}
				attempt = count
				break
			}
			if acked[p] == nil {
				acked[p] = map[int64]string{}
			}
			acked[p][r.Offset] = v
		}
		dead()
		prod.Close()
		admCl.Close()
		h.restart()

		// The topic after the restart.
		admCl = newClient()
		adm = kadm.NewClient(admCl)
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || td[topic].Err != nil {
			fail("round %d: ListTopics after the restart: %v, %+v", round, err, td)
		}
		n := int32(len(td[topic].Partitions))
		if n != count && n != attempt {
			fail("round %d: %d partitions after the restart; %d were acknowledged, %d asked for", round, n, count, attempt)
		}
		if n != count {
			midGrowth++
		}
		checkGrowDirs(t, h.c.spec.Dir, topic, td[topic].ID, n, fail)
		checkAcked(t, ctx, newClient, topic, acked, fail)
		admCl.Close()
		count = n
	}
	t.Logf("seed %d: %d rounds, %d growths acknowledged, %d kills between a growth's request and its answer that left it done, %d partitions", h.seed, rounds, grown, midGrowth, count)
}

// checkGrowDirs checks the child's store directory: exactly n partition
// directories of topic, 0..n-1, each with a partition.metadata naming id.
func checkGrowDirs(t *testing.T, dir, topic string, id [16]byte, n int32, fail func(string, ...any)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, e := range entries {
		num, ok := strings.CutPrefix(e.Name(), topic+"-")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(num)
		if err != nil || p < 0 || p >= int(n) {
			fail("directory %s: not a partition of %s's %d", e.Name(), topic, n)
		}
		seen[p] = true
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), catalog.MetadataFileName))
		if err != nil || !bytes.Equal(data, catalog.EncodePartitionMetadata(id)) {
			fail("%s/partition.metadata: %q, %v", e.Name(), data, err)
		}
	}
	if len(seen) != int(n) {
		fail("%d partition directories of %s, Metadata says %d", len(seen), topic, n)
	}
}

// checkAcked reads every partition that acknowledged records from its
// start and checks each acknowledged record is at its offset.
func checkAcked(t *testing.T, ctx context.Context, newClient func(...kgo.Opt) *kgo.Client, topic string, acked map[int32]map[int64]string, fail func(string, ...any)) {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	want := 0
	for p, recs := range acked {
		parts[p] = kgo.NewOffset().AtStart()
		want += len(recs)
	}
	if want == 0 {
		return
	}
	cl := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	defer cl.Close()
	found := 0
	got := map[int32]map[int64]string{}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for found < want && cctx.Err() == nil {
		cl.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
			if v, ok := acked[r.Partition][r.Offset]; ok {
				if got[r.Partition] == nil {
					got[r.Partition] = map[int64]string{}
				}
				if _, dup := got[r.Partition][r.Offset]; !dup {
					found++
				}
				got[r.Partition][r.Offset] = string(r.Value)
				if string(r.Value) != v {
					fail("partition %d offset %d: %q, %q was acknowledged", r.Partition, r.Offset, r.Value, v)
				}
			}
		})
	}
	if found != want {
		fail("%d of %d acknowledged records read back", found, want)
	}
}
