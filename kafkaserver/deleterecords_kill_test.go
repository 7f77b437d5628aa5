//go:build unix

package kafkaserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestE2EKillDuringDeleteRecords: `logstore serve` as a child process
// takes acknowledged produces and DeleteRecords (kadm) to random offsets
// of two partitions, in turn, with segments small enough that whole
// segments fall below the new starts; it is killed with SIGKILL at a
// random moment of each round. After each restart each partition starts
// at the low watermark last acknowledged, or, for a DeleteRecords the
// kill cut off, at the offset it asked for; every acknowledged record at
// or above the start is read back at its offset, a fetch below the
// start is OFFSET_OUT_OF_RANGE, and no segment wholly below the start is
// left on disk once the next roll's flush has run.
func TestE2EKillDuringDeleteRecords(t *testing.T) {
	t.Parallel()
	const topic = "trim"
	h := newKillHarness(t, topic, 2, 2048, "LOGSTORE_TRIM_KILL_SEED")
	ctx, rng, fail := h.ctx, h.rng, h.fail

	acked := [2]map[int64]string{{}, {}} // partition -> offset -> value
	var low, end [2]int64                // the low watermark last acknowledged; the end acknowledged
	rounds, deletes, cut := 6, 0, 0
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		admCl := h.client(kgo.RequestRetries(0))
		adm := kadm.NewClient(admCl)
		prod := h.producer()
		killing, dead := h.armKill(50, 400)
		asked := low // what a cut-off DeleteRecords asked for
	loop:
		for i := 0; i < 5000; i++ {
			p := rng.Int32N(2)
			if i%5 != 4 {
				v := fmt.Sprintf("r%d-%d", round, i)
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				r, err := prod.ProduceSync(cctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).First()
				ccancel()
				if err != nil {
					if !killing.Load() {
						fail("round %d: produce to partition %d before the kill: %v", round, p, err)
					}
					break loop
				}
				acked[p][r.Offset] = v
				end[p] = max(end[p], r.Offset+1)
				continue
			}
			to := low[p] + rng.Int64N(end[p]-low[p]+1)
			var o kadm.Offsets
			o.AddOffset(topic, p, to, -1)
			asked[p] = to
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			rs, err := adm.DeleteRecords(cctx, o)
			ccancel()
			r, _ := rs.Lookup(topic, p)
			if err == nil {
				err = r.Err
			}
			if err != nil {
				if !killing.Load() {
					fail("round %d: DeleteRecords(%d, %d) before the kill: %v", round, p, to, err)
				}
				break loop
			}
			if want := max(low[p], to); r.LowWatermark != want {
				fail("round %d: DeleteRecords(%d, %d): low watermark %d, want %d", round, p, to, r.LowWatermark, want)
			}
			low[p], asked[p] = r.LowWatermark, r.LowWatermark
			deletes++
		}
		dead()
		prod.Close()
		admCl.Close()
		h.restart()

		cl := h.client()
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
		if err != nil {
			fail("round %d: ListStartOffsets after the restart: %v", round, err)
		}
		for p := range int32(2) {
			s, _ := starts.Lookup(topic, p)
			if s.Err != nil || (s.Offset != low[p] && s.Offset != asked[p]) {
				fail("round %d: partition %d starts at %d (%v) after the restart; %d was acknowledged, %d asked for", round, p, s.Offset, s.Err, low[p], asked[p])
			}
			if s.Offset != low[p] {
				cut++
			}
			low[p] = s.Offset
			checkTrimmed(t, ctx, cl, topic, p, low[p], acked[p], fail)
		}
		cl.Close()
	}
	// Every flushed segment wholly below a start is gone: the store's
	// files, once the child has stopped.
	if err := h.c.stop(); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		pdir := filepath.Join(h.c.spec.Dir, fmt.Sprintf("%s-%d", topic, p))
		ents, err := os.ReadDir(pdir)
		if err != nil {
			t.Fatal(err)
		}
		var bases []int64
		for _, e := range ents {
			if b, ok := strings.CutSuffix(e.Name(), ".log"); ok {
				n, err := strconv.ParseInt(b, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
				bases = append(bases, n)
			}
		}
		sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
		if len(bases) > 1 && bases[1] <= low[p] {
			fail("partition %d starts at %d, and its segments %v hold one wholly below it", p, low[p], bases)
		}
	}
	t.Logf("seed %d: %d rounds, %d DeleteRecords acknowledged, %d cut off by a kill that left them done; starts %v, ends %v", h.seed, rounds, deletes, cut, low, end)
}

// checkTrimmed reads partition p from start and checks that every
// acknowledged record at or above it is at its offset, nothing below it
// comes back, and a fetch below it is OFFSET_OUT_OF_RANGE.
func checkTrimmed(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, start int64, acked map[int64]string, fail func(string, ...any)) {
	t.Helper()
	if start > 0 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.MaxWaitMillis = 12, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, start-1, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			fail("partition %d: fetch at %d: %v", p, start-1, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
			fail("partition %d: fetch at %d, below the start %d: code %d, want OFFSET_OUT_OF_RANGE", p, start-1, start, code)
		}
	}
	want := 0
	for off := range acked {
		if off >= start {
			want++
		}
	}
	if want == 0 {
		return
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(start)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seen := map[int64]bool{}
	for len(seen) < want && cctx.Err() == nil {
		rd.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
			if r.Offset < start {
				fail("partition %d: offset %d read, below the start %d", p, r.Offset, start)
			}
			if v, ok := acked[r.Offset]; ok {
				if string(r.Value) != v {
					fail("partition %d offset %d: %q, %q was acknowledged", p, r.Offset, r.Value, v)
				}
				seen[r.Offset] = true
			}
		})
	}
	if len(seen) != want {
		fail("partition %d: %d of the %d acknowledged records at or above %d read back", p, len(seen), want, start)
	}
}
