package kafkaserver_test

// Scenarios 5 and 7 of issue 13: graceful restarts of an in-process
// server during a run, and a restart with the newest producer snapshot
// of every partition corrupted.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/snapshot"
)

// restarter calls restart every d, want times, from a goroutine; done is
// closed after the last. stop ends it early and waits for it; it is also
// a cleanup of t, so a test that fails first leaves no goroutine behind.
func restarter(t *testing.T, d time.Duration, want int, restart func() error) (done <-chan struct{}, stop func()) {
	finished := make(chan struct{})
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range want {
			select {
			case <-quit:
				return
			case <-time.After(d):
			}
			if err := restart(); err != nil {
				t.Errorf("restart: %v", err)
				return
			}
		}
		close(finished)
	}()
	stop = sync.OnceFunc(func() { close(quit); wg.Wait() })
	t.Cleanup(stop)
	return finished, stop
}

// TestE2EGracefulRestarts: scenario 5. Every 2 s (400 ms in short mode),
// three times, the server is shut down (answering what is in flight), its
// store closed and reopened, and the server started on the same port
// again, while kgo produces at about a record a millisecond (the last
// record waits for the last restart); kgo reconnects and goes on.
func TestE2EGracefulRestarts(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{SegmentBytes: 4096}, kafkaserver.Config{})
	interval := 2 * time.Second
	if testing.Short() {
		interval = 400 * time.Millisecond
	}
	const restarts = 3
	restarted, stop := restarter(t, interval, restarts, func() error { return s.restart(nil) })
	n := e2eRecords()
	brokers := []string{p.Addr()}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "restarts", Records: n, MaxBuffered: 16,
		Before: func(ctx context.Context, _ *kgo.Client, i int) {
			select {
			case <-ctx.Done():
			case <-time.After(time.Millisecond):
			}
			if i == n-1 {
				select {
				case <-ctx.Done():
				case <-restarted:
				}
			}
		}})
	stop()
	select {
	case <-restarted:
	default:
		t.Fatalf("fewer than %d restarts during the run", restarts)
	}
	t.Logf("%d restarts; proxy: %+v", restarts, p.Counts())
	checkBoth(t, s, brokers, p, res)
}

// corruptNewestSnapshots flips a byte of the newest snapshot in each
// partition directory of topic (no process may have the store open),
// checks that it no longer decodes, and returns how many it spoiled.
func corruptNewestSnapshots(t *testing.T, dir, topic string, partitions int32) (int, error) {
	spoiled := 0
	for p := range partitions {
		path := filepath.Join(dir, logstore.PartitionID{Topic: topic, Partition: p}.String(), snapshot.FileName)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
		if err != nil {
			return spoiled, fmt.Errorf("%s: %w", path, err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("producer-snapshots"))
			if b == nil {
				return nil
			}
			k, v := b.Cursor().Last()
			if k == nil {
				return nil
			}
			bad := append([]byte(nil), v...)
			bad[len(bad)-1] ^= 0x5a // covered by the value's CRC
			if _, err := snapshot.DecodeValue(bad); err == nil {
				return errors.New("the spoiled snapshot still decodes")
			}
			spoiled++
			t.Logf("spoiled the snapshot at offset %d of %s-%d", binary.BigEndian.Uint64(k), topic, p)
			return b.Put(k, bad)
		})
		if err := errors.Join(err, db.Close()); err != nil {
			return spoiled, fmt.Errorf("%s: %w", path, err)
		}
	}
	return spoiled, nil
}

// TestE2ECorruptNewestSnapshot: scenario 7. Halfway through, every
// Produce answer is swallowed (after the append, the connection closed)
// until the server has written one; then the server is shut down, the
// newest snapshot of each partition (the one its clean close wrote) is
// spoiled, and the server started again. The store must skip the spoiled
// snapshots, rebuild the producer state from an older one and the log
// tail, and answer kgo's retries of the swallowed answers as duplicates
// with their first offsets; had it lost the producers, kgo would get an
// error and stop on data loss.
func TestE2ECorruptNewestSnapshot(t *testing.T) {
	t.Parallel()
	const topic = "snapcorrupt"
	s, p := newProxied(t, logstore.Options{SegmentBytes: 2048}, kafkaserver.Config{})
	n := e2eRecords()
	var (
		wg      sync.WaitGroup
		spoiled int
		skipped int
	)
	t.Cleanup(wg.Wait) // before the server stops, if the test fails first
	w := &kafkatest.Workload{Topic: topic, Records: n, MaxBuffered: 16, Before: func(ctx context.Context, _ *kgo.Client, i int) {
		if i != n/2 {
			return
		}
		p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 1, kafkatest.DropAndClose)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.Counts().ProduceDropped == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			var cerr error
			err := s.restart(func(dir string) {
				p.SetRules(kafkatest.Rules{})
				spoiled, cerr = corruptNewestSnapshots(t, dir, topic, 3)
			})
			if err = errors.Join(err, cerr); err != nil {
				t.Errorf("restart: %v", err)
				return
			}
			st := s.store()
			for pn := range int32(3) {
				part, err := st.Partition(topic, pn)
				if err != nil {
					t.Errorf("partition %d: %v", pn, err)
					return
				}
				skipped += len(part.Startup().SkippedSnapshots)
			}
		}()
	}}
	brokers := []string{p.Addr()}
	res := produce(t, brokers, w)
	wg.Wait()
	c := p.Counts()
	t.Logf("spoiled %d snapshots, %d skipped at open; proxy: %+v", spoiled, skipped, c)
	if spoiled != 3 || skipped != 3 {
		t.Fatalf("spoiled %d snapshots and the store skipped %d, want 3 and 3", spoiled, skipped)
	}
	if dup := s.outcome(metrics.OutcomeDuplicate); c.ProduceRepeats == 0 || dup < float64(c.ProduceRepeats) {
		t.Fatalf("%d answers swallowed before the restart; %d retries answered with a repeated offset, %v duplicates counted", c.ProduceDropped, c.ProduceRepeats, dup)
	}
	checkBoth(t, s, brokers, p, res)
}
