package kafkatest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/recordbatch"
)

// damage is how writeTxnStore spoils what it writes, to show the
// verifier notices.
type damage struct {
	noMarker    [2]int // transaction, partition+1: that marker not written
	flipMarker  [2]int // transaction, partition+1: the other marker written there
	duplicate   int    // transaction+1: its first record appended twice (a new producer)
	dropTxnIdx  bool   // every .txnindex file removed after the close
	nonTxnValue bool   // one stray non-transactional record
}

// writeTxnStore writes w's planned transactions into a new store in dir
// the way a server would (transactional batches through Append, markers
// through AppendMarker), as if each ended as planned, spoiled by d; it
// returns the result a client would have seen.
func writeTxnStore(t *testing.T, dir string, w *kafkatest.TxnWorkload, d damage) *kafkatest.TxnResult {
	t.Helper()
	st, err := logstore.Open(dir, logstore.Options{SegmentBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	res := &kafkatest.TxnResult{Topic: w.Topic, Partitions: 3, Txns: w.Plan()}
	producers := max(w.Producers, 1)
	seqs := map[[2]int64]int32{}
	for ti := range res.Txns {
		tx := &res.Txns[ti]
		pid := int64(100 + ti%producers)
		touched := map[int32]bool{}
		for j := range tx.Records {
			a := &tx.Records[j]
			p, err := st.Partition(w.Topic, a.Partition)
			if err != nil {
				t.Fatal(err)
			}
			k := [2]int64{pid, int64(a.Partition)}
			b := recordbatch.NewBuilder(0)
			b.Transactional, b.ProducerID, b.ProducerEpoch, b.BaseSequence = true, pid, 0, seqs[k]
			if err := b.Append(time.Now().UnixMilli(), nil, []byte(a.Value), nil); err != nil {
				t.Fatal(err)
			}
			raw, err := b.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := p.Append(raw)
			if err != nil {
				t.Fatal(err)
			}
			seqs[k]++
			a.Offset, a.ProducerID, a.Epoch = r.BaseOffset, pid, 0
			touched[a.Partition] = true
			if d.duplicate == ti+1 && j == 0 {
				b := recordbatch.NewBuilder(0)
				b.Transactional, b.ProducerID, b.ProducerEpoch, b.BaseSequence = true, 999, 0, 0
				if err := b.Append(time.Now().UnixMilli(), nil, []byte(a.Value), nil); err != nil {
					t.Fatal(err)
				}
				raw, _ := b.AppendTo(nil)
				if _, err := p.Append(raw); err != nil {
					t.Fatal(err)
				}
				if _, err := p.AppendMarker(999, 0, tx.Planned, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		for part := range touched {
			if d.noMarker == [2]int{ti, int(part) + 1} {
				continue
			}
			commit := tx.Planned
			if d.flipMarker == [2]int{ti, int(part) + 1} {
				commit = !commit
			}
			p, _ := st.Partition(w.Topic, part)
			if _, err := p.AppendMarker(pid, 0, commit, 0); err != nil {
				t.Fatal(err)
			}
		}
		tx.Outcome = kafkatest.TxnAborted
		if tx.Planned {
			tx.Outcome = kafkatest.TxnCommitted
		}
	}
	if d.nonTxnValue {
		p, _ := st.Partition(w.Topic, 0)
		b := recordbatch.NewBuilder(0)
		if err := b.Append(time.Now().UnixMilli(), nil, []byte("stray"), nil); err != nil {
			t.Fatal(err)
		}
		raw, _ := b.AppendTo(nil)
		if _, err := p.Append(raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if d.dropTxnIdx {
		idx, _ := filepath.Glob(filepath.Join(dir, "*", "*.txnindex"))
		if len(idx) == 0 {
			t.Fatal("no .txnindex file to remove")
		}
		for _, f := range idx {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return res
}

// TestScanTxnsAndVerify: a store written as a server would write a
// transactional workload (two producers interleaving, small segments,
// commits and aborts) passes the store-side verifier; each way of
// spoiling it fails it, with the problem named.
func TestScanTxnsAndVerify(t *testing.T) {
	t.Parallel()
	w := &kafkatest.TxnWorkload{Topic: "t", Transactions: 40, Producers: 2, Seed: 7}
	plan := w.Plan()
	commits, aborts := 0, 0
	for _, tx := range plan {
		if tx.Planned {
			commits++
		} else {
			aborts++
		}
	}
	if commits == 0 || aborts == 0 {
		t.Fatalf("the seeded plan has %d commits and %d aborts", commits, aborts)
	}
	// A committed transaction touching two partitions or more, to spoil.
	victim := -1
	for i, tx := range plan {
		if tx.Planned && len(tx.Records) >= 2 {
			victim = i
			break
		}
	}
	part := func(ti int) int { return int(plan[ti].Records[0].Partition) + 1 }
	for _, tc := range []struct {
		name string
		d    damage
		want string // in the error (alternatives split by "|"); "" passes
	}{
		{"clean", damage{}, ""},
		// The producer's next transaction in that partition runs on
		// into the open one, and its marker ends both.
		{"marker missing", damage{noMarker: [2]int{victim, part(victim)}}, "still open|not atomic"},
		{"marker of the other kind in one partition", damage{flipMarker: [2]int{victim, part(victim)}}, "not atomic"},
		{"a value twice", damage{duplicate: victim + 1}, "twice"},
		{"txnindex files lost", damage{dropTxnIdx: true}, ".txnindex"},
		{"non-transactional record", damage{nonTxnValue: true}, "not transactional"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res := writeTxnStore(t, dir, w, tc.d)
			v, err := kafkatest.ScanTxnsAndVerify(dir, res, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v.Committed != commits || v.Aborted != aborts || len(v.AbortedRanges) == 0 {
					t.Fatalf("verdict: %d committed, %d aborted, aborted ranges %v; the plan has %d and %d", v.Committed, v.Aborted, v.AbortedRanges, commits, aborts)
				}
				return
			}
			named := false
			for _, w := range strings.Split(tc.want, "|") {
				named = named || err != nil && strings.Contains(err.Error(), w)
			}
			if !errors.Is(err, kafkatest.ErrTxnVerify) || !named {
				t.Fatalf("got %v, want an ErrTxnVerify naming %q", err, tc.want)
			}
			t.Logf("%v", err)
		})
	}
}

// TestVerifyTxnUncertain: a transaction whose commit answer was lost may
// end either way, but all or nothing; the verifiers accept both and
// refuse a split.
func TestVerifyTxnUncertain(t *testing.T) {
	t.Parallel()
	w := &kafkatest.TxnWorkload{Topic: "u", Transactions: 1, PerTxn: 3, Commit: func(int) bool { return true }}
	res := &kafkatest.TxnResult{Topic: "u", Partitions: 3, Txns: w.Plan()}
	res.Txns[0].Outcome = kafkatest.TxnUncertain
	log := func(commits ...bool) []kafkatest.Entry {
		var es []kafkatest.Entry
		for j, a := range res.Txns[0].Records {
			es = append(es,
				kafkatest.Entry{Partition: a.Partition, Offset: 0, Value: a.Value, ProducerID: 1, Transactional: true},
				kafkatest.Entry{Partition: a.Partition, Offset: 1, ProducerID: 1, Transactional: true, Control: true, Commit: commits[j]})
		}
		return es
	}
	for _, commit := range []bool{true, false} {
		v, err := kafkatest.VerifyTxnLog(res, log(commit, commit, commit))
		if err != nil {
			t.Fatalf("all %v: %v", commit, err)
		}
		if commit && v.UncertainCommitted != 1 || !commit && v.UncertainAborted != 1 {
			t.Fatalf("all %v: verdict %+v", commit, v)
		}
		// read_committed: all three records when committed, none when
		// aborted; the other way round fails.
		var committed, aborted []kafkatest.Entry
		for _, e := range log(commit, commit, commit) {
			if e.Control {
				committed, aborted = append(committed, e), append(aborted, e)
			} else {
				committed = append(committed, e)
			}
		}
		right, wrong := aborted, committed
		if commit {
			right, wrong = committed, aborted
		}
		if err := kafkatest.VerifyTxnCommitted(res, v, right); err != nil {
			t.Fatalf("all %v: read_committed: %v", commit, err)
		}
		if err := kafkatest.VerifyTxnCommitted(res, v, wrong); !errors.Is(err, kafkatest.ErrTxnVerify) {
			t.Fatalf("all %v: read_committed saw the wrong records, verifier said %v", commit, err)
		}
	}
	if _, err := kafkatest.VerifyTxnLog(res, log(true, false, true)); err == nil || !strings.Contains(err.Error(), "not atomic") {
		t.Fatalf("a split decision: %v", err)
	}
	// A transaction the client committed must not be aborted, one it
	// aborted must not be committed.
	res.Txns[0].Outcome = kafkatest.TxnCommitted
	if _, err := kafkatest.VerifyTxnLog(res, log(false, false, false)); !errors.Is(err, kafkatest.ErrTxnVerify) {
		t.Fatalf("committed by the client, aborted in the log: %v", err)
	}
	res.Txns[0].Outcome = kafkatest.TxnAborted
	if _, err := kafkatest.VerifyTxnLog(res, log(true, true, true)); !errors.Is(err, kafkatest.ErrTxnVerify) {
		t.Fatalf("aborted by the client, committed in the log: %v", err)
	}
}

// TestTxnWorkloadKfake runs the transactional workload against kfake
// (franz-go's reference broker, transactions included), every third
// EndTxn answer swallowed after kfake wrote its markers, and checks it
// with both consumers.
func TestTxnWorkloadKfake(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "txn")
	p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(26, 3, kafkatest.DropAndClose)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := &kafkatest.TxnWorkload{Brokers: []string{p.Addr()}, Topic: "txn", Transactions: workloadN(30, 90), Producers: 2, Seed: 3}
	res, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	c := p.Counts()
	t.Logf("%d committed, %d aborted, %d uncertain, %d clients replaced; proxy %+v", res.Committed, res.Aborted, res.Uncertain, res.Restarts, c)
	if c.DroppedAndClosed == 0 {
		t.Fatal("no EndTxn answer was dropped")
	}
	p.SetRules(kafkatest.Rules{})
	v, err := kafkatest.ConsumeTxnsAndVerify(ctx, w.Brokers, res)
	if err != nil {
		t.Fatal(err)
	}
	if v.Committed == 0 || v.Aborted == 0 {
		t.Fatalf("verdict: %d committed, %d aborted", v.Committed, v.Aborted)
	}
	// The consumer side fails a read_committed reading that shows an
	// aborted record.
	all, err := kafkatest.ConsumeTxns(ctx, w.Brokers, "txn", 3, kgo.ReadUncommitted())
	if err != nil {
		t.Fatal(err)
	}
	if err := kafkatest.VerifyTxnCommitted(res, v, all); !errors.Is(err, kafkatest.ErrTxnVerify) {
		t.Fatalf("read_uncommitted records passed as read_committed: %v", err)
	}
}

// TestConsumeEndsAtMarker: Consume reads a log that ends in a COMMIT
// marker to its end (the marker's offset is never a data record).
func TestConsumeEndsAtMarker(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "endsmarker")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &kafkatest.TxnWorkload{Brokers: []string{p.Addr()}, Topic: "endsmarker", Transactions: 6, PerTxn: 3,
		Commit: func(int) bool { return true }}
	res, err := w.Run(ctx)
	if err != nil || res.Err != nil || res.Committed != 6 {
		t.Fatalf("%v %v: %d committed", err, res.Err, res.Committed)
	}
	found, err := kafkatest.Consume(ctx, w.Brokers, "endsmarker", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 18 {
		t.Fatalf("consumed %d records, want 18", len(found))
	}
}
