package txncoord_test

// The coordinator under simulated power loss, in the style of the
// catalog's crash harness (catalog/crash_store_test.go). A workload of
// transactions over 3 partitions of a real logstore.Store on a
// crashfs.FS, with markers through txncoord.StoreMarkers, records a crash
// point after every filesystem operation of the partitions and after
// every transactions.db commit. transactions.db, the coordinator's
// append-only record file (converted at the first Open from the bbolt
// file of the previous version), is on the real OS; its bytes are taken
// as each commit finished, from txncoord.Config.OnCommit.
//
// Each point is crashed in a mode the seed picks. On the image, the
// store and the coordinator are opened: the coordinator finishes what it
// had decided, then a new producer of each id aborts what was still
// ongoing. Every transaction must then be committed in every partition
// that holds its data or aborted in all of them, as acknowledged when it
// was, and no partition may hold an open transaction.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/txncoord"
)

const coordTopic = "tx"

var coordTPs = []txncoord.TopicPartition{{Topic: coordTopic, Partition: 0}, {Topic: coordTopic, Partition: 1}, {Topic: coordTopic, Partition: 2}}

// coordPoint is one moment of the workload.
type coordPoint struct {
	what  string
	fs    *crashfs.FS
	txnDB []byte       // transactions.db as last committed
	tmp   []byte       // transactions.db.new as a crash left it (nil: none)
	acked map[int]bool // transaction number -> commit, as answered by then
	asked map[int]bool // transaction number -> true: EndTxn(commit) was called by then
	// mayExpire: the expiry of the idle ids A, B and C may be durable;
	// expired: it is (the coordinator reported it).
	mayExpire, expired bool
}

// coordTorn is a commit that appended to transactions.db: a crash
// before its sync returned leaves any prefix of its frame after prev.
type coordTorn struct {
	point     coordPoint // as the commit finished, the file as before it
	prev, cur []byte
}

// coordDataKey names a transactional data batch in a partition.
type coordDataKey struct {
	partition int32
	pid       int64
	epoch     int16
	seq       int32
}

type coordCrashRun struct {
	root    string
	fs      *crashfs.FS
	mu      sync.Mutex // held by the workload except while it calls the store or coordinator
	what    string
	lastDB  []byte
	acked   map[int]bool
	asked   map[int]bool
	points  []coordPoint
	err     error
	snapDBs map[string][]byte // each partition's producer-snapshots.db, which the workload does not change
	torn    []coordTorn
	// rewrites counts the times transactions.db was written anew: Open's
	// conversion of the bbolt file, then compactions.
	rewrites int
	// expiring, expired: as coordPoint's mayExpire and expired, now.
	expiring, expired bool
}

func (r *coordCrashRun) txnDBPath() string { return filepath.Join(r.root, txncoord.FileName) }

func (r *coordCrashRun) point(what string) {
	r.points = append(r.points, coordPoint{what: what, fs: r.fs.Clone(), txnDB: r.lastDB, acked: maps.Clone(r.acked), asked: maps.Clone(r.asked), mayExpire: r.expiring, expired: r.expired})
}

// outside runs fn without r.mu, so the hooks it triggers can record.
func (r *coordCrashRun) outside(fn func()) {
	r.mu.Unlock()
	defer r.mu.Lock()
	fn()
}

func TestCoordinatorCrashRecovery(t *testing.T) {
	r := &coordCrashRun{root: t.TempDir(), acked: map[int]bool{}, asked: map[int]bool{}, snapDBs: map[string][]byte{}}
	// The partitions' snapshot dbs live in the real directories.
	for _, tp := range coordTPs {
		if err := os.MkdirAll(filepath.Join(r.root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The store was made by the previous version: its transactions.db
	// is a bbolt file, which the coordinator's Open converts.
	r.lastDB = coordBoltFile(t, r.txnDBPath())
	r.fs = crashfs.New(r.root)
	opts := logstore.Options{Sync: logstore.SyncAlways, ProducerExpiry: -1, LockTimeout: -1}
	s, err := logstore.Open(r.root, crashtest.WithFS(opts, r.fs))
	if err != nil {
		t.Fatal(err)
	}
	parts := make([]*logstore.Partition, len(coordTPs))
	for i, tp := range coordTPs {
		if parts[i], err = s.Partition(tp.Topic, tp.Partition); err != nil {
			t.Fatal(err)
		}
	}
	readSnapDBs := func() map[string][]byte {
		out := map[string][]byte{}
		for _, tp := range coordTPs {
			path := filepath.Join(r.root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), snapshot.FileName)
			data, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			out[path] = data
		}
		return out
	}
	r.snapDBs = readSnapDBs()

	clock := testutil.NewClock(time.UnixMilli(1_700_000_000_000))
	ids := &coordIDs{next: 100}
	aborted := make(chan struct{}, 16)
	expired := make(chan struct{}, 16)
	// Ids idle for a minute expire: none does until the workload moves
	// the clock on a minute after its last transaction.
	cfg := txncoord.Config{CheckInterval: time.Millisecond, Now: clock.Now, IDExpiration: time.Minute, Events: func(e txncoord.Event) {
		switch e {
		case txncoord.EventAborted:
			aborted <- struct{}{}
		case txncoord.EventExpired:
			expired <- struct{}{}
		}
	}}
	r.mu.Lock()
	r.fs.SetHook(func(op crashfs.Op) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.point(r.what + ": after " + op.String())
	})
	cfg.OnCommit = func(error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		data, err := os.ReadFile(r.txnDBPath())
		if err != nil && r.err == nil {
			r.err = err
		}
		if bytes.HasPrefix(data, r.lastDB) && len(data) > len(r.lastDB) && r.rewrites > 0 {
			// An append: a crash before its sync returned leaves the
			// file torn anywhere in the frame.
			r.torn = append(r.torn, coordTorn{
				point: coordPoint{what: r.what + ": a commit torn", fs: r.fs.Clone(), acked: maps.Clone(r.acked), asked: maps.Clone(r.asked), mayExpire: r.expiring, expired: r.expired},
				prev:  r.lastDB, cur: data})
		} else {
			// Written anew (the conversion, a compaction): a crash
			// before the rename leaves the old file and the tmp file,
			// whole (synced) or not.
			r.rewrites++
			for _, tmp := range [][]byte{data, data[:len(data)/2], {}} {
				r.points = append(r.points, coordPoint{what: fmt.Sprintf("%s: transactions.db written anew, crash before the rename (tmp of %d bytes)", r.what, len(tmp)),
					fs: r.fs.Clone(), txnDB: r.lastDB, tmp: tmp, acked: maps.Clone(r.acked), asked: maps.Clone(r.asked), mayExpire: r.expiring, expired: r.expired})
			}
		}
		r.lastDB = data
		r.point(r.what + ": after a transactions.db commit")
	}
	// Compactions during the workload.
	cfg.CompactBytes = 1024
	r.what = "open the coordinator"
	var c *txncoord.Coordinator
	r.outside(func() { c, err = txncoord.Open(r.root, ids, txncoord.StoreMarkers(s), cfg) })
	if err != nil {
		t.Fatal(err)
	}

	type producer struct {
		pid   int64
		epoch int16
		seq   [3]int32
	}
	prods := map[string]*producer{}
	initProducer := func(id string) {
		var pid int64
		var epoch int16
		var err error
		// EventAborted of a timed-out transaction comes before the scan
		// lets go of the id: until it does, InitProducerID answers
		// ErrConcurrentTransactions, which clients retry, as here.
		for deadline := time.Now().Add(5 * time.Second); ; {
			r.outside(func() { pid, epoch, err = c.InitProducerID(id, 10*time.Second, -1, -1) })
			if !errors.Is(err, txncoord.ErrConcurrentTransactions) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		prods[id] = &producer{pid: pid, epoch: epoch}
	}
	data := map[coordDataKey]int{} // data batch -> transaction number
	// produceTxn adds tps to a transaction of id (a lazy write) and
	// writes its data, number n, to each.
	produceTxn := func(n int, id string, tps []txncoord.TopicPartition) {
		pr := prods[id]
		r.what = fmt.Sprintf("txn %d (%s): add partitions", n, id)
		r.outside(func() { err = c.AddPartitions(id, pr.pid, pr.epoch, tps) })
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range tps {
			r.what = fmt.Sprintf("txn %d (%s): produce to %d", n, id, tp.Partition)
			count := 1 + n%3
			data[coordDataKey{tp.Partition, pr.pid, pr.epoch, pr.seq[tp.Partition]}] = n
			r.outside(func() {
				var rel func()
				rel, err = c.BeginProduce(id, pr.pid, pr.epoch, tp)
				if err != nil {
					return
				}
				_, err = parts[tp.Partition].Append(txnDataBatch(pr.pid, pr.epoch, pr.seq[tp.Partition], count))
				rel()
			})
			if err != nil {
				t.Fatal(err)
			}
			pr.seq[tp.Partition] += int32(count)
		}
	}
	// endTxn ends transaction n of id with commit.
	endTxn := func(n int, id string, commit bool) {
		pr := prods[id]
		r.what = fmt.Sprintf("txn %d (%s): end (commit %v)", n, id, commit)
		if commit {
			r.asked[n] = true
		}
		r.outside(func() { err = c.EndTxn(id, pr.pid, pr.epoch, commit) })
		if err != nil {
			t.Fatal(err)
		}
		r.acked[n] = commit
		// EndTxn answers before its markers are durable (they are
		// synced in the background): a crash now must keep the answer.
		r.point(r.what + ": answered")
		if !commit {
			<-aborted
		}
	}
	const txns = 14
	for n := range txns {
		id := []string{"A", "B"}[n%2]
		if prods[id] == nil {
			r.what = fmt.Sprintf("txn %d: init %s", n, id)
			initProducer(id)
		}
		tps := coordTPs
		if n%3 == 1 {
			tps = coordTPs[1:]
		}
		produceTxn(n, id, tps)
		switch n % 7 {
		case 5:
			// A new producer of the id fences this one and aborts its
			// transaction.
			r.what = fmt.Sprintf("txn %d (%s): init aborts it", n, id)
			initProducer(id)
			<-aborted
			r.acked[n] = false
		case 6:
			// Left open past its timeout: the scan aborts it.
			r.what = fmt.Sprintf("txn %d (%s): times out", n, id)
			r.outside(func() {
				clock.Advance(11 * time.Second)
				<-aborted
			})
			r.acked[n] = false
			r.what = fmt.Sprintf("txn %d (%s): init after the timeout", n, id)
			initProducer(id)
		default:
			endTxn(n, id, n%2 == 0 || n%5 == 0)
		}
	}
	// Every id idle a minute on: A, B and C (the converted file's)
	// expire, each with a durable tombstone. A comes back with a new
	// producer id.
	r.what = "A, B and C expire"
	r.expiring = true
	r.outside(func() {
		clock.Advance(time.Minute + time.Millisecond)
		for range 3 {
			<-expired
		}
	})
	r.expired = true
	if ids := c.List(); len(ids) != 0 {
		t.Fatalf("after the expiry: %+v", ids)
	}
	oldA := prods["A"].pid
	r.what = "A comes back"
	initProducer("A")
	if prods["A"].pid == oldA || prods["A"].epoch != 0 {
		t.Fatalf("A after its expiry: producer id %d epoch %d, it had %d", prods["A"].pid, prods["A"].epoch, oldA)
	}
	// Two transactions of A back to back: the first committed (its
	// Complete held, then replaced by the second's AddPartitions, both
	// lazy writes), the second left ongoing at the crash. Until the
	// second's AddPartitions is committed, the file's last record of A
	// is the first's PrepareCommit, and the partitions hold the
	// second's data: Open must not end it with the first's decision.
	produceTxn(txns, "A", coordTPs[:2])
	endTxn(txns, "A", true)
	produceTxn(txns+1, "A", coordTPs[1:])
	r.fs.SetHook(nil)
	r.mu.Unlock()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readSnapDBs(); !maps.EqualFunc(got, r.snapDBs, bytes.Equal) {
		t.Fatal("the workload changed a producer-snapshots.db: the harness must take it at every point")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	every := 1
	if testing.Short() {
		every = 3
	}
	rng := rand.New(rand.NewPCG(14, 14))
	checked := 0
	for i, cp := range r.points {
		mode := crashfs.Modes[rng.IntN(len(crashfs.Modes))]
		if i%every != 0 && i != len(r.points)-1 {
			continue
		}
		img := cp.fs.Crash(mode, rand.New(rand.NewPCG(uint64(i), uint64(mode))))
		if err := r.check(img, cp, data); err != nil {
			t.Fatalf("point %d (%s), crash %s: %v", i, cp.what, mode, err)
		}
		checked++
	}
	// Torn commits: cut at three places of every commit's frame, and at
	// every byte of two commits' (txncoord's own tests cut every commit
	// at every byte).
	cuts := 0
	for i, tc := range r.torn {
		var at []int
		if (i == len(r.torn)/2 || i == len(r.torn)-1) && !testing.Short() {
			for cut := len(tc.prev) + 1; cut < len(tc.cur); cut++ {
				at = append(at, cut)
			}
		} else {
			at = []int{len(tc.prev) + 1, (len(tc.prev) + len(tc.cur)) / 2, len(tc.cur) - 1}
		}
		for _, cut := range at {
			cp := tc.point
			cp.txnDB = tc.cur[:cut]
			mode := crashfs.Modes[rng.IntN(len(crashfs.Modes))]
			img := cp.fs.Crash(mode, rand.New(rand.NewPCG(uint64(i), uint64(cut))))
			if err := r.check(img, cp, data); err != nil {
				t.Fatalf("commit %d torn at byte %d of %d-%d (%s), crash %s: %v", i, cut, len(tc.prev), len(tc.cur), cp.what, mode, err)
			}
			cuts++
		}
	}
	if r.rewrites < 3 {
		t.Fatalf("transactions.db written anew %d times: the conversion and compactions expected", r.rewrites)
	}
	t.Logf("%d crash points, %d images checked, %d torn commits cut %d times, %d rewrites", len(r.points), checked, len(r.torn), cuts, r.rewrites)
}

// coordBoltFile writes at path a transactions.db as the previous version
// wrote it (bbolt; meta bucket: version 1, coordinator epoch 4) holding
// one transactional id, "C", CompleteCommit at producer id 50, epoch 2,
// and returns its bytes.
func coordBoltFile(t *testing.T, path string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte{1, 4} // record version 1, CompleteCommit
	rec = binary.BigEndian.AppendUint64(rec, 50)
	rec = binary.BigEndian.AppendUint16(rec, 2)
	rec = binary.BigEndian.AppendUint64(rec, math.MaxUint64) // previous producer id -1
	rec = binary.BigEndian.AppendUint16(rec, math.MaxUint16) // last epoch -1
	rec = binary.BigEndian.AppendUint32(rec, 60000)
	rec = binary.BigEndian.AppendUint64(rec, math.MaxUint64) // start -1
	rec = binary.BigEndian.AppendUint32(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, 0)
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("version"), []byte{1}); err != nil {
			return err
		}
		if err := meta.Put([]byte("coordinator-epoch"), []byte{0, 0, 0, 4}); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte("transactions"))
		if err != nil {
			return err
		}
		return b.Put([]byte("C"), rec)
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// check opens the store and the coordinator on img with cp's
// transactions.db, lets the coordinator finish and time out everything,
// and checks the partitions.
func (r *coordCrashRun) check(img *crashfs.FS, cp coordPoint, data map[coordDataKey]int) error {
	for path, db := range r.snapDBs {
		os.Remove(path)
		if db != nil {
			if err := os.WriteFile(path, db, 0o644); err != nil {
				return err
			}
		}
	}
	tmpPath := filepath.Join(r.root, txncoord.TmpFileName)
	os.Remove(r.txnDBPath())
	os.Remove(tmpPath)
	if cp.txnDB != nil {
		if err := os.WriteFile(r.txnDBPath(), cp.txnDB, 0o644); err != nil {
			return err
		}
	}
	if cp.tmp != nil {
		if err := os.WriteFile(tmpPath, cp.tmp, 0o644); err != nil {
			return err
		}
	}
	opts := logstore.Options{Sync: logstore.SyncAlways, ProducerExpiry: -1, LockTimeout: -1}
	s, err := logstore.Open(r.root, crashtest.WithFS(opts, img))
	if err != nil {
		return fmt.Errorf("open the store: %w", err)
	}
	defer s.Close()
	// No timeout falls due while it is checked.
	clock := testutil.NewClock(time.UnixMilli(1_700_000_000_000))
	c, err := txncoord.Open(r.root, &coordIDs{next: 1 << 20}, txncoord.StoreMarkers(s), txncoord.Config{CheckInterval: time.Hour, Now: clock.Now})
	if err != nil {
		return fmt.Errorf("open the coordinator: %w", err)
	}
	defer c.Close()
	if _, err := os.Stat(tmpPath); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open left %s: %v", txncoord.TmpFileName, err)
	}
	if cp.txnDB != nil {
		// The store's earlier transactional id, from the bbolt file.
		// Expired (and gone) only once the expiry may be durable; for
		// good once it was reported.
		i := slices.IndexFunc(c.List(), func(tx txncoord.Transaction) bool { return tx.TransactionalID == "C" })
		switch {
		case i >= 0 && cp.expired:
			return fmt.Errorf("C is back after its expiry was durable: %+v", c.List())
		case i < 0 && cp.mayExpire:
		case i < 0 || c.List()[i].State != "CompleteCommit" || c.List()[i].ProducerID != 50 || c.List()[i].Epoch != 2:
			return fmt.Errorf("the id of the converted file: %+v", c.List())
		}
		if j := slices.IndexFunc(c.List(), func(tx txncoord.Transaction) bool { return tx.TransactionalID == "B" }); cp.expired && j >= 0 {
			return fmt.Errorf("B is back after its expiry was durable: %+v", c.List())
		}
		if c.CoordinatorEpoch() <= 4 {
			return fmt.Errorf("coordinator epoch %d, not above the converted file's 4", c.CoordinatorEpoch())
		}
	}
	for _, tx := range c.List() {
		if tx.State == "PrepareCommit" || tx.State == "PrepareAbort" {
			return fmt.Errorf("open left %s in %s", tx.TransactionalID, tx.State)
		}
		// A new producer of the id aborts what is still ongoing.
		if tx.State == "Ongoing" {
			if _, _, err := c.InitProducerID(tx.TransactionalID, time.Minute, -1, -1); err != nil {
				return fmt.Errorf("init %s over its ongoing transaction: %w", tx.TransactionalID, err)
			}
		}
	}
	for _, tx := range c.List() {
		switch tx.State {
		case "Empty", "CompleteCommit", "CompleteAbort":
		default:
			return fmt.Errorf("transactional id %s left %s: %+v", tx.TransactionalID, tx.State, tx)
		}
	}
	// outcome[n][partition]: the marker that ended transaction n there.
	outcome := map[int]map[int32]bool{}
	for _, tp := range coordTPs {
		p, err := s.ExistingPartition(tp.Topic, tp.Partition)
		if errors.Is(err, logstore.ErrNoPartition) {
			continue // the crash lost the directory: no data, no markers
		}
		if err != nil {
			return err
		}
		if lso, end := p.LastStableOffset(), p.EndOffset(); lso != end {
			return fmt.Errorf("partition %d: LSO %d below the end %d: a transaction left open", tp.Partition, lso, end)
		}
		batches, err := crashtest.ReadBatches(p, false)
		if err != nil {
			return fmt.Errorf("partition %d: %w", tp.Partition, err)
		}
		open := map[int64][]int{} // producer id -> transactions with data since its last marker
		for _, b := range batches {
			pid := b.ProducerID()
			if !b.Attributes().Control() {
				n, ok := data[coordDataKey{tp.Partition, pid, b.ProducerEpoch(), b.BaseSequence()}]
				if !ok {
					return fmt.Errorf("partition %d: a batch the workload did not write (producer %d epoch %d sequence %d)", tp.Partition, pid, b.ProducerEpoch(), b.BaseSequence())
				}
				open[pid] = append(open[pid], n)
				continue
			}
			commit, err := coordMarkerCommit(b)
			if err != nil {
				return fmt.Errorf("partition %d offset %d: %w", tp.Partition, b.BaseOffset(), err)
			}
			for _, n := range open[pid] {
				if outcome[n] == nil {
					outcome[n] = map[int32]bool{}
				}
				outcome[n][tp.Partition] = commit
			}
			delete(open, pid)
		}
		for pid, ns := range open {
			return fmt.Errorf("partition %d: producer %d has data of transactions %v and no marker after it", tp.Partition, pid, ns)
		}
	}
	for n, byPart := range outcome {
		first := true
		var want bool
		for _, commit := range byPart {
			if first {
				want, first = commit, false
			} else if commit != want {
				return fmt.Errorf("transaction %d: committed in some partitions, aborted in others: %v", n, byPart)
			}
		}
		if acked, ok := cp.acked[n]; ok && acked != want {
			return fmt.Errorf("transaction %d: answered commit=%v, the partitions say commit=%v", n, acked, want)
		}
		if want && !cp.asked[n] {
			return fmt.Errorf("transaction %d: committed, and no EndTxn asked to commit it", n)
		}
	}
	// Open again: everything was finished, so nothing is written.
	ends := map[int32]int64{}
	for _, tp := range coordTPs {
		if p, err := s.ExistingPartition(tp.Topic, tp.Partition); err == nil {
			ends[tp.Partition] = p.EndOffset()
		}
	}
	states := c.List()
	if err := c.Close(); err != nil {
		return err
	}
	c, err = txncoord.Open(r.root, &coordIDs{next: 1 << 21}, txncoord.StoreMarkers(s), txncoord.Config{CheckInterval: time.Hour, Now: clock.Now})
	if err != nil {
		return fmt.Errorf("reopen the coordinator: %w", err)
	}
	defer c.Close()
	again := c.List()
	if !slices.EqualFunc(states, again, func(a, b txncoord.Transaction) bool {
		return a.TransactionalID == b.TransactionalID && a.State == b.State && a.ProducerID == b.ProducerID && a.Epoch == b.Epoch
	}) {
		return fmt.Errorf("reopen: %+v, were %+v", again, states)
	}
	for part, end := range ends {
		p, err := s.ExistingPartition(coordTopic, part)
		if err != nil {
			return err
		}
		if p.EndOffset() != end {
			return fmt.Errorf("reopen: partition %d grew from %d to %d", part, end, p.EndOffset())
		}
	}
	return nil
}

// coordIDs hands out producer ids from next upward.
type coordIDs struct {
	mu   sync.Mutex
	next int64
}

func (f *coordIDs) NewProducerID() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return f.next - 1, nil
}

// coordMarkerCommit reports whether control batch b is a COMMIT marker.
func coordMarkerCommit(b recordbatch.Batch) (bool, error) {
	var rr recordbatch.RecordReader
	if err := rr.Reset(b, 0); err != nil {
		return false, err
	}
	if !rr.Next() {
		return false, fmt.Errorf("control batch without a record: %v", rr.Err())
	}
	m, err := recordbatch.ParseEndTxnMarker(rr.Record().Key, rr.Record().Value)
	if err != nil {
		return false, err
	}
	return m.Type == recordbatch.ControlCommit, nil
}
