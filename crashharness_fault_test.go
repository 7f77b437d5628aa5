package logstore_test

// The fault harness: a fixed workload run once per filesystem operation,
// with that operation failing with EIO or ENOSPC.

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/segment"
)

// faultRun is the workload of TestInjectedFaults with the failAt-th
// operation failing.
type faultRun struct {
	t      *testing.T
	seed   uint64 // chooses the workload's producers and batch sizes
	env    crashtest.Env
	fs     *crashfs.FS
	failAt int
	errno  syscall.Errno
	failed *crashfs.Op // the operation that failed, once it did
	where  string      // the call that got the error

	store    *logstore.Store
	p        *logstore.Partition
	tl       crashtest.Timeline
	acked    int
	poisoned bool // an append failed
}

// faultErrno is the error the failAt-th run injects: EIO and ENOSPC in
// turn.
func faultErrno(failAt int) syscall.Errno {
	if failAt%2 == 0 {
		return syscall.ENOSPC
	}
	return syscall.EIO
}

// run runs the workload until the fault: 3 producers append 36 batches of
// 1 to 5 records in small segments with retention, with a clean close and
// reopen halfway. It returns the number of operations the run made.
func (r *faultRun) run() int {
	r.t.Helper()
	if err := r.env.SetDB(nil); err != nil {
		r.t.Fatal(err)
	}
	r.fs = crashfs.New(r.env.Root)
	r.fs.SetFault(func(op crashfs.Op) error {
		if op.Seq == r.failAt {
			r.failed = &op
			return r.errno
		}
		return nil
	})
	if !r.open() {
		return r.fs.Ops()
	}
	rng := crashtest.RNG(r.seed, 7)
	next := map[int64]int32{}
	for i := range 36 {
		if i == 18 {
			if err := r.store.Close(); err != nil {
				r.check(err, "close halfway")
				return r.fs.Ops()
			}
			if !r.open() {
				return r.fs.Ops()
			}
		}
		pid := int64(200 + rng.IntN(3))
		n := 1 + rng.IntN(5)
		b := producerBatch(pid, 0, next[pid], n, crashtest.Timestamp+int64(i))
		base := r.p.EndOffset()
		r.tl = append(r.tl, crashtest.NewWritten(b, base))
		if _, err := r.p.Append(b); err != nil {
			r.check(err, fmt.Sprintf("append %d", i))
			r.poisoned = true
			r.afterFailedAppend(pid, next[pid]+int32(n))
			return r.fs.Ops()
		}
		next[pid] += int32(n)
		r.acked = len(r.tl)
	}
	if err := r.store.Close(); err != nil {
		r.check(err, "final close")
		return r.fs.Ops()
	}
	if r.failed != nil {
		r.fatalf("the operation failed, and no call returned an error")
	}
	return r.fs.Ops()
}

// open opens the store and the partition; false when the fault hit.
func (r *faultRun) open() bool {
	r.t.Helper()
	opts := r.env.Opts
	opts = opts.WithFS(r.fs)
	opts.LockTimeout = -1
	s, err := logstore.Open(r.env.Root, opts)
	if err != nil {
		r.t.Fatal(err) // the root exists and the lock is on the OS: no fault there
	}
	r.store = s
	if r.p, err = s.Partition(r.env.Topic, 0); err != nil {
		r.check(err, "open partition")
		return false
	}
	return true
}

// check asserts that err is the injected fault, reaching the caller.
func (r *faultRun) check(err error, where string) {
	r.t.Helper()
	r.where = where
	if r.failed == nil || !errors.Is(err, r.errno) {
		r.fatalf("%s returned %v; want the injected %v", where, err, r.errno)
	}
}

// fatalf fails the test, saying how to replay the run.
func (r *faultRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, fail at %d (%v, %v in %s): %s\nreplay: LOGSTORE_CRASH_SEED=%d LOGSTORE_FAULT_AT=%d go test -run TestInjectedFaults .",
		r.seed, r.failAt, r.failed, r.errno, r.where, fmt.Sprintf(format, args...), r.seed, r.failAt)
}

// afterFailedAppend asserts that the partition is poisoned: the failed
// batch's retry and a new batch are refused, and the log does not move.
func (r *faultRun) afterFailedAppend(pid int64, nextSeq int32) {
	r.t.Helper()
	w := r.tl[len(r.tl)-1]
	end := r.p.EndOffset()
	// The retry of the failed batch and a batch without a producer reach
	// the log and find it poisoned; the producer's next batch may be
	// refused before (its predecessor is unknown): none is acknowledged.
	for i, b := range [][]byte{stampless(w.Data), batchOf("later"), producerBatch(pid, 0, nextSeq, 1, crashtest.Timestamp)} {
		if res, err := r.p.Append(b); i < 2 && !errors.Is(err, segment.ErrPoisoned) || err == nil {
			r.fatalf("append %d after the failure got %+v, %v; want ErrPoisoned", i, res, err)
		}
	}
	if r.p.EndOffset() != end {
		r.fatalf("the log end moved after the failure")
	}
}

// stampless returns a copy of a stored batch as its producer sent it.
func stampless(b []byte) []byte { return crashtest.Stamp(b, 0) }

// crashAndCheck checks what the machine keeps if it crashes right after
// the failure, in each of modes (nil: one chosen by failAt), then what the
// process leaves when it closes the store and exits.
func (r *faultRun) crashAndCheck(modes []crashfs.Mode) {
	r.t.Helper()
	if modes == nil {
		modes = []crashfs.Mode{crashfs.Modes[r.failAt%len(crashfs.Modes)]}
	}
	var imgs []*crashfs.FS
	for _, mode := range modes {
		imgs = append(imgs, r.fs.Crash(mode, crashtest.RNG(r.seed, uint64(r.failAt)<<8|uint64(mode))))
	}
	db, err := r.env.ReadDB()
	if err != nil {
		r.t.Fatal(err)
	}
	closeErr := r.store.Close()
	exited := r.fs.Crash(crashfs.KeepAll, nil)
	dbAfter, err := r.env.ReadDB()
	if err != nil {
		r.t.Fatal(err)
	}
	if r.poisoned {
		// A poisoned partition closes with its error and without the
		// clean mark, so the next open recovers.
		switch {
		case closeErr == nil:
			r.fatalf("the poisoned store closed without an error")
		case !errors.Is(closeErr, segment.ErrPoisoned):
			r.fatalf("close of the poisoned store: %v; want ErrPoisoned", closeErr)
		}
		s, p, err := r.env.Open(exited.Clone(), dbAfter)
		if err != nil {
			r.fatalf("reopen: %v", err)
		}
		clean := p.Recovery().Clean
		s.Close()
		if clean {
			r.fatalf("the poisoned store left a clean mark")
		}
	}
	ex := crashtest.Expect{Timeline: r.tl, Acked: r.acked, Durable: true}
	o := crashtest.CheckOptions{Resend: true, NewAppend: true}
	for i, img := range imgs {
		if err := r.env.CheckImage(img, db, ex, o); err != nil {
			r.fatalf("crash (%s) right after: %v", modes[i], err)
		}
	}
	if err := r.env.CheckImage(exited, dbAfter, ex, o); err != nil {
		r.fatalf("after the store closed (%v): %v", closeErr, err)
	}
}
