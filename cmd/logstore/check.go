package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/cliout"
)

// errProblemsFound marks a check that found problems in the store: exit
// status 2 (exitProblems).
var errProblemsFound = errors.New("found")

// checkOptions holds the flags of `logstore check`.
type checkOptions struct {
	dir string

	stdout   io.Writer
	progress io.Writer // stderr when it is a terminal, else nil
}

func newCheckCommand() *cobra.Command {
	opts := &checkOptions{dir: defaultStoreDir()}
	cmd := &cobra.Command{
		Use:   "check [--dir DIR]",
		Short: "Verify a whole store without changing it",
		Long: `check verifies every partition of the store in --dir and changes nothing:
it opens every file read-only, does not take the store's lock, and neither
recovers, cuts, rebuilds nor deletes anything. Run it on a store that no
process has open: while a store is open its snapshot files are locked, and
check fails rather than wait.

For every partition it checks:

  - every batch of every segment (.log), read as a stream: its size,
    magic byte, CRC-32C, codec and record count, every record decoded
    as a reader decodes it, and offsets that increase within and across
    segments;
  - every .index entry: the last offset of the batch that starts at the
    entry's position; every .timeindex entry: an offset (the last, as
    logstore writes it) of a batch whose max timestamp is the entry's
    timestamp; entries in order;
  - every producer-state snapshot in producer-snapshots.db: it must
    decode, and equal the state a replay of the log gives at its offset.
    A producer the snapshot leaves out is fine when it has no open
    transaction (the store forgets idle producers).

It prints one line per finding, then a summary:

  <KIND> <file> at byte <position>: <what is wrong>
  <KIND> <file> at snapshot offset <offset>: <what is wrong>
  <KIND> <file>: <what is wrong>
  checked <n> partitions: <n> segments, <n> batches, <n> records, <n> bytes, <n> index entries, <n> snapshots; <n> problems, <n> notes

Files are named relative to --dir. The kinds:

  CORRUPT    damaged log data (a bad size, magic, CRC or offset) outside
             a torn tail. When it lies where the next open scans (after an
             unclean shutdown), the line says what that open will cut.
             Also a batch whose CRC is valid but whose records cannot be
             decoded: every read of it fails; the line names the record.
  TORN_TAIL  the active segment ends in a write an unclean shutdown cut
             short, with no valid batch after it:
             "torn tail: N bytes, will be cut at the next open".
  INDEX      an index entry that disagrees with the log.
  SNAPSHOT   a snapshot that cannot be read, differs from the replay, or
             lies above the log end or inside a batch; a snapshot db that
             cannot be opened (empty, not a file): the log is still checked.
  PARTITION  an entry named as a partition (<topic>-<partition>) that the
             store cannot open: a regular file, a dangling symbolic link
             or a loop of them, an unreadable directory.
  NOTE       not a problem: something the next open tidies up (an index
             Kafka preallocated and did not trim, a leftover file, index
             entries the next open rebuilds anyway) or could not check.

On a terminal, progress is shown on stderr.

Exit status: 0 when no problem was found (notes allowed); 2 when problems
were found; 1 when the check could not be done (bad flags, a missing
store directory, an I/O error, a locked snapshot file).`,
		Example: `  logstore check
  logstore check --dir /var/lib/logstore || echo "damaged"`,
		Args: inspectNoArgs("name the store with --dir"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.stdout = cmd.OutOrStdout()
			if errOut := cmd.ErrOrStderr(); cliout.IsTerminal(errOut) {
				opts.progress = errOut
			}
			return runCheck(opts)
		},
	}
	f := cmd.Flags()
	addDirFlag(f, &opts.dir)
	return cmd
}

func runCheck(o *checkOptions) error {
	if err := existingStoreDir(o.dir); err != nil {
		return err
	}
	pl := cliout.NewProgress(o.progress)
	var writeErr error
	c := logstore.Checker{
		Report: func(p logstore.Problem) {
			pl.Clear()
			if _, err := io.WriteString(o.stdout, p.String()+"\n"); err != nil && writeErr == nil {
				writeErr = fmt.Errorf("writing the report: %w", err)
			}
		},
	}
	if pl != nil {
		c.Progress = func(p logstore.CheckProgress) {
			pct := int64(100)
			if p.Total > 0 {
				pct = min(p.Done*100/p.Total, 100)
			}
			pl.Printf("checking %s: %s of %s (%d%%)", p.Partition, checkMiB(p.Done), checkMiB(p.Total), pct)
		}
	}
	stats, err := c.Check(o.dir)
	pl.Clear()
	if err != nil {
		return err
	}
	if writeErr != nil {
		return writeErr
	}
	if _, err := io.WriteString(o.stdout, checkSummary(stats)+"\n"); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if stats.Problems > 0 {
		return fmt.Errorf("%s %w", countNoun(stats.Problems, "problem"), errProblemsFound)
	}
	return nil
}

// checkSummary is the last line of check's report.
func checkSummary(s logstore.CheckStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "checked %s: %s, %s, %s, %s, %s, %s; ",
		countNoun(s.Partitions, "partition"), countNoun(s.Segments, "segment"), countNoun(s.Batches, "batch"),
		countNoun(s.Records, "record"), countNoun(s.Bytes, "byte"), countNoun(s.IndexEntries+s.TimeIndexEntries, "index entry"),
		countNoun(s.Snapshots, "snapshot"))
	if s.Problems == 0 {
		b.WriteString("no problems")
	} else {
		b.WriteString(countNoun(s.Problems, "problem"))
	}
	if s.Notes > 0 {
		b.WriteString(", " + countNoun(s.Notes, "note"))
	}
	return b.String()
}

// countNoun is "1 batch", "2 batches", "1 index entry", "3 index entries".
func countNoun[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	switch {
	case strings.HasSuffix(noun, "ch"):
		noun += "es"
	case strings.HasSuffix(noun, "y"):
		noun = strings.TrimSuffix(noun, "y") + "ies"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

func checkMiB(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
