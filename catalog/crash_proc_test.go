//go:build unix

package catalog

// The catalog's kill -9 suite: a child process (this test binary, run
// with crashChildEnv set) creates topics, deletes topics, appends to
// their partitions and allocates producer ids, printing what it is about
// to do and what it got, and is killed with SIGKILL at seeded moments
// (12 runs, each killed within a second); after each kill the parent
// checks the store and the catalog as the next Open leaves them: no
// partition directory without its catalog entry, every topic whole or
// gone as the child's answers allow, every partition of a topic opening
// with what was acknowledged, no producer id handed out twice.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

const (
	crashChildEnv = "LOGSTORE_CATALOG_CRASH_CHILD" // dir,seed,first topic number
	crashSeedEnv  = "LOGSTORE_CATALOG_CRASH_SEED"
)

// TestCrashChild is the child: it does nothing unless crashChildEnv is
// set. It prints "pid N" once it has id N (before any use of it),
// "creating T P" / "created T ID" around CreateTopic, "deleting T" /
// "deleted T" around DeleteTopic, "growing T N" / "grown T N" around
// CreatePartitions, "appended T P LAST" after an append returned
// (durable: the store syncs always), and runs until it is killed.
func TestCrashChild(t *testing.T) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		t.Skip("the child of TestKillCatalog")
	}
	f := strings.Split(arg, ",")
	seed, _ := strconv.ParseUint(f[1], 10, 64)
	next, _ := strconv.Atoi(f[2])
	s, err := logstore.Open(f[0], logstore.Options{LockTimeout: 30 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	c, err := Open(s)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("open")
	rng := rand.New(rand.NewPCG(seed, 2))
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		if err := out.Flush(); err != nil {
			os.Exit(3)
		}
	}
	for {
		r := rng.IntN(11)
		if r >= 6 && r < 8 && len(c.Topics()) >= 6 {
			r = 9 // few topics at a time: delete rather than create
		}
		switch {
		case r < 6:
			id, err := c.NewProducerID()
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("pid %d", id)
		case r < 8:
			name := fmt.Sprintf("t%d", next)
			next++
			parts := 1 + rng.IntN(4)
			say("creating %s %d", name, parts)
			tp, err := c.CreateTopic(name, int32(parts), map[string]string{"segment.bytes": "1048576"}, false)
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("created %s %s", name, tp.ID)
		case r < 9:
			topics := c.Topics()
			if len(topics) == 0 {
				continue
			}
			tp := topics[rng.IntN(len(topics))]
			part := rng.Int32N(tp.Partitions)
			p, err := s.Partition(tp.Name, part)
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			res, err := p.Append(childBatch(rng.IntN(2000)))
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("appended %s %d %d", tp.Name, part, res.LastOffset)
		case r == 10:
			topics := c.Topics()
			if len(topics) == 0 {
				continue
			}
			tp := topics[rng.IntN(len(topics))]
			total := tp.Partitions + 1 + rng.Int32N(3)
			say("growing %s %d", tp.Name, total)
			if _, err := c.CreatePartitions(tp.Name, total, false); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("grown %s %d", tp.Name, total)
		default:
			topics := c.Topics()
			if len(topics) == 0 {
				continue
			}
			name := topics[rng.IntN(len(topics))].Name
			say("deleting %s", name)
			if _, err := c.DeleteTopic(name); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("deleted %s", name)
		}
	}
}

// childBatch is a client batch of one record of n bytes.
func childBatch(n int) []byte {
	b := recordbatch.NewBuilder(0)
	if err := b.Append(1_700_000_000_000, nil, bytes.Repeat([]byte{'v'}, n), nil); err != nil {
		panic(err)
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// topicFate is what the child said about a topic.
type topicFate struct {
	// ends are the offsets past the last acknowledged append, by
	// partition: a topic that is there holds at least that much.
	ends     map[int32]int64
	created  bool // "created" printed: it must be there unless deleting
	id       string
	deleting bool // "deleting" printed: it may be gone
	deleted  bool // "deleted" printed: it must be gone
	// parts is its partition count as last known; growTo, while a
	// CreatePartitions runs, the count it grows to (it may have either).
	parts, growTo int32
}

func TestKillCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(crashSeedEnv); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nreplay: %s=%d go test -run TestKillCatalog ./catalog/", seed, fmt.Sprintf(format, args...), crashSeedEnv, seed)
	}
	dir := t.TempDir()
	pids := map[int64]int{} // id -> run that got it
	fates := map[string]*topicFate{}
	nextTopic := 0
	const runs = 12
	for run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", crashChildEnv, dir, rng.Uint64(), nextTopic))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a number of lines, or (now and then) as soon as it
		// opened, or after a short while, whichever comes first.
		killAfter := 1 + rng.IntN(400)
		if rng.IntN(4) == 0 {
			killAfter = 1 + rng.IntN(3)
		}
		timer := time.AfterFunc(time.Duration(rng.IntN(1000))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		sc := bufio.NewScanner(stdout)
		lines := 0
		for sc.Scan() {
			line := sc.Text()
			if os.Getenv("CATALOG_CRASH_TRACE") != "" {
				t.Logf("run %d: %s", run, line)
			}
			lines++
			f := strings.Fields(line)
			switch f[0] {
			case "error":
				cmd.Process.Kill()
				cmd.Wait()
				fail("run %d: the child failed: %s\n%s", run, line, stderr.String())
			case "pid":
				id, _ := strconv.ParseInt(f[1], 10, 64)
				if id < 0 {
					fail("run %d: producer id %d", run, id)
				}
				if r, ok := pids[id]; ok {
					fail("run %d: producer id %d handed out again (first in run %d)", run, id, r)
				}
				pids[id] = run
			case "creating":
				n, _ := strconv.Atoi(strings.TrimPrefix(f[1], "t"))
				nextTopic = max(nextTopic, n+1)
				parts, _ := strconv.Atoi(f[2])
				fates[f[1]] = &topicFate{parts: int32(parts)}
			case "created":
				fates[f[1]].created, fates[f[1]].id = true, f[2]
			case "appended":
				part, _ := strconv.Atoi(f[2])
				last, _ := strconv.ParseInt(f[3], 10, 64)
				fa := fates[f[1]]
				if fa.ends == nil {
					fa.ends = map[int32]int64{}
				}
				fa.ends[int32(part)] = last + 1
			case "growing":
				n, _ := strconv.Atoi(f[2])
				fates[f[1]].growTo = int32(n)
			case "grown":
				fates[f[1]].parts, fates[f[1]].growTo = fates[f[1]].growTo, 0
			case "deleting":
				fates[f[1]].deleting = true
			case "deleted":
				fates[f[1]].deleted = true
			}
			if lines == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		timer.Stop()
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err == nil {
			fail("run %d: the child exited cleanly:\n%s", run, stderr.String())
		}
		checkAfterKill(t, dir, fates, fail)
	}
	t.Logf("seed %d: %d runs, %d producer ids, %d topics", seed, runs, len(pids), len(fates))
}

// checkAfterKill opens the store as the killed child left it: every
// partition directory belongs to a topic with a catalog entry, and once
// the catalog opens, every topic is whole (all its directories, each
// with its partition.metadata), those the child created and never began
// to delete are there with their id, those it deleted are gone.
func checkAfterKill(t *testing.T, dir string, fates map[string]*topicFate, fail func(string, ...any)) {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fail("open the store: %v", err)
	}
	defer s.Close()
	entries := map[string]bool{}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			fail("open catalog.db: %v", err)
		}
		db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(bucketTopics); b != nil {
				b.ForEach(func(k, _ []byte) error { entries[string(k)] = true; return nil })
			}
			return nil
		})
		db.Close()
	}
	ids, err := s.Partitions()
	if err != nil {
		fail("%v", err)
	}
	for _, id := range ids {
		if !entries[id.Topic] {
			fail("partition directory %s has no catalog entry", id)
		}
	}
	c, err := Open(s)
	if err != nil {
		fail("catalog.Open: %v", err)
	}
	defer c.Close()
	byName := map[string]Topic{}
	for _, tp := range c.Topics() {
		byName[tp.Name] = tp
		if !entries[tp.Name] {
			fail("topic %s appeared at Open without an entry before", tp.Name)
		}
	}
	ids, _ = s.Partitions()
	count := map[string]int32{}
	for _, id := range ids {
		count[id.Topic]++
		tp, ok := byName[id.Topic]
		if !ok {
			fail("partition directory %s of no topic after Open", id)
		}
		got, err := ReadPartitionMetadata(s.FS(), filepath.Join(dir, id.String()))
		if err != nil || got != tp.ID {
			fail("%s: partition.metadata %s, %v; the topic's id %s", id, got, err, tp.ID)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range fates {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		f := fates[name]
		tp, there := byName[name]
		switch {
		case there && count[name] != tp.Partitions:
			fail("topic %s has %d partition directories, the catalog says %d", name, count[name], tp.Partitions)
		case f.deleted && there:
			fail("topic %s deleted, but there after Open", name)
		case f.created && !f.deleting && !f.deleted && !there:
			fail("topic %s created (id %s), but gone after Open", name, f.id)
		case f.created && there && tp.ID.String() != f.id:
			fail("topic %s created with id %s, after Open %s", name, f.id, tp.ID)
		case there && tp.Partitions != f.parts && (f.growTo == 0 || tp.Partitions != f.growTo):
			fail("topic %s has %d partitions after Open; it had %d, growing to %d", name, tp.Partitions, f.parts, f.growTo)
		}
		if there {
			// Every partition opens, and holds what was acknowledged.
			for part := range tp.Partitions {
				p, err := s.Partition(name, part)
				if err != nil {
					fail("topic %s partition %d: %v", name, part, err)
				}
				if p.EndOffset() < f.ends[part] {
					fail("topic %s partition %d ends at %d, %d were acknowledged", name, part, p.EndOffset(), f.ends[part])
				}
			}
		}
		if !there {
			// Gone for good: a later run must not see it back.
			f.deleted = true
		} else if !f.created {
			// Created before the kill, the answer lost: it stays.
			f.created, f.id = true, tp.ID.String()
		}
		f.deleting = false
		f.parts, f.growTo = tp.Partitions, 0
	}
	for name := range byName {
		if fates[name] == nil {
			fail("topic %s is there, but the child never created it", name)
		}
	}
}
