package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/recordbatch"
)

// readChunkBytes is how much `logstore read` asks the partition for at
// a time; the partition returns at least one whole batch.
const readChunkBytes = 1 << 20

// partitionFlags are the flags that name one partition of a store, as
// producers and read take them.
type partitionFlags struct {
	dir         string
	topic       string
	partition   int32
	lockTimeout time.Duration
	store       storeFlags
}

func newPartitionFlags() partitionFlags {
	dir := defaultAppendDir
	if d := os.Getenv(envStoreDir); d != "" {
		dir = d
	}
	return partitionFlags{dir: dir, topic: defaultAppendTopic, lockTimeout: defaultAppendLockTimeout}
}

// addTo declares the flags on cmd.
func (pf *partitionFlags) addTo(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&pf.dir, "dir", pf.dir, "store directory `DIR`, or $"+envStoreDir+" when set")
	f.StringVar(&pf.topic, "topic", pf.topic, "`TOPIC` of the partition")
	f.Int32Var(&pf.partition, "partition", pf.partition, "partition number")
	f.DurationVar(&pf.lockTimeout, "lock-timeout", pf.lockTimeout, "how long to wait while another process holds the store; 0 fails at once")
	pf.store.addTo(cmd)
}

// open checks the names and that the store and the partition exist
// (opening must not create them), then opens the store, which takes its
// lock, and the partition, which recovers it as every open does.
func (pf *partitionFlags) open(ctx context.Context, opts logstore.Options) (*logstore.Store, *logstore.Partition, error) {
	if err := pf.store.apply(&opts); err != nil {
		return nil, nil, err
	}
	id := logstore.PartitionID{Topic: pf.topic, Partition: pf.partition}
	if err := id.Validate(); err != nil {
		return nil, nil, err
	}
	if err := existingStoreDir(pf.dir); err != nil {
		return nil, nil, err
	}
	pdir := filepath.Join(pf.dir, id.String())
	if fi, err := os.Stat(pdir); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("store %s has no partition %s (no directory %s)", pf.dir, id, pdir)
	}
	opts.LockTimeout = storeDuration(pf.lockTimeout)
	store, err := openStoreUntil(ctx, pf.dir, opts)
	if err != nil {
		return nil, nil, err
	}
	p, err := store.Partition(pf.topic, pf.partition)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close())
	}
	return store, p, nil
}

// existingStoreDir checks that the store directory dir exists and is a
// directory: the inspecting commands never create a store.
func existingStoreDir(dir string) error {
	if dir == "" {
		return errors.New("--dir is empty")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("store directory %s is not a directory", dir)
	}
	return nil
}

// commandOutput is where a command that opens a partition writes: its
// result on stdout, notices on stderr, prefixed with where (the command
// path).
type commandOutput struct {
	stdout io.Writer
	stderr io.Writer
	where  string
}

// bind sets o from cmd: its output streams and its path.
func (o *commandOutput) bind(cmd *cobra.Command) {
	o.stdout, o.stderr, o.where = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.CommandPath()
}

// reportRecovery says on stderr what opening p changed on disk, if
// anything: a cut tail, deleted snapshots, a snapshot db set aside.
func (o *commandOutput) reportRecovery(p *logstore.Partition) {
	w, where := o.stderr, o.where
	rec, st := p.Recovery(), p.Startup()
	if rec.TruncatedBytes > 0 {
		fmt.Fprintf(w, "%s: opening partition %s cut %d bytes from segment %020d, from offset %d on: %v\n",
			where, p.ID(), rec.TruncatedBytes, rec.TruncatedSegment, rec.TruncatedAt, rec.Reason)
	}
	for _, f := range rec.CutFiles {
		fmt.Fprintf(w, "%s: opening partition %s kept what it cut in %s\n", where, p.ID(), f)
	}
	if st.Snapshots.Warning != "" {
		fmt.Fprintf(w, "%s: %s\n", where, st.Snapshots.Warning)
	}
	for _, sk := range st.SkippedSnapshots {
		fmt.Fprintf(w, "%s: opening partition %s skipped the snapshot at offset %d: %v\n", where, p.ID(), sk.Offset, sk.Err)
	}
	if st.DeletedAbove > 0 {
		fmt.Fprintf(w, "%s: opening partition %s deleted %d snapshots above the log end\n", where, p.ID(), st.DeletedAbove)
	}
}

// inspectNoArgs refuses positional arguments, naming the flags to use.
func inspectNoArgs(hint string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: %s", args[0], hint)
		}
		return nil
	}
}

// readOptions holds the flags of `logstore read`.
type readOptions struct {
	partitionFlags
	offset     int64
	offsetSet  bool
	maxRecords int64
	json       bool

	commandOutput
}

func newReadCommand() *cobra.Command {
	opts := &readOptions{partitionFlags: newPartitionFlags()}
	cmd := &cobra.Command{
		Use:   "read [--dir DIR] [--topic TOPIC] [--partition N] [--offset N] [--max-records M] [--json]",
		Short: "Print a partition's records from an offset, as a console consumer does",
		Long: `read prints the records of a partition from --offset (default: the log
start) to the log end, or to --max-records records, one line per record:

  offset=<offset> <timestamp type>=<timestamp> key=<key> value=<value> headers=[<key>=<value>,...]

for example

  offset=5 CreateTime=1700000000000 key=user-7 value=hello headers=[source=web,trace=null]

The timestamp type is CreateTime or LogAppendTime, as the batch says; a
record without a timestamp shows -1. A null key, value or header value
is the bare word null. A key, value, header key or header value is
printed as it is when it is non-empty, valid UTF-8, made of printable
characters other than spaces and , = [ ], does not start with " and is
not the word null; otherwise it is printed as a double-quoted string
with Go's escapes: \" \\ \n \t, \u00a0 for unprintable characters and
\xff for each byte that is not UTF-8. So "" is an empty value, "null"
the text null, and "\x00\xff" two binary bytes. Control batches
(transaction markers) are not printed; records of aborted transactions
are (as a consumer reading uncommitted data sees them).

With --json each record is a JSON object on a line of its own:

  {"offset":5,"timestampType":"CreateTime","timestamp":1700000000000,
   "key":"user-7","value":"hello","headers":[{"key":"source","value":"web"}]}

A null key or value is null; one that is not valid UTF-8 is given as
"keyBase64" or "valueBase64" (standard base64) instead of "key" or
"value", as append --input takes them; header keys and values likewise.
Each line is a record object of append --input's format, so
read --json | append --input - copies the records.

read opens the store as append does: it takes the store's lock (waiting
up to --lock-timeout), and opening the partition recovers it as every
open does (after an unclean shutdown a torn tail is cut and the indexes
rebuilt; what was changed is said on stderr); it closes the store
cleanly. To look at a store without changing anything, use check.

Exit status: 0 when the records were printed; 1 for bad flags, a store
or partition that does not exist or cannot be opened, an offset outside
the log, or a batch that cannot be read; 130 or 143 when SIGINT or
SIGTERM stopped it (between reads; the store is closed cleanly; a
second signal exits at once).`,
		Example: `  logstore read --offset 0
  logstore read --dir data --topic orders --partition 2 --offset 100 --max-records 10
  logstore read --json | jq .value`,
		Args: inspectNoArgs("name the partition with --dir, --topic and --partition"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.offsetSet = cmd.Flags().Changed("offset")
			opts.bind(cmd)
			stop := shutdown.Catch(cmd.Context())
			defer stop.Stop()
			return runRead(stop.Context(), opts)
		},
	}
	cmd.Flags().SortFlags = false
	opts.addTo(cmd)
	f := cmd.Flags()
	f.Int64Var(&opts.offset, "offset", 0, "first offset to print (default the log start)")
	f.Int64Var(&opts.maxRecords, "max-records", 0, "stop after this many records; 0 for no limit")
	f.BoolVar(&opts.json, "json", false, "print records as JSON Lines")
	return cmd
}

// startingOffset is where a read of p starts: the offset a flag gave
// (when set), which must lie in the partition, or the log start.
func startingOffset(p *logstore.Partition, flag string, off int64, set bool) (int64, error) {
	start, end := p.StartOffset(), p.EndOffset()
	if !set {
		return start, nil
	}
	if off < start || off > end {
		return 0, fmt.Errorf("%s %d is outside partition %s, which holds offsets %d to %d", flag, off, p.ID(), start, end-1)
	}
	return off, nil
}

// runRead prints the records. A signal (ctx's cause) stops it between
// reads of the partition; the store is closed and the error wraps the
// interruption.
func runRead(ctx context.Context, o *readOptions) (err error) {
	if o.maxRecords < 0 {
		return fmt.Errorf("--max-records %d: must be 0 (no limit) or more", o.maxRecords)
	}
	store, p, err := o.open(ctx, logstore.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	o.reportRecovery(p)

	off, err := startingOffset(p, "--offset", o.offset, o.offsetSet)
	if err != nil {
		return err
	}
	end := p.EndOffset()
	out := bufio.NewWriter(o.stdout)
	defer func() {
		if ferr := out.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("writing the records: %w", ferr)
		}
	}()
	rp := &recordPrinter{w: out, json: o.json}
	var rr recordbatch.RecordReader
	printed := int64(0)
	for off < end && (o.maxRecords == 0 || printed < o.maxRecords) {
		if stop := interruption(ctx); stop != nil {
			return fmt.Errorf("%w: %d records printed; offset %d and later were not", stop, printed, off)
		}
		data, err := p.Read(off, readChunkBytes)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 && (o.maxRecords == 0 || printed < o.maxRecords) {
			b, err := recordbatch.Parse(data, 0)
			if err == nil {
				err = b.Validate()
			}
			if err != nil {
				return fmt.Errorf("partition %s: the batch holding offset %d: %w", p.ID(), off, err)
			}
			data = data[b.Size():]
			next := b.LastOffset() + 1
			if b.Attributes().Control() {
				off = next
				continue
			}
			tsType := b.Attributes().TimestampType()
			if err := rr.Reset(b, 0); err != nil {
				return fmt.Errorf("partition %s: the batch at offsets %d..%d: %w", p.ID(), b.BaseOffset(), b.LastOffset(), err)
			}
			for rr.Next() {
				rec := rr.Record()
				if rec.Offset < off {
					continue
				}
				if err := rp.print(rec, tsType); err != nil {
					return fmt.Errorf("writing the records: %w", err)
				}
				if printed++; o.maxRecords > 0 && printed >= o.maxRecords {
					break
				}
			}
			if err := rr.Err(); err != nil {
				return fmt.Errorf("partition %s: the batch at offsets %d..%d: %w", p.ID(), b.BaseOffset(), b.LastOffset(), err)
			}
			off = next
		}
	}
	return nil
}

// recordPrinter prints records as text or JSON Lines.
type recordPrinter struct {
	w    *bufio.Writer
	json bool
	buf  []byte
}

func (rp *recordPrinter) print(rec *recordbatch.Record, tsType recordbatch.TimestampType) error {
	if rp.json {
		rp.buf = jsonl.AppendRecord(rp.buf[:0], rec, tsType)
	} else {
		rp.buf = cliout.AppendRecordText(rp.buf[:0], rec, tsType)
	}
	rp.buf = append(rp.buf, '\n')
	_, err := rp.w.Write(rp.buf)
	return err
}
