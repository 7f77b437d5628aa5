package kafkaexport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/fileutil"
	"github.com/logstore/logstore/internal/kafkackpt"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/vfs"
)

// LeaderEpochCheckpointName is the file Kafka keeps a partition's leader
// epochs in.
const LeaderEpochCheckpointName = "leader-epoch-checkpoint"

// LogStartCheckpointName is the file of a Kafka log directory that holds
// each partition's log start offset, where it is above the partition's
// first segment (after DeleteRecords).
const LogStartCheckpointName = kafkackpt.LogStartFileName

var (
	// ErrExists is returned for a partition whose directory is already in
	// the output directory.
	ErrExists = errors.New("partition already in the output directory")
	// ErrOpenTransaction is returned for a partition with a transaction
	// still open.
	ErrOpenTransaction = errors.New("partition has a transaction still open")
	// ErrNoTopic is returned when the topic asked for has no partition in
	// the store.
	ErrNoTopic = errors.New("topic has no partition in the store")
)

// Options are Export's settings.
type Options struct {
	// Topic, when set, exports only that topic's partitions.
	Topic string
	// Store are the options the store is opened with (its lock timeout).
	Store logstore.Options
}

// Partition is what Export wrote for one partition.
type Partition struct {
	ID          logstore.PartitionID
	Dir         string   // the output directory of the partition
	Segments    []string // the segment files copied, by name
	StartOffset int64
	EndOffset   int64
	Producers   int             // entries in the .snapshot file
	Snapshot    string          // the .snapshot file's name
	TopicID     catalog.TopicID // the zero id when the store has none
	HasTopicID  bool            // whether partition.metadata was written
	Epochs      []EpochEntry    // the leader-epoch-checkpoint entries
}

// EpochEntry is one line of a leader-epoch-checkpoint.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EncodeLeaderEpochCheckpoint returns the bytes of a
// leader-epoch-checkpoint file holding entries, as Kafka's CheckpointFile
// writes them: version 0, the count, then "<epoch> <startOffset>" lines,
// each line ended by "\n".
func EncodeLeaderEpochCheckpoint(entries []EpochEntry) []byte {
	var b []byte
	b = append(b, "0\n"...)
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return b
}

// Export writes the partitions of the store in storeDir (or of
// opts.Topic) into outDir, creating it if needed, as the package doc
// says. It returns what it wrote, partition by partition, in order; on an
// error the partitions before the failing one are complete.
func Export(storeDir, outDir string, opts Options) ([]Partition, error) {
	st, err := logstore.Open(storeDir, opts.Store)
	if err != nil {
		return nil, fmt.Errorf("kafkaexport: %w", err)
	}
	defer st.Close()
	ids, err := st.Partitions()
	if err != nil {
		return nil, fmt.Errorf("kafkaexport: %w", err)
	}
	if opts.Topic != "" {
		var only []logstore.PartitionID
		for _, id := range ids {
			if id.Topic == opts.Topic {
				only = append(only, id)
			}
		}
		if len(only) == 0 {
			return nil, fmt.Errorf("kafkaexport: store %s: %q: %w", storeDir, opts.Topic, ErrNoTopic)
		}
		ids = only
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("kafkaexport: %w", err)
	}
	// Refuse before writing anything.
	for _, id := range ids {
		dst := filepath.Join(outDir, id.String())
		if _, err := os.Lstat(dst); err == nil {
			return nil, fmt.Errorf("kafkaexport: %s: %w", dst, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("kafkaexport: %w", err)
		}
	}
	var done []Partition
	for _, id := range ids {
		p, err := exportPartition(st, id, outDir)
		if err != nil {
			return done, fmt.Errorf("kafkaexport: partition %s of store %s: %w", id, storeDir, err)
		}
		done = append(done, p)
	}
	if err := writeLogStarts(outDir, done); err != nil {
		return done, fmt.Errorf("kafkaexport: %w", err)
	}
	if err := fileutil.SyncDir(outDir); err != nil {
		return done, fmt.Errorf("kafkaexport: %w", err)
	}
	return done, nil
}

// writeLogStarts writes outDir's log-start-offset-checkpoint with the log
// start of every partition in parts, keeping the entries of other
// partitions a file already there holds (an earlier export into the same
// directory): to its .tmp, synced, then renamed over it, as Kafka's
// CheckpointFile writes. The directory is synced by the caller.
func writeLogStarts(outDir string, parts []Partition) error {
	path := filepath.Join(outDir, LogStartCheckpointName)
	starts := map[kafkackpt.Partition]int64{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if starts, err = kafkackpt.Decode(data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	for _, p := range parts {
		starts[kafkackpt.Partition{Topic: p.ID.Topic, Partition: p.ID.Partition}] = p.StartOffset
	}
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := writeFile(tmp, kafkackpt.Encode(starts)); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func exportPartition(st *logstore.Store, id logstore.PartitionID, outDir string) (_ Partition, err error) {
	part, err := st.ExistingPartition(id.Topic, id.Partition)
	if err != nil {
		return Partition{}, err
	}
	out := Partition{ID: id, Dir: filepath.Join(outDir, id.String())}
	out.StartOffset, out.EndOffset = part.StartOffset(), part.EndOffset()
	// The last stable offset is bounded by the durable end.
	if err := part.SyncTo(out.EndOffset); err != nil {
		return Partition{}, errors.Join(err, part.Close())
	}
	lso := part.LastStableOffset()
	snap := part.ProducerSnapshot()
	// The epochs as the partition holds them: epoch 0 from the log start
	// for logstore's own data, an adopted partition's checkpoint (with
	// what logstore appended extending its latest epoch) otherwise.
	for _, e := range part.LeaderEpochs() {
		out.Epochs = append(out.Epochs, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	// Close syncs the log and leaves its files as a clean shutdown does;
	// the store's lock keeps every other writer out while they are copied.
	if err := part.Close(); err != nil {
		return Partition{}, err
	}
	if lso < out.EndOffset {
		return Partition{}, fmt.Errorf("%w: last stable offset %d below log end %d (end or abort the transactions first, e.g. let logstore serve's coordinator time them out)",
			ErrOpenTransaction, lso, out.EndOffset)
	}
	src := filepath.Join(st.Dir(), id.String())
	ents, err := os.ReadDir(src)
	if err != nil {
		return Partition{}, err
	}
	if err := os.Mkdir(out.Dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Partition{}, fmt.Errorf("%s: %w", out.Dir, ErrExists)
		}
		return Partition{}, err
	}
	// A partition written in part is removed, so that a second run can
	// write it whole rather than be refused.
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(out.Dir))
		}
	}()
	for _, e := range ents {
		if !e.Type().IsRegular() || !isSegmentFile(e.Name()) {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(out.Dir, e.Name())); err != nil {
			return Partition{}, err
		}
		out.Segments = append(out.Segments, e.Name())
	}

	entries := snapshot.KafkaEntriesOf(snap)
	out.Producers = len(entries)
	out.Snapshot = snapshot.KafkaSnapshotName(out.EndOffset)
	if err := writeFile(filepath.Join(out.Dir, out.Snapshot), snapshot.AppendKafka(nil, entries)); err != nil {
		return Partition{}, err
	}

	tid, err := catalog.ReadPartitionMetadata(st.FS(), src)
	switch {
	case err == nil:
		out.TopicID, out.HasTopicID = tid, true
		if err := catalog.WritePartitionMetadata(vfs.OS, out.Dir, tid); err != nil {
			return Partition{}, err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return Partition{}, err
	}

	if err := writeFile(filepath.Join(out.Dir, LeaderEpochCheckpointName), EncodeLeaderEpochCheckpoint(out.Epochs)); err != nil {
		return Partition{}, err
	}
	if err := fileutil.SyncDir(out.Dir); err != nil {
		return Partition{}, err
	}
	return out, nil
}

// isSegmentFile reports whether name is one of a segment's files.
func isSegmentFile(name string) bool {
	for _, s := range []string{".log", ".index", ".timeindex", ".txnindex"} {
		if base, ok := strings.CutSuffix(name, s); ok {
			_, ok := snapshot.ParseKafkaSnapshotName(base + snapshot.KafkaSnapshotSuffix)
			return ok
		}
	}
	return false
}

// copyFile copies src to a new file dst and syncs it.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Sync()
}

// writeFile writes data to a new file path and syncs it.
func writeFile(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}
