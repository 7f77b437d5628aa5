package logstore_test

// The harness of TestConcurrentAppendsAndCrash: producers appending from
// many goroutines to several partitions of one store on a crashfs.FS,
// with crash images taken while they run.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// concAck is an acknowledged batch of the concurrent test.
type concAck struct {
	part       int
	pid        int64
	seq        int32
	n          int
	base, last int64
}

// concBatch is the batch producer pid sends with seq: the same bytes on
// every retry.
func concBatch(pid int64, seq int32, n int) []byte {
	return producerBatch(pid, 0, seq, n, crashtest.Timestamp+int64(seq))
}

// concImage is a crash image taken while the producers ran: the
// filesystem, each partition's snapshot db, and the acks before it.
type concImage struct {
	mode crashfs.Mode
	fs   *crashfs.FS
	dbs  [][]byte
	acks []concAck
}

// concRecorder records acks and takes crash images when their count
// reaches a trigger.
type concRecorder struct {
	mu       sync.Mutex
	acks     []concAck
	triggers map[int]bool
	fire     chan struct{}
}

func (r *concRecorder) ack(a concAck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
	if r.triggers[len(r.acks)] {
		r.fire <- struct{}{}
	}
}

// image reads the dbs, then takes the acks so far and crashes fs: every
// ack taken was fsynced before the crash.
func (r *concRecorder) image(fs *crashfs.FS, dbPaths []string, mode crashfs.Mode, seed uint64) (concImage, error) {
	img := concImage{mode: mode}
	for _, p := range dbPaths {
		db, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			return img, err
		}
		img.dbs = append(img.dbs, db)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	img.acks = append([]concAck(nil), r.acks...)
	img.fs = fs.Crash(mode, crashtest.RNG(seed, uint64(len(r.acks))))
	return img, nil
}

// checkConcurrent opens a store on img and checks every partition: a
// valid log from offset 0 in which every batch is one a producer sent,
// each producer's batches in sequence order without gaps and none twice,
// every batch acknowledged before the crash present at its offsets, the
// producer state that of a full replay, and retries of each producer's
// window answered DUPLICATE.
func checkConcurrent(root string, topics []string, opts logstore.Options, img concImage) error {
	for i, topic := range topics {
		pdir := filepath.Join(root, topic+"-0")
		if err := os.RemoveAll(pdir); err != nil {
			return err
		}
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		if img.dbs[i] != nil {
			if err := os.WriteFile(filepath.Join(pdir, snapshot.FileName), img.dbs[i], 0o644); err != nil {
				return err
			}
		}
	}
	opts = opts.WithFS(img.fs)
	opts.LockTimeout = -1
	s, err := logstore.Open(root, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	for i, topic := range topics {
		p, err := s.Partition(topic, 0)
		if err != nil {
			return err
		}
		if err := checkConcurrentPartition(p, i, img.acks); err != nil {
			return fmt.Errorf("partition %s: %w", topic, err)
		}
	}
	return s.Close()
}

func checkConcurrentPartition(p *logstore.Partition, part int, acks []concAck) error {
	log, err := crashtest.ReadLog(p)
	if err != nil {
		return err
	}
	type key struct {
		pid int64
		seq int32
	}
	at := map[key]recordbatch.Batch{}
	next := map[int64]int32{}
	want := producerstate.New(producerstate.Config{})
	off := int64(0)
	for _, b := range log {
		if b.BaseOffset() != off {
			return fmt.Errorf("batch at %d where %d was expected", b.BaseOffset(), off)
		}
		k := key{b.ProducerID(), b.BaseSequence()}
		if _, dup := at[k]; dup {
			return fmt.Errorf("producer %d seq %d written twice (again at %d)", k.pid, k.seq, b.BaseOffset())
		}
		if k.seq != next[k.pid] {
			return fmt.Errorf("producer %d: seq %d at %d, expected %d", k.pid, k.seq, b.BaseOffset(), next[k.pid])
		}
		if sent := crashtest.Stamp(concBatch(k.pid, k.seq, int(b.NumRecords())), b.BaseOffset()); !bytes.Equal(sent, b) {
			return fmt.Errorf("batch at %d is not the one producer %d sent with seq %d", b.BaseOffset(), k.pid, k.seq)
		}
		at[k] = b
		next[k.pid] = k.seq + b.NumRecords()
		if err := want.Apply(b, crashtest.Clock()); err != nil { // the store's fixed clock: seen times equal too
			return err
		}
		off = b.LastOffset() + 1
	}
	for _, a := range acks {
		if a.part != part {
			continue
		}
		b, ok := at[key{a.pid, a.seq}]
		if !ok || b.BaseOffset() != a.base || b.LastOffset() != a.last {
			return fmt.Errorf("acknowledged batch of producer %d seq %d at %d..%d: missing or moved (log ends at %d)", a.pid, a.seq, a.base, a.last, off)
		}
	}
	want.SetMapEndOffset(p.EndOffset())
	if got := p.ProducerSnapshot(); !got.Equal(want.Snapshot()) {
		return fmt.Errorf("producer state is not a full replay:\n got %+v\nwant %+v", got, want.Snapshot())
	}
	for _, pe := range want.Snapshot().Producers {
		for _, m := range pe.Batches {
			res, err := p.Append(concBatch(pe.ProducerID, m.FirstSeq, int(m.LastSeq-m.FirstSeq)+1))
			if err != nil || !res.Duplicate || res.BaseOffset != m.FirstOffset || res.LastOffset != m.LastOffset {
				return fmt.Errorf("retry of producer %d seq %d: %+v, %v; want DUPLICATE %d..%d", pe.ProducerID, m.FirstSeq, res, err, m.FirstOffset, m.LastOffset)
			}
		}
	}
	return nil
}
