//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// BenchmarkServePartitions (issue 25 §2): how the real `logstore serve`,
// a child process built from this package, scales with the partitions
// its store holds: one topic of 10, 1,000, 2,500 or 10,000 partitions,
// or 100 topics of 100. Each op is one cycle over the same store:
//
//  1. start serve after a clean stop (at the first op, the setup's:
//     no partition ever opened); start-ms is the time from exec to its
//     ready line, start-cpu-ms the CPU time serve used up to then
//     (/proc/PID/stat, in 10 ms ticks; steadier than start-ms on a
//     loaded machine: the rest is waiting, mostly for the disk);
//  2. idle-rss-MB and idle-fds: VmRSS of /proc/PID/status and the
//     entries of /proc/PID/fd, 100 ms after the ready line;
//  3. metadata-us: a Metadata v12 of all topics from a raw kmsg client
//     (one connection, the mean of 20 round trips after a first one);
//  4. one record produced to every partition: raw Produce v9 requests
//     (acks=1) of up to 1,000 partitions each, one after the other;
//     produce-ms is the whole pass, produce-errors the partitions
//     answered with an error, log-lines the lines serve wrote to stderr
//     up to then and emfile-msgs the "too many open files" among them;
//     then produced-rss-MB and produced-fds;
//     4b. kgo-spread-MB/s: one kgo idempotent producer (acks=all, linger
//     5 ms) sends spreadRecords records of 100 bytes round robin over
//     every partition of every topic (so that each partition gets as
//     many), the value MB/s from the first record to the flush;
//     kgo-spread-errors the records it failed;
//  5. SIGTERM; start again: start-clean-ms and start-clean-cpu-ms (a
//     store with a record in every partition, closed cleanly), and
//     clean-rss-MB and clean-fds 100 ms after the ready line;
//  6. SIGKILL; start again: start-kill-ms and start-kill-cpu-ms; SIGTERM.
//
// ns/op is the whole cycle. Every serve runs with --sync never (the
// first write to a partition under --sync always costs file and
// directory syncs one partition at a time, which would make the produce
// pass minutes long at 10,000 partitions). The store is built once per
// size, outside the timings: a serve of the empty store, stopped with
// SIGTERM, makes its own files (the coordinators'); then, in this
// process, logstore.Open with SyncNever and catalog.CreateTopic of each
// topic (the directories and partition.metadata files, no partition
// opened), as `logstore topics create` does.
//
// By default only the 10-partition store runs (about 2 s, plus the
// build of the CLI, cached after the first);
// LOGSTORE_BENCH_PARTITIONS=1 adds 1,000, 2,500, 10,000 and 100×100,
// which take minutes (give go test -timeout 30m). 2,500 is about the
// most one serve holds open under a limit of 20,000 open files.
//
// Serve inherits this process's open-file limit (ulimit -n), which the
// benchmark does not raise. A serve that runs out of open files (an
// open partition holds about 7) is a finding, not a failure: a start
// that exits before its ready line counts in failed-starts (its
// start-*-ms the time to its exit), a SIGTERM that does not exit 0 in
// failed-stops, each logged with the start of serve's stderr, when
// that stderr says "too many open files"; any other failure fails the
// benchmark.
func BenchmarkServePartitions(b *testing.B) {
	type shape struct{ topics, parts int }
	shapes := []shape{{1, 10}}
	if os.Getenv("LOGSTORE_BENCH_PARTITIONS") != "" {
		shapes = append(shapes, shape{1, 1000}, shape{1, 2500}, shape{1, 10000}, shape{100, 100})
	}
	cli := buildServeCLI(b)
	for _, s := range shapes {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", s.topics, s.parts), func(b *testing.B) {
			benchServeCycle(b, cli, s.topics, s.parts)
		})
	}
}

// buildServeCLI builds this package into a temporary directory; it
// skips when there is no go command.
func buildServeCLI(b testing.TB) string {
	b.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("no go command to build the CLI with: %v", err)
	}
	cli := filepath.Join(b.TempDir(), "logstore")
	build := exec.Command(goBin, "build", "-o", cli, "./cmd/logstore")
	build.Dir = testutil.RepoDir(b)
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/logstore: %v\n%s", err, out)
	}
	return cli
}

// servedTopics names the topics of a shape: "p" alone, or p0, p1, ...
func servedTopics(topics int) []string {
	if topics == 1 {
		return []string{"p"}
	}
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	return names
}

// createServedStore makes dir a store holding topics × parts
// partitions, as CreateTopics would, and closes it cleanly.
func createServedStore(b *testing.B, dir string, names []string, parts int) {
	b.Helper()
	began := time.Now()
	st, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.Open(st)
	if err != nil {
		st.Close()
		b.Fatal(err)
	}
	for _, name := range names {
		if _, err := cat.CreateTopic(name, int32(parts), nil, false); err != nil {
			cat.Close()
			st.Close()
			b.Fatal(err)
		}
	}
	if err := cat.Close(); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup of %d×%d partitions: %v", len(names), parts, time.Since(began).Round(time.Millisecond))
}

func benchServeCycle(b *testing.B, cli string, topics, parts int) {
	dir := b.TempDir()
	// serve's own files (the coordinators'), made and closed cleanly
	// by a serve of the empty store, as a server that took CreateTopics
	// and stopped has them.
	s, _, err := startServed(b, cli, dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.stop(); err != nil {
		b.Fatal(err)
	}
	names := servedTopics(topics)
	createServedStore(b, dir, names, parts)
	batch := oneRecordBatch(b)
	var sum struct {
		start, startKill, startClean, produce time.Duration
		startCPU, startKillCPU, startCleanCPU time.Duration
		metadata                              time.Duration
		idleRSS, producedRSS, cleanRSS        int64
		idleFDs, producedFDs, cleanFDs        int
		produceErrors, logLines, emfileLines  int
		failedStops, failedStarts             int
		kgoMBps                               float64
		kgoErrors                             int
	}
	// tolerate takes err, of a serve that ran out of open files, as a
	// finding (logged and counted); any other is the benchmark's failure.
	tolerate := func(s *served, what string, err error, count *int) {
		b.Helper()
		if err == nil {
			return
		}
		if s == nil || s.log.emfiles() == 0 {
			b.Fatalf("%s: %v", what, err)
		}
		b.Logf("%s (serve ran out of open files, %d lines say so): %v", what, s.log.emfiles(), err)
		*count++
	}
	b.ResetTimer()
	for range b.N {
		s, took, err := startServed(b, cli, dir)
		if err != nil {
			b.Fatal(err)
		}
		sum.start += took
		sum.startCPU += procCPU(b, s.pid())
		time.Sleep(100 * time.Millisecond)
		rss, fds := procUsage(b, s.pid())
		sum.idleRSS += rss
		sum.idleFDs += fds

		c := dialRaw(b, s.addr)
		sum.metadata += metadataLatency(b, c, topics*parts)
		took, errs := produceEveryPartition(b, c, names, parts, batch)
		c.Close()
		sum.produce += took
		sum.produceErrors += errs
		sum.logLines += s.log.lines()
		sum.emfileLines += s.log.emfiles()
		rss, fds = procUsage(b, s.pid())
		sum.producedRSS += rss
		sum.producedFDs += fds
		if topics*parts <= spreadMaxPartitions {
			mbps, kerrs := kgoProduceSpread(b, s.addr, names, parts)
			sum.kgoMBps += mbps
			sum.kgoErrors += kerrs
		}
		if errs > 0 {
			b.Logf("%d of %d partitions answered the produce with an error; serve wrote %d lines, %d of them \"too many open files\", beginning:\n%s",
				errs, topics*parts, s.log.lines(), s.log.emfiles(), s.log.start(4, 400))
		}
		tolerate(s, "SIGTERM after the produce pass", s.stop(), &sum.failedStops)

		s, took, err = startServed(b, cli, dir)
		sum.startClean += took
		tolerate(s, "start after a clean stop", err, &sum.failedStarts)
		if err == nil {
			sum.startCleanCPU += procCPU(b, s.pid())
			time.Sleep(100 * time.Millisecond)
			rss, fds = procUsage(b, s.pid())
			sum.cleanRSS += rss
			sum.cleanFDs += fds
			s.kill(b)
		}

		s, took, err = startServed(b, cli, dir)
		sum.startKill += took
		tolerate(s, "start after SIGKILL", err, &sum.failedStarts)
		if err == nil {
			sum.startKillCPU += procCPU(b, s.pid())
			tolerate(s, "SIGTERM after the start after SIGKILL", s.stop(), &sum.failedStops)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	mb := func(v int64) float64 { return float64(v) / (1 << 20) / n }
	b.ReportMetric(ms(sum.start), "start-ms")
	b.ReportMetric(ms(sum.startCPU), "start-cpu-ms")
	b.ReportMetric(mb(sum.idleRSS), "idle-rss-MB")
	b.ReportMetric(float64(sum.idleFDs)/n, "idle-fds")
	b.ReportMetric(float64(sum.metadata.Microseconds())/n, "metadata-us")
	b.ReportMetric(ms(sum.produce), "produce-ms")
	b.ReportMetric(float64(sum.produceErrors)/n, "produce-errors")
	b.ReportMetric(float64(sum.logLines)/n, "log-lines")
	b.ReportMetric(float64(sum.emfileLines)/n, "emfile-msgs")
	b.ReportMetric(mb(sum.producedRSS), "produced-rss-MB")
	b.ReportMetric(sum.kgoMBps/n, "kgo-spread-MB/s")
	b.ReportMetric(float64(sum.kgoErrors)/n, "kgo-spread-errors")
	b.ReportMetric(float64(sum.producedFDs)/n, "produced-fds")
	b.ReportMetric(ms(sum.startClean), "start-clean-ms")
	b.ReportMetric(ms(sum.startCleanCPU), "start-clean-cpu-ms")
	b.ReportMetric(mb(sum.cleanRSS), "clean-rss-MB")
	b.ReportMetric(float64(sum.cleanFDs)/n, "clean-fds")
	b.ReportMetric(ms(sum.startKill), "start-kill-ms")
	b.ReportMetric(ms(sum.startKillCPU), "start-kill-cpu-ms")
	b.ReportMetric(float64(sum.failedStarts)/n, "failed-starts")
	b.ReportMetric(float64(sum.failedStops)/n, "failed-stops")
}

// oneRecordBatch is a plain batch of one 1-byte record.
func oneRecordBatch(b *testing.B) []byte {
	bb := recordbatch.NewBuilder(0)
	if err := bb.Append(1_700_000_000_000, nil, []byte("v"), nil); err != nil {
		b.Fatal(err)
	}
	out, err := bb.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// served is one serve child.
type served struct {
	cmd    *exec.Cmd
	addr   string
	log    *headBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

func (s *served) pid() int { return s.cmd.Process.Pid }

var readyLine = regexp.MustCompile(`^logstore serve: listening on (\S+), `)

// startServed starts serve over dir (with args besides) on a free
// loopback port and returns
// it, with the time from exec to its ready line; or, when it exits
// before that line, it (its log), the time to its exit and an error
// with its exit and the start of its stderr. It is killed when the
// benchmark ends.
func startServed(b testing.TB, cli, dir string, args ...string) (*served, time.Duration, error) {
	b.Helper()
	cmd := exec.Command(cli, append([]string{"serve", "--dir", dir, "--listen", "127.0.0.1:0", "--sync", "never"}, args...)...)
	s := &served{cmd: cmd, log: &headBuffer{max: 16 << 10}, exited: make(chan struct{})}
	cmd.Stderr = s.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		s.err = cmd.Wait() // after the last read of stdout, as exec requires
		close(s.exited)
	}()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	})
	select {
	case line := <-ready:
		took := time.Since(began)
		m := readyLine.FindStringSubmatch(line)
		if m == nil {
			b.Fatalf("serve's ready line %q", line)
		}
		s.addr = m[1]
		return s, took, nil
	case <-s.exited:
		took := time.Since(began)
		return s, took, fmt.Errorf("serve exited %v after its start, before it was ready: %w; its stderr (%d lines) begins:\n%s",
			took.Round(time.Millisecond), s.err, s.log.lines(), s.log.start(4, 400))
	case <-time.After(5 * time.Minute):
		b.Fatalf("serve was not ready after 5 minutes; its stderr:\n%s", s.log.start(20, 400))
	}
	return nil, 0, nil
}

// kill ends s with SIGKILL.
func (s *served) kill(b *testing.B) {
	b.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	<-s.exited
}

// stop ends s with SIGTERM, a clean close of the store, which must exit
// 0.
func (s *served) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	<-s.exited
	if s.err != nil {
		return fmt.Errorf("serve after SIGTERM: %w; its stderr (%d lines) begins:\n%s", s.err, s.log.lines(), s.log.start(4, 400))
	}
	return nil
}

// headBuffer keeps the first max bytes written to it and counts the
// lines of all: serve's stderr, which a failing store can fill.
type headBuffer struct {
	mu     sync.Mutex
	max    int
	buf    bytes.Buffer
	count  int
	emfile int // occurrences of "too many open files" (EMFILE)
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count += bytes.Count(p, []byte("\n"))
	h.emfile += bytes.Count(p, []byte("too many open files"))
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) emfiles() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.emfile
}

func (h *headBuffer) lines() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// start is the first n lines kept, each cut to max bytes.
func (h *headBuffer) start(n, max int) string {
	var out strings.Builder
	for line := range strings.Lines(h.head()) {
		if n == 0 {
			break
		}
		n--
		if len(line) > max {
			line = line[:max] + "...\n"
		}
		out.WriteString(line)
	}
	return out.String()
}

func (h *headBuffer) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

// procUsage is pid's resident set (VmRSS, bytes) and its open file
// descriptors.
func procUsage(b testing.TB, pid int) (int64, int) {
	b.Helper()
	rss := procStatusBytes(b, pid, "VmRSS")
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return rss, len(fds)
}

// procStatusBytes is field (VmRSS, VmHWM: the peak resident set) of
// /proc/PID/status, in bytes.
func procStatusBytes(b testing.TB, pid int, field string) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				b.Fatalf("/proc/%d/status: %s line %q", pid, field, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/status: %s line %q: %v", pid, field, line, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status has no %s line", pid, field)
	return 0
}

// procCPU is the CPU time (user and system) pid has used, from
// /proc/PID/stat, in the kernel's USER_HZ ticks of 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from 3 (state) start after its closing one.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	var ticks int64
	for _, v := range f[11:13] { // utime, stime: fields 14 and 15
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q: %v", pid, stat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// rawConn is a Kafka connection that writes kmsg requests one at a time
// and reads each answer whole.
type rawConn struct {
	net.Conn
	f    *kmsg.RequestFormatter
	corr int32
	buf  []byte
}

func dialRaw(b *testing.B, addr string) *rawConn {
	b.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	return &rawConn{Conn: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))}
}

// do sends req and decodes its answer.
func (c *rawConn) do(b *testing.B, req kmsg.Request) kmsg.Response {
	b.Helper()
	c.corr++
	c.buf = c.f.AppendRequest(c.buf[:0], req, c.corr)
	if err := c.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Write(c.buf); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, c.buf[:4]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(c.buf))
	if n < 4 || n > 256<<20 {
		b.Fatalf("an answer of %d bytes", n)
	}
	if n > cap(c.buf) {
		c.buf = make([]byte, n)
	}
	body := c.buf[:n]
	if _, err := io.ReadFull(c, body); err != nil {
		b.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		b.Fatalf("answer to correlation id %d, want %d", corr, c.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		if len(body) == 0 || body[0] != 0 {
			b.Fatalf("a flexible answer's header with tagged fields")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		b.Fatal(err)
	}
	return resp
}

// metadataLatency is the mean round trip of a Metadata v12 of all
// topics over c, after a first one, which must show want partitions.
func metadataLatency(b *testing.B, c *rawConn, want int) time.Duration {
	b.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12 // Topics nil: all topics
	resp := c.do(b, req).(*kmsg.MetadataResponse)
	got := 0
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			b.Fatalf("metadata: topic %v: error %d", t.Topic, t.ErrorCode)
		}
		got += len(t.Partitions)
	}
	if got != want {
		b.Fatalf("metadata shows %d partitions, want %d", got, want)
	}
	const rounds = 20
	began := time.Now()
	for range rounds {
		c.do(b, req)
	}
	return time.Since(began) / rounds
}

const servedPerProduce = 1000 // partitions per Produce request

// produceEveryPartition sends batch to each partition of names, in
// Produce requests of up to servedPerProduce partitions, and returns the
// time taken and the number of partitions answered with an error.
func produceEveryPartition(b *testing.B, c *rawConn, names []string, parts int, batch []byte) (time.Duration, int) {
	b.Helper()
	var reqs []*kmsg.ProduceRequest
	var r *kmsg.ProduceRequest
	in := 0
	for _, name := range names {
		for p := range parts {
			if r == nil || in == servedPerProduce {
				r = kmsg.NewPtrProduceRequest()
				r.Version, r.Acks, r.TimeoutMillis = 9, 1, 60_000
				reqs, in = append(reqs, r), 0
			}
			if len(r.Topics) == 0 || r.Topics[len(r.Topics)-1].Topic != name {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = name
				r.Topics = append(r.Topics, rt)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(p), batch
			rt := &r.Topics[len(r.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
			in++
		}
	}
	errs, answered := 0, 0
	began := time.Now()
	for _, r := range reqs {
		resp := c.do(b, r).(*kmsg.ProduceResponse)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				answered++
				if p.ErrorCode != 0 {
					if errs == 0 {
						b.Logf("produce to %s-%d: error %d (%v), the first of the pass", t.Topic, p.Partition, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
					}
					errs++
				}
			}
		}
	}
	took := time.Since(began)
	if answered != len(names)*parts {
		b.Fatalf("produce answered %d partitions of %d", answered, len(names)*parts)
	}
	return took, errs
}

// spreadRecords is the records of the kgo pass over all partitions: ten
// per partition at 10,000 partitions.
const spreadRecords = 100_000

// spreadMaxPartitions is the most partitions the kgo pass runs over:
// those serve keeps open at once by default under this machine's
// open-file limit (20,000: 1,867). Above it every request of the pass
// opens and closes partitions by the thousand, about 5 ms each, longer
// than kgo's request timeout: at 10,000 partitions nothing was
// acknowledged in 60 s, and the SIGTERM after it could not finish the
// requests still in flight within its deadline (BENCHMARKS.md).
const spreadMaxPartitions = 1_867

// spreadTimeout bounds the kgo pass: past it, what was acknowledged
// counts, and the records not yet answered are counted as failed.
const spreadTimeout = 60 * time.Second

// kgoProduceSpread runs step 4b of BenchmarkServePartitions: the value
// MB/s acknowledged within spreadTimeout, and the records failed or not
// answered by then.
func kgoProduceSpread(b *testing.B, addr string, names []string, parts int) (mbps float64, failed int) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(spreadRecords), kgo.RecordRetries(3))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), spreadTimeout)
	defer cancel()
	value := make([]byte, 100)
	var mu sync.Mutex
	acked := 0
	began := time.Now()
	for i := range spreadRecords {
		r := &kgo.Record{Topic: names[i%len(names)], Partition: int32(i / len(names) % parts), Value: value}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				acked++
				return
			}
			if failed == 0 {
				b.Logf("kgo spread produce: %v, the first failure", err)
			}
			failed++
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Logf("kgo spread produce: %v after %v", err, time.Since(began))
	}
	took := time.Since(began)
	cl.Close() // fails what is still buffered
	mu.Lock()
	defer mu.Unlock()
	return float64(acked*len(value)) / (1 << 20) / took.Seconds(), spreadRecords - acked
}
