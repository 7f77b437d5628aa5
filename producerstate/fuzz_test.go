package producerstate_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// fuzzOps reads the fuzzer's bytes as a stream of small numbers; past the
// end it reads zeros, so every input is a complete workload.
type fuzzOps struct{ b []byte }

func (f *fuzzOps) more() bool { return len(f.b) > 0 }

func (f *fuzzOps) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

func (f *fuzzOps) int32() int32 {
	var v [4]byte
	for i := range v {
		v[i] = f.byte()
	}
	return int32(binary.BigEndian.Uint32(v[:]))
}

// FuzzCheckApply drives one partition with a workload the fuzzer's bytes
// choose: data batches at the expected, a random or a retried sequence,
// epochs around the current one, transactional or not, markers with
// coordinator epochs around the current one, the clock moving past the
// expiry, the cap evicting, batches without producer, snapshots. It
// asserts that nothing panics, that Check never changes the state, that a
// DUPLICATE names a batch in the log with the same producer, epoch and
// sequences, and that every snapshot plus the log after it equals the
// full replay, which equals the live state.
func FuzzCheckApply(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0})
	f.Add([]byte("\x00\x01\x00\x02\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x03\x01\x01\x01\x00\x05\x00\x02\x00\x03\x00\x00\x00\x00\x02\x40"))
	f.Add(bytes.Repeat([]byte{0, 1, 0, 0, 3, 1, 0, 2, 1, 1, 1, 1, 5, 2, 2, 9}, 8))
	f.Add(bytes.Repeat([]byte{0, 2, 0, 3, 0, 0, 0, 0, 1, 1, 0, 0, 2, 200, 3}, 12))
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := producerstate.Config{ExpireAfter: 5 * time.Second, MaxProducers: 3}
		ops := &fuzzOps{b: in}
		p := newPartition(t, cfg)
		clock := now0
		var sent []recordbatch.Batch // everything sent, for retries
		type saved struct {
			snap   producerstate.Snapshot
			logLen int
			frozen producerstate.Frozen // taken with snap: must stay equal to it
		}
		var snaps []saved
		for steps := 0; ops.more() && steps < 300; steps++ {
			pid := int64(ops.byte() % 5)
			cur, known := p.st.Producer(pid)
			var b recordbatch.Batch
			switch ops.byte() % 8 {
			case 0, 1: // a data batch
				epoch := cur.Epoch + int16(ops.byte()%3) - 1
				if !known {
					epoch = int16(ops.byte() % 3)
				}
				var seq int32
				switch ops.byte() % 4 {
				case 0:
					seq = 0
					if known && len(cur.Batches) > 0 {
						seq = recordbatch.IncrementSequence(cur.Batches[len(cur.Batches)-1].LastSeq, 1)
					}
				case 1:
					seq = 0
				case 2:
					seq = ops.int32() & 0x7fffffff
				case 3:
					if known && len(cur.Batches) > 0 {
						seq = cur.Batches[int(ops.byte())%len(cur.Batches)].FirstSeq
					}
				}
				flags := ops.byte()
				b = data(t, bspec{pid: pid, epoch: epoch, seq: seq, n: 1 + int(flags%4), ts: clock.UnixMilli(), txn: flags&4 != 0})
			case 2: // a retry of something sent before
				if len(sent) == 0 {
					continue
				}
				b = sent[int(ops.byte())%len(sent)]
			case 3: // a marker
				flags := ops.byte()
				coord := max(cur.CoordinatorEpoch, 0) + int32(flags%3) - 1
				b = marker(t, pid, cur.Epoch+int16(flags>>2%3)-1, flags&32 != 0, coord, clock.UnixMilli())
			case 4: // the clock moves on
				clock = clock.Add(time.Duration(ops.byte()) * 50 * time.Millisecond)
				continue
			case 5: // a huge batch across the wrap
				seq := ops.int32() & 0x7fffffff
				b = spread(t, pid, cur.Epoch, seq, ops.int32()&0x7fffffff, clock.UnixMilli())
			case 6:
				if ops.byte()%2 == 0 {
					b = plain(t, 1)
				} else {
					b = emptyControl(t, pid, cur.Epoch)
				}
			case 7:
				snaps = append(snaps, saved{p.st.Snapshot(), len(p.log), p.st.Freeze()})
				continue
			}
			sent = append(sent, b)
			before := p.st.Snapshot()
			d := p.st.Check(b, clock)
			if after := p.st.Snapshot(); !after.Equal(before) {
				t.Fatalf("Check changed the state")
			}
			switch d.Outcome {
			case producerstate.OK:
				p.appendBatch(b)
			case producerstate.Duplicate:
				if !duplicateInLog(p.log, b, d) {
					t.Fatalf("DUPLICATE %d..%d names no matching batch in the log", d.DuplicateFirst, d.DuplicateLast)
				}
			case producerstate.OutOfOrder, producerstate.Fenced, producerstate.InvalidTxnState, producerstate.Invalid:
				if d.Reason == "" {
					t.Fatalf("%s without a reason", d.Outcome)
				}
			default:
				t.Fatalf("outcome %s", d.Outcome)
			}
		}
		// Replays run at the clock, as a restart now would; the log holds
		// no seen times, so those are left out of the comparisons.
		full := replayAt(t, producerstate.New(cfg), p.log, clock)
		if !sameButSeen(full, p.st) {
			t.Fatalf("full replay differs from the live state:\n%s", diff(full, p.st))
		}
		for _, s := range snaps {
			if got := s.frozen.Snapshot(); !got.Equal(s.snap) || s.frozen.Offset() != s.snap.Offset || s.frozen.Len() != len(s.snap.Producers) {
				t.Fatalf("Freeze at log entry %d changed since:\n got %+v\nwant %+v", s.logLen, got, s.snap)
			}
			st := replayAt(t, producerstate.FromSnapshot(cfg, s.snap), p.log[s.logLen:], clock)
			if !sameButSeen(st, full) {
				t.Fatalf("snapshot at log entry %d + tail differs:\n%s", s.logLen, diff(st, full))
			}
		}
	})
}

// duplicateInLog reports whether the log holds, at the offsets d names, a
// batch of b's producer and epoch with b's sequences.
func duplicateInLog(log []recordbatch.Batch, b recordbatch.Batch, d producerstate.Decision) bool {
	for _, l := range log {
		if l.BaseOffset() == d.DuplicateFirst && l.LastOffset() == d.DuplicateLast {
			return l.ProducerID() == b.ProducerID() && l.ProducerEpoch() == b.ProducerEpoch() &&
				l.BaseSequence() == b.BaseSequence() && l.LastSequence() == b.LastSequence()
		}
	}
	return false
}

// FuzzApplyBatches feeds arbitrary bytes, cut into batches as a segment
// would be read, to Check and Apply. Whatever the bytes, nothing panics,
// Apply fails only for a control batch (a marker that does not decode)
// and then changes nothing, and a snapshot halfway plus the rest equals
// the full replay.
func FuzzApplyBatches(f *testing.F) {
	for _, path := range logFiles(f) {
		if raw, err := os.ReadFile(path); err == nil && len(raw) <= 1<<14 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg := producerstate.Config{ExpireAfter: time.Hour, MaxProducers: 2}
		st := producerstate.New(cfg)
		var log []recordbatch.Batch
		for pos := 0; pos < len(raw); {
			b, err := recordbatch.Parse(raw[pos:], 1<<16)
			if err != nil {
				break
			}
			pos += b.Size()
			st.Check(b, now0)
			st.CheckMarker(b, now0)
			before := st.Snapshot()
			if err := st.Apply(b, now0); err != nil {
				if !b.Attributes().Control() {
					t.Fatalf("Apply of a data batch: %v", err)
				}
				if after := st.Snapshot(); !after.Equal(before) {
					t.Fatal("a failed Apply changed the state")
				}
				continue
			}
			log = append(log, b)
		}
		full := replay(t, cfg, log)
		if !full.Equal(st) {
			t.Fatalf("replay differs:\n%s", diff(full, st))
		}
		half := replay(t, cfg, log[:len(log)/2])
		if rebuilt := replayOnto(t, producerstate.FromSnapshot(cfg, half.Snapshot()), log[len(log)/2:]); !rebuilt.Equal(full) {
			t.Fatalf("snapshot + tail differs:\n%s", diff(rebuilt, full))
		}
	})
}
