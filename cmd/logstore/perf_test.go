package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/perf"
	"github.com/logstore/logstore/recordbatch"
)

// perfRun runs the logstore command with args.
func perfRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// perfProduceJSON runs perf produce --json with args and returns its report.
func perfProduceJSON(t *testing.T, args ...string) perf.ProduceReport {
	t.Helper()
	out, errOut, code := perfRun(t, append([]string{"perf", "produce", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("perf produce %v: exit %d\n%s%s", args, code, out, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr is not a terminal, yet produce wrote to it:\n%s", errOut)
	}
	var rep perf.ProduceReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("the report is not one JSON object: %v\n%s", err, out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("the report is not one line:\n%s", out)
	}
	return rep
}

// perfConsumeJSON runs perf consume --json with args and returns its report.
func perfConsumeJSON(t *testing.T, args ...string) perf.ConsumeReport {
	t.Helper()
	out, errOut, code := perfRun(t, append([]string{"perf", "consume", "--json"}, args...)...)
	if code != exitOK || errOut != "" {
		t.Fatalf("perf consume %v: exit %d\n%s%s", args, code, out, errOut)
	}
	var rep perf.ConsumeReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("the report is not one JSON object: %v\n%s", err, out)
	}
	return rep
}

// perfStore is what a partition holds, read back batch by batch.
type perfStore struct {
	records, batches, bytes int64
	maxBatch                int               // largest batch, bytes
	next                    map[int64]int32   // producer id -> next sequence
	sizes                   map[int64][]int64 // producer id -> records of each batch
	values                  map[string]int    // distinct values
}

// readPerfStore reads every batch of events-0 in dir, checking that each
// producer's sequences run on from 0 without a gap.
func readPerfStore(t *testing.T, dir string) perfStore {
	t.Helper()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := store.Partition(defaultAppendTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := perfStore{next: map[int64]int32{}, sizes: map[int64][]int64{}, values: map[string]int{}}
	var rr recordbatch.RecordReader
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err == nil {
				err = b.Validate()
			}
			if err != nil {
				t.Fatal(err)
			}
			data = data[b.Size():]
			off = b.LastOffset() + 1
			s.batches++
			s.bytes += int64(b.Size())
			s.maxBatch = max(s.maxBatch, b.Size())
			pid := b.ProducerID()
			if pid < 0 || b.ProducerEpoch() != 0 {
				t.Fatalf("batch at %d: producer %d epoch %d, want an idempotent producer at epoch 0", b.BaseOffset(), pid, b.ProducerEpoch())
			}
			if b.BaseSequence() != s.next[pid] {
				t.Fatalf("batch at %d: producer %d sequence %d, want %d", b.BaseOffset(), pid, b.BaseSequence(), s.next[pid])
			}
			s.next[pid] = b.BaseSequence() + b.NumRecords()
			s.sizes[pid] = append(s.sizes[pid], int64(b.NumRecords()))
			if err := rr.Reset(b, 0); err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
				s.records++
				s.values[string(rr.Record().Value)]++
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func TestPerfProduceSyncModes(t *testing.T) {
	for _, mode := range []string{"always", "never", "interval=20ms", "interval"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rep := perfProduceJSON(t, "--records", "2000", "--record-size", "100", "--producers", "4", "--sync", mode, "--dir", dir)

			// 148 records of 100 bytes fill a 16384-byte batch: 61 header
			// bytes, 109 for each of the first 64 records (one-byte offset
			// delta), 110 for the rest: 61+64*109+84*110 = 16297, and one
			// more would make 16407.
			if rep.RecordsPerBatch != 148 {
				t.Errorf("recordsPerBatch %d, want 148", rep.RecordsPerBatch)
			}
			wantSync := map[string]string{"always": "always", "never": "never", "interval=20ms": "interval(20ms)", "interval": "interval(1s)"}[mode]
			if rep.Records != 2000 || rep.Batches != 14 || rep.Producers != 4 || rep.RecordSize != 100 || rep.BatchSize != 16384 ||
				rep.Compression != "none" || rep.Sync != wantSync || rep.Dir != dir || rep.TemporaryDir ||
				rep.Topic != "events" || rep.Partition != 0 || rep.ValueBytes != 200000 {
				t.Errorf("report: %+v", rep)
			}
			l := rep.LatencyMs
			if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Avg <= l.Max && l.Avg > 0) {
				t.Errorf("latencies out of order: %+v", l)
			}
			if rep.ElapsedSeconds <= 0 || rep.CloseSeconds <= 0 || rep.RecordsPerSec <= 0 || rep.ValueMBPerSec <= 0 || rep.BatchMBPerSec <= rep.ValueMBPerSec {
				t.Errorf("figures: %+v", rep)
			}

			got := readPerfStore(t, dir)
			if got.records != 2000 || got.batches != 14 || got.bytes != rep.BatchBytes {
				t.Errorf("store holds %d records in %d batches of %d bytes; the report says %d in %d of %d",
					got.records, got.batches, got.bytes, rep.Records, rep.Batches, rep.BatchBytes)
			}
			if got.maxBatch > 16384 {
				t.Errorf("a batch of %d bytes, above --batch-size 16384", got.maxBatch)
			}
			if len(got.values) != 1 {
				t.Errorf("%d distinct values, want one", len(got.values))
			}
			for v := range got.values {
				if len(v) != 100 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
					t.Errorf("value %q: want 100 letters A-Z", v)
				}
			}
			// The shares add up to 2000 and only one batch is short.
			short := 0
			var sum int64
			for _, sizes := range got.sizes {
				for _, n := range sizes {
					sum += n
					if n != 148 {
						short++
					}
				}
			}
			if sum != 2000 || short != 1 || len(got.sizes) > 4 {
				t.Errorf("%d records, %d short batches, %d producers: %v", sum, short, len(got.sizes), got.sizes)
			}

			c := perfConsumeJSON(t, "--dir", dir)
			if c.Records != 2000 || c.Batches != 14 || c.Bytes != rep.BatchBytes || c.From != 0 || c.End != 2000 || c.Shallow ||
				c.Topic != "events" || c.Partition != 0 || c.ElapsedSeconds <= 0 || c.MBPerSec <= 0 || c.RecordsPerSec <= 0 {
				t.Errorf("consume: %+v", c)
			}
		})
	}
}

func TestPerfProduceCodecs(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rep := perfProduceJSON(t, "--records", "500", "--record-size", "50", "--batch-size", "1024",
				"--producers", "2", "--sync", "never", "--compression", codec, "--dir", dir)
			if rep.Records != 500 || rep.Compression != codec || rep.Batches != (500+rep.RecordsPerBatch-1)/rep.RecordsPerBatch {
				t.Errorf("report: %+v", rep)
			}
			if codec != "none" && rep.BatchBytes >= rep.ValueBytes {
				t.Errorf("%s batches hold %d bytes for %d bytes of letters", codec, rep.BatchBytes, rep.ValueBytes)
			}
			got := readPerfStore(t, dir)
			if got.records != 500 || got.batches != rep.Batches {
				t.Errorf("store holds %d records in %d batches", got.records, got.batches)
			}
			for _, shallow := range []string{"--shallow=false", "--shallow"} {
				c := perfConsumeJSON(t, "--dir", dir, shallow, "--max-bytes", "3000")
				if c.Records != 500 || c.Batches != rep.Batches || c.Bytes != rep.BatchBytes {
					t.Errorf("consume %s: %+v", shallow, c)
				}
			}
		})
	}
}

// A second run on the same store takes producer ids above every id the
// first used, so each of its producers may start at sequence 0.
func TestPerfProduceTwice(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--records", "300", "--record-size", "10", "--batch-size", "200", "--producers", "3", "--sync", "never", "--dir", dir}
	first := perfProduceJSON(t, args...)
	before := readPerfStore(t, dir)
	second := perfProduceJSON(t, args...)
	after := readPerfStore(t, dir)
	if first.Records != 300 || second.Records != 300 || after.records != 600 || after.batches != first.Batches+second.Batches {
		t.Fatalf("runs of %d and %d records; store holds %d records in %d batches", first.Records, second.Records, after.records, after.batches)
	}
	var newRecords int64
	for pid, next := range after.next {
		if _, old := before.next[pid]; old {
			if next != before.next[pid] {
				t.Errorf("producer %d of the first run sent again", pid)
			}
			continue
		}
		for old := range before.next {
			if pid <= old {
				t.Errorf("second run's producer %d is not above the first run's %d", pid, old)
			}
		}
		newRecords += int64(next)
	}
	if newRecords != 300 {
		t.Errorf("the second run's producers sent %d records", newRecords)
	}
}

func TestPerfProduceText(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := perfRun(t, "perf", "produce", "--records", "1000", "--record-size", "20", "--producers", "2", "--sync", "never", "--dir", dir)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^records      1000 sent by 2 producers in 2 batches of up to \d+ records \(20-byte values, compression none, sync never\)$`),
		regexp.MustCompile(`^store        .+, partition events-0$`),
		regexp.MustCompile(`^elapsed      \d+\.\d{3} s, first append to last acknowledgement \(closing the store took \d+\.\d{3} s more\)$`),
		regexp.MustCompile(`^throughput   \d+\.\d records/s, \d+\.\d\d MB/s of record values, \d+\.\d\d MB/s of batch bytes \(MB = 2\^20 bytes\)$`),
		regexp.MustCompile(`^ack latency  avg \d+\.\d{3} ms, p50 \d+\.\d{3} ms, p99 \d+\.\d{3} ms, p99\.9 \d+\.\d{3} ms, max \d+\.\d{3} ms \(per batch, call to Append to its return\)$`),
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d: %q does not match %s", i+1, lines[i], re)
		}
	}

	out, errOut, code = perfRun(t, "perf", "consume", "--dir", dir)
	if code != exitOK || errOut != "" {
		t.Fatalf("consume: exit %d\n%s%s", code, out, errOut)
	}
	if !regexp.MustCompile(`^read         \d+ bytes, 2 batches, 1000 records of partition events-0, offsets 0 to 999 \(every record decoded\)\n` +
		`elapsed      \d+\.\d{3} s\nthroughput   \d+\.\d\d MB/s, \d+\.\d records/s \(MB = 2\^20 bytes\)\n$`).MatchString(out) {
		t.Errorf("consume report:\n%s", out)
	}
}

// Without --dir, produce uses a temporary store in the current directory
// and removes it; $LOGSTORE_DIR is not used.
func TestPerfProduceTemporaryDir(t *testing.T) {
	cwd, env := t.TempDir(), filepath.Join(t.TempDir(), "env-store")
	t.Chdir(cwd)
	t.Setenv(envStoreDir, env)
	rep := perfProduceJSON(t, "--records", "100", "--record-size", "10", "--sync", "never")
	if !rep.TemporaryDir || filepath.Dir(rep.Dir) != "." || !strings.HasPrefix(filepath.Base(rep.Dir), "logstore-perf-") || rep.Records != 100 {
		t.Errorf("report: %+v", rep)
	}
	if entries, err := os.ReadDir(cwd); err != nil || len(entries) != 0 {
		t.Errorf("the current directory holds %v (%v), want nothing", entries, err)
	}
	if _, err := os.Stat(env); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("$%s: %v, want no store there", envStoreDir, err)
	}
}

func TestPerfBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "--record-size", "10"}, "--records 0: must be above zero"},
		{[]string{"produce", "--records", "-5", "--record-size", "10"}, "--records -5: must be above zero"},
		{[]string{"produce", "--records", "1e12", "--record-size", "1e9"}, `invalid argument "1e12" for "--records"`},
		{[]string{"produce", "--records", "1000000000000", "--record-size", "1000000000"}, "--record-size 1000000000: must be from 1 to 1048516"},
		{[]string{"produce", "--records", "1000000000000", "--record-size", "100"}, "--records 1000000000000: that is 6756756757 batches of 148 records, and a run may have at most 50000000"},
		{[]string{"produce", "--records", "9223372036854775807", "--record-size", "1", "--batch-size", "1048588"}, "--records 9223372036854775807: that is"},
		{[]string{"produce", "--records", "99999999999999999999", "--record-size", "1"}, `invalid argument "99999999999999999999" for "--records"`},
		{[]string{"produce", "--records", "10"}, "--record-size 0: must be from 1 to"},
		{[]string{"produce", "--records", "10", "--record-size", "-1"}, "--record-size -1: must be from 1 to"},
		{[]string{"produce", "--records", "10", "--record-size", "1048517"}, "--record-size 1048517: must be from 1 to 1048516"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--batch-size", "0"}, "--batch-size 0: must be from 1 to 1048588"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--batch-size", "-3"}, "--batch-size -3: must be from 1 to 1048588"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--batch-size", "1048589"}, "--batch-size 1048589: must be from 1 to 1048588"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--producers", "0"}, "--producers 0: must be from 1 to 1024"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--producers", "-2"}, "--producers -2: must be from 1 to 1024"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--producers", "1000000"}, "--producers 1000000: must be from 1 to 1024"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--compression", "brotli"}, `--compression: unknown compression "brotli"`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--sync", "sometimes"}, `--sync "sometimes": want always, interval or never`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--sync", "interval=0s"}, `--sync "interval=0s": want always, never, or interval=DURATION`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--sync", "interval=-1s"}, `--sync "interval=-1s"`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--sync", "interval=soon"}, `--sync "interval=soon"`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--sync", "always=1s"}, `--sync "always=1s"`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--topic", "a/b"}, "invalid topic or partition"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--topic", ""}, "topic name is empty"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--partition", "-1"}, "partition -1 is negative"},
		{[]string{"produce", "--records", "10", "--record-size", "10", "extra"}, `unexpected argument "extra"`},
		{[]string{"produce", "--records", "10", "--record-size", "10", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"consume", "--max-bytes", "0"}, "--max-bytes 0: must be from 1 to"},
		{[]string{"consume", "--max-bytes", "-1"}, "--max-bytes -1: must be from 1 to"},
		{[]string{"consume", "--max-bytes", "2000000000"}, "--max-bytes 2000000000: must be from 1 to 1073741824"},
		{[]string{"consume", "extra"}, `unexpected argument "extra"`},
		{[]string{"bogus"}, `unknown command "bogus" for "logstore perf"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "store")
			args := append([]string{"perf"}, tc.args...)
			if len(tc.args) > 1 {
				args = append(args, "--dir", dir)
			}
			out, errOut, code := perfRun(t, args...)
			if code != exitError || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and a line with %q", code, out, errOut, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the store directory was created: %v", err)
			}
		})
	}
}

func TestPerfConsumeMissing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nothing")
	_, errOut, code := perfRun(t, "perf", "consume", "--dir", missing)
	if code != exitError || !strings.Contains(errOut, "store directory "+missing+" does not exist") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("consume created the store: %v", err)
	}

	perfProduceJSON(t, "--records", "10", "--record-size", "10", "--sync", "never", "--dir", dir)
	for _, args := range [][]string{{"--topic", "other"}, {"--partition", "1"}} {
		_, errOut, code := perfRun(t, append([]string{"perf", "consume", "--dir", dir}, args...)...)
		if code != exitError || !strings.Contains(errOut, "has no partition") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	for _, name := range []string{"other-0", "events-1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("consume created partition %s: %v", name, err)
		}
	}
}

func TestPerfConsumeFrom(t *testing.T) {
	dir := t.TempDir()
	rep := perfProduceJSON(t, "--records", "1000", "--record-size", "10", "--batch-size", "500", "--sync", "never", "--dir", dir)
	per := rep.RecordsPerBatch // one producer: batches start at multiples of per
	for _, from := range []int64{0, 1, per, per + 1, 999, 1000} {
		c := perfConsumeJSON(t, "--dir", dir, "--from", strconv.FormatInt(from, 10))
		first := from / per * per // the batch holding from
		want := 1000 - first
		if from == 1000 {
			want = 0
		}
		if c.Records != want || c.From != from || c.End != 1000 {
			t.Errorf("--from %d: %+v, want %d records", from, c, want)
		}
	}
	for _, from := range []string{"-1", "1001"} {
		_, errOut, code := perfRun(t, "perf", "consume", "--dir", dir, "--from", from)
		if code != exitError || !strings.Contains(errOut, "--from "+from+" is outside partition events-0, which holds offsets 0 to 999") {
			t.Errorf("--from %s: exit %d, stderr %q", from, code, errOut)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the progress goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// With progress on (as on a terminal), produce and consume print interval
// lines on stderr, and the report still goes to stdout alone.
func TestPerfProgress(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	var errOut lockedBuffer
	o := &perfProduceOptions{records: 4000, recordSize: 10, batchSize: 1, producers: 4, sync: "never",
		compression: "none", dir: dir, topic: "events", stdout: &out, stderr: &errOut, progress: time.Millisecond}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	if err := runPerfProduce(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^(\d+) records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec of values\), \d+\.\d\d ms avg latency, \d+\.\d\d ms max latency \(per batch\)$`)
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	sum := 0
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("progress line %q", l)
		}
		n, _ := strconv.Atoi(m[1])
		sum += n
	}
	if len(lines) == 0 || sum > 4000 || !strings.HasPrefix(out.String(), "records      4000 sent") {
		t.Errorf("%d progress lines for %d records; report:\n%s", len(lines), sum, out.String())
	}

	var cOut bytes.Buffer
	var cErr lockedBuffer
	c := &perfConsumeOptions{partitionFlags: newPartitionFlags(), maxBytes: 1, commandOutput: commandOutput{stdout: &cOut, stderr: &cErr}, progress: time.Millisecond}
	c.dir = dir
	if err := runPerfConsume(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	cline := regexp.MustCompile(`^\d+ records read, \d+\.\d records/sec \(\d+\.\d\d MB/sec\)$`)
	if s := cErr.String(); s != "" {
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if !cline.MatchString(l) {
				t.Errorf("consume progress line %q", l)
			}
		}
	}
	if !strings.Contains(cOut.String(), "4000 batches, 4000 records") {
		t.Errorf("consume report:\n%s", cOut.String())
	}
}
