//go:build unix

package kafkaserver_test

// Scenario 6 of issue 13 (with scenario 7 folded in): the server as a
// child process, killed with SIGKILL at random moments while kgo
// produces, and started again on the same port over the same store.
// Before each kill the proxy swallows Produce answers until the server
// has written one, so the kill always leaves kgo a batch that is in the
// log and unacknowledged: its retry after the restart must be answered
// with its first offsets, from the producer state the store rebuilt
// after a crash.
// Segments are tiny (2 KiB), so rolls, snapshots and the replay of the
// log tail after the newest snapshot all happen mid-run; before every
// second restart the newest snapshot of each partition is spoiled too.
//
// The child is `logstore serve`, built from cmd/logstore, with
// --metrics-listen: its recovery metrics, scraped before each kill and at
// the end, show that partitions were reopened after a crash, snapshots
// loaded (the spoiled ones skipped) and log tails replayed.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/internal/testutil"
)

// childSpec is how the child serves.
type childSpec struct {
	CLI           string // the logstore binary
	Dir           string
	Listen        string
	Advertise     string
	MetricsListen string
	SegmentBytes  int64
	Args          []string // more flags of serve
}

// serveCLI builds cmd/logstore into dir and returns its path; it skips
// the test when there is no go command to build with.
func serveCLI(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the CLI with: %v", err)
	}
	bin := filepath.Join(dir, "logstore")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/logstore")
	build.Dir = testutil.RepoDir(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/logstore: %v\n%s", err, out)
	}
	return bin
}

// child is the server process of TestE2EKillAndRestart.
type child struct {
	spec    childSpec
	stderr  *testutil.LockedBuffer
	cmd     *exec.Cmd     // nil while stopped
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd's exit, once exited is closed
}

// startChild builds the CLI and starts a child server of spec (its
// CLI and, when empty, its Dir filled in), killed when the test ends,
// whose stderr the test's log shows if the test failed.
func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	spec.CLI = serveCLI(t, t.TempDir())
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	c := &child{stderr: &testutil.LockedBuffer{}, spec: spec}
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.kill() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the child servers' stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

// start runs the child and returns once it says it is ready (its one
// line on stdout).
func (c *child) start() error {
	args := []string{"serve", "--dir", c.spec.Dir, "--listen", c.spec.Listen,
		"--advertise", c.spec.Advertise, "--metrics-listen", c.spec.MetricsListen,
		"--segment-bytes", fmt.Sprint(c.spec.SegmentBytes), "--sync", "always"}
	cmd := exec.Command(c.spec.CLI, append(args, c.spec.Args...)...)
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	ready := make(chan string, 1)
	go func(exited chan struct{}) {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		c.waitErr = cmd.Wait() // after the last read of stdout, as exec requires
		close(exited)
	}(c.exited)
	select {
	case line := <-ready:
		if !strings.Contains(line, c.spec.Listen) {
			return fmt.Errorf("the child server's first line %q does not name %s", line, c.spec.Listen)
		}
		return nil
	case <-c.exited:
		c.cmd = nil
		return fmt.Errorf("the child server exited before it was ready: %v; its stderr:\n%s", c.waitErr, c.stderr.String())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the child server was not ready after 30 s; its stderr:\n%s", c.stderr.String())
	}
}

// kill ends the child with SIGKILL.
func (c *child) kill() error {
	if c.cmd == nil {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-c.exited
	c.cmd = nil
	return nil
}

// stop ends the child with SIGTERM: a graceful shutdown and a clean close
// of the store.
func (c *child) stop() error {
	if c.cmd == nil {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	<-c.exited
	c.cmd = nil
	if c.waitErr != nil {
		return fmt.Errorf("the child server: %w; its stderr:\n%s", c.waitErr, c.stderr.String())
	}
	return nil
}

// recoveryCounters are the store's metrics that say what reopening a
// partition did; each child's count starts at 0, so the test adds them
// up over the children's lives.
var recoveryCounters = []string{
	`logstore_partition_opens_total{recovery="recovered"}`,
	"logstore_recovery_snapshots_loaded_total",
	"logstore_recovery_snapshots_skipped_total",
	"logstore_recovery_replayed_batches_total",
	"logstore_segment_rolls_total",
}

func isRecoveryCounter(name string) bool { return slices.Contains(recoveryCounters, name) }

// scrape reads the child's /metrics and adds the samples whose name
// (with its labels) match accepts to sum.
func (c *child) scrape(sum map[string]float64, match func(name string) bool) error {
	resp, err := http.Get("http://" + c.spec.MetricsListen + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !match(name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("metric %s: %w", name, err)
		}
		sum[name] += v
	}
	return sc.Err()
}

// startKillChild starts a child server with 2 KiB segments (so that the
// kills land in many segments) behind a new proxy, which it advertises.
func startKillChild(t *testing.T) (*kafkatest.Proxy, *child) {
	t.Helper()
	addr := freeAddr(t)
	p := behindProxy(t, addr)
	return p, startChild(t, childSpec{Listen: addr, Advertise: p.Addr(), MetricsListen: freeAddr(t), SegmentBytes: 2048})
}

func TestE2EKillAndRestart(t *testing.T) {
	t.Parallel()
	const topic = "kill9"
	p, c := startKillChild(t)
	maxKills := 4
	if testing.Short() {
		maxKills = 2
	}

	// The kills come at random points of the production order: record
	// i is about to be produced when the killer is told to kill.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	n := e2eRecords()
	at := make(map[int]bool)
	for len(at) < maxKills {
		at[n/10+rng.IntN(8*n/10)] = true
	}
	killNow := make(chan struct{}, maxKills)
	var (
		wg             sync.WaitGroup
		kills, spoiled int
		killErr        error
		recovery       = make(map[string]float64)
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range killNow {
			if killErr != nil {
				continue
			}
			// Swallow the Produce answers from now on until one was
			// written (its batch is durable), then kill: kgo's retry of
			// that batch after the restart must be recognised from the
			// recovered state as a duplicate.
			dropped := p.Counts().ProduceDropped
			p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 1, kafkatest.DropAndClose)})
			for i := 0; i < 1000 && p.Counts().ProduceDropped == dropped; i++ {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			if killErr = c.scrape(recovery, isRecoveryCounter); killErr != nil {
				continue
			}
			killErr = c.kill()
			p.SetRules(kafkatest.Rules{})
			if killErr != nil {
				continue
			}
			kills++
			if kills%2 == 0 {
				var k int
				k, killErr = corruptNewestSnapshots(t, c.spec.Dir, topic, 3)
				spoiled += k
			}
			if killErr == nil {
				killErr = c.start()
			}
		}
	}()
	// Stopped after the run, or by the cleanup when the test fails first.
	stopKiller := sync.OnceFunc(func() { close(killNow); wg.Wait() })
	t.Cleanup(stopKiller)
	brokers := []string{p.Addr()}
	res := produce(t, brokers, &kafkatest.Workload{Topic: topic, Records: n, MaxBuffered: 16,
		Before: func(_ context.Context, _ *kgo.Client, i int) {
			if at[i] {
				killNow <- struct{}{}
			}
		}})
	stopKiller()
	if killErr != nil {
		t.Fatal(killErr)
	}
	t.Logf("%d kills, %d snapshots spoiled; proxy: %+v", kills, spoiled, p.Counts())
	if kills != maxKills {
		t.Fatalf("%d kills, want %d", kills, maxKills)
	}
	if c := p.Counts(); c.ProduceRepeats == 0 {
		t.Fatalf("%d answers swallowed before kills, and no retry after a restart was answered as a duplicate", c.ProduceDropped)
	}
	consumeAndVerify(t, brokers, p, res)
	if err := c.scrape(recovery, isRecoveryCounter); err != nil {
		t.Fatal(err)
	}
	// The children reopened partitions their predecessor left without a
	// clean close, loaded snapshots, skipped the spoiled ones, and
	// replayed the log after the snapshot they loaded; the tiny segments
	// rolled mid-run.
	t.Logf("over the children's lives: %v", recovery)
	for _, name := range recoveryCounters {
		if recovery[name] == 0 {
			t.Errorf("%s is 0 over every child's life", name)
		}
	}
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	scanAndVerify(t, c.spec.Dir, res)
}
