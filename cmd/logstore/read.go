package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore/internal/cliout"
	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/recordbatch"
)

// readChunkBytes is how much `logstore read` asks the partition for at
// a time; the partition returns at least one whole batch.
const readChunkBytes = 1 << 20

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

// runRead prints the records. A signal (ctx's cause) stops it between
// reads of the partition; the store is closed and the error wraps the
// interruption.
func runRead(ctx context.Context, o *readOptions) (err error) {
	if o.maxRecords < 0 {
		return fmt.Errorf("--max-records %d: must be 0 (no limit) or more", o.maxRecords)
	}
	store, p, err := o.open(ctx, false)
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
