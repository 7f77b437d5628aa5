package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/logstore/logstore"
)

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
	return partitionFlags{dir: defaultStoreDir(), topic: defaultAppendTopic, lockTimeout: defaultAppendLockTimeout}
}

// defaultStoreDir is the default of every --dir: $LOGSTORE_DIR when set,
// else ./logstore-data.
func defaultStoreDir() string {
	if d := os.Getenv(envStoreDir); d != "" {
		return d
	}
	return defaultAppendDir
}

// addDirFlag declares --dir, defaulting to *dir.
func addDirFlag(f *pflag.FlagSet, dir *string) {
	f.StringVar(dir, "dir", *dir, "store directory `DIR`, or $"+envStoreDir+" when set")
}

// addLockTimeoutFlag declares --lock-timeout, defaulting to *d.
func addLockTimeoutFlag(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "lock-timeout", *d, "how long to wait while another process holds the store; 0 fails at once")
}

// addTo declares the flags on cmd.
func (pf *partitionFlags) addTo(cmd *cobra.Command) {
	f := cmd.Flags()
	addDirFlag(f, &pf.dir)
	f.StringVar(&pf.topic, "topic", pf.topic, "`TOPIC` of the partition")
	f.Int32Var(&pf.partition, "partition", pf.partition, "partition number")
	addLockTimeoutFlag(f, &pf.lockTimeout)
	pf.store.addTo(cmd)
}

// open checks the names and that the store exists (opening must not
// create it), then opens the store, which takes its lock, and the
// partition, which recovers it as every open does. The partition must
// exist: without existing, its directory must be there before the store
// is opened; with existing, the open store must know it (an error
// wrapping logstore.ErrNoPartition), and no directory is made.
func (pf *partitionFlags) open(ctx context.Context, existing bool) (*logstore.Store, *logstore.Partition, error) {
	var opts logstore.Options
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
	if pdir := filepath.Join(pf.dir, id.String()); !existing {
		if fi, err := os.Stat(pdir); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("store %s has no partition %s (no directory %s)", pf.dir, id, pdir)
		}
	}
	opts.LockTimeout = storeDuration(pf.lockTimeout)
	store, err := openStoreUntil(ctx, pf.dir, opts)
	if err != nil {
		return nil, nil, err
	}
	partition := store.Partition
	if existing {
		partition = store.ExistingPartition
	}
	p, err := partition(pf.topic, pf.partition)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close()) // names the store and the partition
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

// checkPartitionFlags checks --topic and --partition by Kafka's rules
// before anything is created, and names the flag that is wrong.
func checkPartitionFlags(topic string, partition int32) error {
	err := logstore.PartitionID{Topic: topic, Partition: partition}.Validate()
	switch {
	case err == nil:
		return nil
	case logstore.PartitionID{Topic: topic}.Validate() == nil:
		return fmt.Errorf("--partition %d: %w", partition, err)
	}
	return fmt.Errorf("--topic %q: %w", topic, err)
}
