package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"time"
)

// Status is a cell's outcome.
type Status int

const (
	Pass         Status = iota
	Fail                // the client and logstore disagree, or a check found a problem (Detail says which)
	NotSupported        // the client, at this version, lacks the feature (Detail says why, e.g. "zstd needs Produce v7, Kafka 2.1")
	Unavailable         // the client is not installed here (Detail says what is missing)
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "pass"
	case Fail:
		return "FAIL"
	case NotSupported:
		return "n/a"
	case Unavailable:
		return "not installed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Result of one cell. Detail is one line of measured facts, e.g.
// "400 records, 7 answers dropped, 7 retries recognised as duplicates; each record once".
type Result struct {
	Status Status
	Detail string
}

func pass(format string, args ...any) Result {
	return Result{Pass, fmt.Sprintf(format, args...)}
}

// fail is also for an error: fail("%v", err).
func fail(format string, args ...any) Result {
	return Result{Fail, fmt.Sprintf(format, args...)}
}

// verdict is a checker's answer as a cell's Result: a pass with its
// detail, or a failure with its error.
func verdict(detail string, err error) Result {
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s", detail)
}

func notSupported(format string, args ...any) Result {
	return Result{NotSupported, fmt.Sprintf(format, args...)}
}

func unavailable(format string, args ...any) Result {
	return Result{Unavailable, fmt.Sprintf(format, args...)}
}

// The Go clients are always there; the cells of clients installed from
// elsewhere (apt, npm) say "not installed" with unavailable.
var _ = unavailable

// Cell is one client x version x feature.
type Cell struct {
	Client  string // a column group of the report, e.g. "franz-go (kgo)"; the exact client version goes in Clients below
	Version string // "0.11", "2.1", "2.8", "3.9", "newest"; "default" for clients without a version setting
	Feature string // one of the Feature* constants
	Run     func(ctx context.Context, env *Env) Result
	// ClientID, when set, is the client id the client under test sends
	// (and the checkers' clients do not): the report lists the request
	// versions the proxy saw it use (Env.WireVersions).
	ClientID string
	// SegmentBytes is the server's --segment-bytes for this cell; 0 is
	// 64 KiB. A batch larger than a segment is refused.
	SegmentBytes int
	// SASLSSL gives the cell's server a SASL_SSL listener, a CA and a
	// user made for the cell (Env.SASL), besides the checkers' PLAINTEXT
	// listener behind the proxy.
	SASLSSL bool
}

// Name is the cell's "client/version/feature", which -only matches.
func (c Cell) Name() string { return c.Client + "/" + c.Version + "/" + c.Feature }

const (
	FeatureProduce       = "produce"              // plain (non-idempotent where the client allows) produce, acks=all, read back by the same client
	FeatureIdempotent    = "idempotent retries"   // idempotent produce through the proxy's faults (below); exactly once by store scan and by consuming
	FeatureTransactions  = "transactions"         // the client's transactional producer: commits and aborts; read_committed sees only committed, once
	FeatureReadCommitted = "fetch read_committed" // the client as a read_committed consumer of a log with committed and aborted transactions written by kgo (env.WriteTxnLog)
	FeatureGroups        = "groups"               // group consumers (2 members where the client allows): every record consumed, offsets committed and fetched back
	// Codecs: one feature per codec: the client produces with it (store scan checks the batches carry it), then consumes it back.
	FeatureGzip   = "gzip"
	FeatureSnappy = "snappy"
	FeatureLZ4    = "lz4"
	FeatureZstd   = "zstd"
	// Over a SASL_SSL listener (TLS, SCRAM-SHA-256): an idempotent produce, a group consumer that commits, a wrong password refused.
	FeatureSASLSSL = "sasl_ssl"
)

// features is the order of the report's columns.
var features = []string{
	FeatureProduce, FeatureIdempotent, FeatureTransactions, FeatureReadCommitted, FeatureGroups,
	FeatureGzip, FeatureSnappy, FeatureLZ4, FeatureZstd, FeatureSASLSSL,
}

// Clients: one line per client for the report's header: name, exact version,
// how it was installed. Each client's file appends its own from an init().
var clientInfos []ClientInfo

type ClientInfo struct {
	Name    string // as in Cell.Client
	Version string // measured when the run starts (e.g. `kcat -V`, confluent_kafka.version(), kafkajs package.json), or "not installed"
	Source  string // "Go module proxy", "Debian package kcat", "npm kafkajs@2.2.4"
	Note    string // e.g. how its version setting maps to the versions column
}

// Each file registers its cells: a func returning []Cell appended to
// cellSets from init(); main runs them all, in clientOrder.
var cellSets []func() []Cell

// clientOrder is the order of the clients in the run and the report (Go
// runs the files' init functions in the order of their names).
var clientOrder = []string{kgoClient, saramaClient, confluentClient, kcatClient, kafkaPythonClient, kafkajsClient, kafkaGoClient}

// byClientOrder compares two client names by clientOrder; a name not in
// it comes last.
func byClientOrder(a, b string) int {
	rank := func(name string) int {
		if i := slices.Index(clientOrder, name); i >= 0 {
			return i
		}
		return len(clientOrder)
	}
	return cmp.Compare(rank(a), rank(b))
}

// moduleVersion is the version of the Go module path this program was
// built with, from its build information.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

type config struct {
	logstore    string
	out         string
	only        *regexp.Regexp
	requireAll  bool
	nodeModules string
	cellTimeout time.Duration
	timeout     time.Duration
}

func main() {
	var (
		cfg  config
		only string
	)
	flag.StringVar(&cfg.logstore, "logstore", "", "the logstore `BINARY` to serve with (compat/run builds it)")
	flag.StringVar(&cfg.out, "out", "COMPATIBILITY.md", "where the report goes")
	flag.StringVar(&only, "only", "", "run only the cells whose \"client/version/feature\" matches `REGEXP`")
	flag.BoolVar(&cfg.requireAll, "require-all", false, "a client that is not installed fails the run")
	flag.StringVar(&cfg.nodeModules, "node-modules", ".ci/node/node_modules", "the `DIR` that holds kafkajs")
	flag.DurationVar(&cfg.cellTimeout, "cell-timeout", 60*time.Second, "the bound of one cell")
	flag.DurationVar(&cfg.timeout, "timeout", 8*time.Minute, "the bound of the whole run")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "compat: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if cfg.logstore == "" {
		fmt.Fprintln(os.Stderr, "compat: -logstore is required (compat/run builds the binary and passes it)")
		os.Exit(2)
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			fmt.Fprintf(os.Stderr, "compat: -only: %v\n", err)
			os.Exit(2)
		}
		cfg.only = re
	}
	failed, err := run(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat: %v\n", err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "compat: %d cells failed\n", failed)
		os.Exit(1)
	}
}

// outcome is one cell's result and how long it took.
type outcome struct {
	Cell
	Result
	Took time.Duration
	Wire string // the request versions the client under test used
}

// run runs every selected cell one at a time, writes the report and
// returns the number of failed cells.
func run(cfg config) (int, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "logstore-compat-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	var cells []Cell
	for _, set := range cellSets {
		for _, c := range set() {
			if cfg.only == nil || cfg.only.MatchString(c.Name()) {
				cells = append(cells, c)
			}
		}
	}
	if len(cells) == 0 {
		return 0, fmt.Errorf("no cell matches -only %s", cfg.only)
	}
	slices.SortStableFunc(cells, func(a, b Cell) int { return byClientOrder(a.Client, b.Client) })
	var (
		outs   []outcome
		failed int
	)
	for i, c := range cells {
		o := outcome{Cell: c}
		t0 := time.Now()
		o.Result, o.Wire = runCell(ctx, cfg, tmp, c)
		o.Took = time.Since(t0)
		if o.Status == Unavailable && cfg.requireAll {
			o.Result = fail("not installed, and -require-all is set: %s", o.Detail)
		}
		if o.Status == Fail {
			failed++
		}
		fmt.Fprintf(os.Stderr, "[%d/%d] %s: %s %s (%.1fs)\n", i+1, len(cells), c.Name(), o.Status, o.Detail, o.Took.Seconds())
		outs = append(outs, o)
	}
	rep := &report{
		Date:     start.UTC(),
		Took:     time.Since(start),
		Commit:   gitCommit(),
		Clients:  slices.SortedStableFunc(slices.Values(clientInfos), func(a, b ClientInfo) int { return byClientOrder(a.Name, b.Name) }),
		Outcomes: outs,
		Partial:  cfg.only != nil,
	}
	f, err := os.Create(cfg.out)
	if err != nil {
		return failed, err
	}
	if err := rep.write(f); err != nil {
		f.Close()
		return failed, err
	}
	if err := f.Close(); err != nil {
		return failed, err
	}
	fmt.Fprintf(os.Stderr, "compat: %d cells in %.0fs, %d failed; report in %s\n", len(outs), rep.Took.Seconds(), failed, cfg.out)
	return failed, nil
}

// cellGrace is how long a cell may take to return after its context
// ended.
const cellGrace = 10 * time.Second

// runCell runs one cell against a fresh server, bounded by the cell
// timeout; a panic of the cell is its failure. A server that does not
// stop cleanly after the cell fails it too.
func runCell(ctx context.Context, cfg config, tmp string, c Cell) (res Result, wire string) {
	if err := ctx.Err(); err != nil {
		return fail("not run: the whole run's bound (-timeout) ended first"), ""
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.cellTimeout)
	defer cancel()
	env, err := startEnv(cfg.logstore, tmp, cfg.nodeModules, cmp.Or(c.SegmentBytes, defaultSegmentBytes), c.SASLSSL)
	if err != nil {
		return fail("server: %v", err), ""
	}
	defer env.close()
	// The cell runs in a goroutine of its own: a client that ignores
	// the cell's context must not hold up the run. Such a cell is
	// failed, and its goroutine left behind once its server is gone.
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fail("panic: %v", r)
			}
		}()
		done <- c.Run(cctx, env)
	}()
	select {
	case res = <-done:
	case <-cctx.Done():
		select {
		case res = <-done:
		case <-time.After(cellGrace):
			return fail("the cell did not return within %s after its bound (-cell-timeout %s) ended", cellGrace, cfg.cellTimeout), ""
		}
	}
	if cctx.Err() != nil && res.Status == Fail {
		res.Detail = fmt.Sprintf("the cell's bound (-cell-timeout %s) ended: %s", cfg.cellTimeout, res.Detail)
	}
	if err := env.Stop(); err != nil && res.Status != Fail {
		res = fail("%v (the cell said: %s %s)", err, res.Status, res.Detail)
	}
	if cctx.Err() != nil && res.Status == Pass {
		res = fail("the cell passed after its bound ended: %s", res.Detail)
	}
	if c.ClientID != "" {
		wire = env.WireVersions(c.ClientID)
	}
	return res, wire
}
