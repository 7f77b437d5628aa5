//go:build unix

package kafkaserver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupCommitsSurviveKill: every OffsetCommit answered before a
// SIGKILL of `logstore serve` is there after the restart (groups.db is
// committed, fsynced, before the answer). Commits are sent by several
// clients at once, so commits share fsyncs as they do in production.
func TestGroupCommitsSurviveKill(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	c := startChild(t, childSpec{Listen: addr, Advertise: addr, MetricsListen: freeAddr(t), SegmentBytes: 1 << 20})
	createTopic6(t, addr, "k")
	commit := func(cl *kgo.Client, group string, off int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "k"
		for p := range int32(6) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, off+int64(p)
			md := fmt.Sprintf("m%d", off)
			rp.Metadata = &md
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			return err
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
		return nil
	}
	const groups = 4
	last := make([]int64, groups)
	for round := range 3 {
		errs := make(chan error, groups)
		for g := range groups {
			go func() {
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
				if err != nil {
					errs <- err
					return
				}
				defer cl.Close()
				for i := range 50 {
					off := int64(round*1000 + i*10)
					if err := commit(cl, fmt.Sprintf("g%d", g), off); err != nil {
						errs <- err
						return
					}
					last[g] = off
				}
				errs <- nil
			}()
		}
		for range groups {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if err := c.kill(); err != nil {
			t.Fatal(err)
		}
		if err := c.start(); err != nil {
			t.Fatal(err)
		}
		for g := range groups {
			got := fetchCommitted(t, addr, fmt.Sprintf("g%d", g))
			for p := range 6 {
				if want := last[g] + int64(p); got[fmt.Sprintf("k-%d", p)] != want {
					t.Fatalf("round %d, group g%d after kill -9: committed %v, want partition %d at %d", round, g, got, p, want)
				}
			}
		}
	}
}
