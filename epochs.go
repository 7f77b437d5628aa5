package logstore

// Leader epochs.
//
// Kafka keeps, per partition, the list of leader epochs and the offset
// each began at, in the partition directory's leader-epoch-checkpoint:
// a text file of lines ended by "\n", the first the format version "0",
// the second the number of entries, then one "<epoch> <startOffset>"
// line per entry (Kafka's CheckpointFile; package kafkaexport writes
// it). A consumer asks a broker for it through OffsetForLeaderEpoch
// (KIP-320) to learn whether the log it read was truncated.
//
// logstore is one node that never changes leader: every batch it takes
// is stamped with the partition's LeaderEpoch (package kafkaserver), 0
// for a partition of its own, which so has the one epoch 0, from the log
// start, once it holds anything. A partition adopted from Kafka's files
// may carry a leader-epoch-checkpoint; it is read and checked once, when
// the partition opens (a file that does not parse fails the open, naming
// the file and the line), and its entries are then the partition's
// epochs. They are not rewritten: logstore leads the partition at the
// checkpoint's latest epoch, so what it appends extends that epoch's
// entry, as a Kafka leader's appends extend its own.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/logstore/logstore/vfs"
)

// LeaderEpochCheckpointName is the file in a partition directory that
// holds its leader epochs, as Kafka names it.
const LeaderEpochCheckpointName = "leader-epoch-checkpoint"

// maxLeaderEpochCheckpointBytes bounds the checkpoint read at open: a
// line is at most 31 bytes, so 4 MiB is over 100,000 epochs, more than
// any partition has had.
const maxLeaderEpochCheckpointBytes = 4 << 20

// ErrBadLeaderEpochCheckpoint is wrapped by the error of a
// leader-epoch-checkpoint that does not parse.
var ErrBadLeaderEpochCheckpoint = errors.New("bad leader-epoch-checkpoint")

// EpochEntry is one leader epoch of a partition and the first offset
// written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// DecodeLeaderEpochCheckpoint parses the bytes of a
// leader-epoch-checkpoint: version 0, the entry count, then that many
// "<epoch> <startOffset>" lines, epochs rising and not negative, start
// offsets not falling and not negative. Kafka's reader splits a line on
// runs of white space; so does this one. An error wraps
// ErrBadLeaderEpochCheckpoint and names the line (from 1).
func DecodeLeaderEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrBadLeaderEpochCheckpoint, line, fmt.Sprintf(format, args...))
	}
	text := string(data)
	// Each line ends with "\n"; a last line without one is still read,
	// as Java's BufferedReader reads it.
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\n")
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if len(lines) < 1 {
		return nil, bad(1, "no version line")
	}
	if v := strings.TrimSpace(lines[0]); v != "0" {
		return nil, bad(1, "version %q, want 0", v)
	}
	if len(lines) < 2 {
		return nil, bad(2, "no entry count")
	}
	count, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || count < 0 {
		return nil, bad(2, "entry count %q is not a count", lines[1])
	}
	if got := len(lines) - 2; got < count {
		return nil, bad(len(lines)+1, "%d entries, the count says %d", got, count)
	} else if got > count {
		return nil, bad(2+count+1, "%d entries, the count says %d", got, count)
	}
	entries := make([]EpochEntry, 0, count) // count == len(lines)-2: lines that are there
	for i, l := range lines[2:] {
		line := i + 3
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, bad(line, "%q is not \"<epoch> <startOffset>\"", l)
		}
		epoch, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil || epoch < 0 {
			return nil, bad(line, "epoch %q is not an epoch", f[0])
		}
		start, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || start < 0 {
			return nil, bad(line, "start offset %q is not an offset", f[1])
		}
		if n := len(entries); n > 0 {
			prev := entries[n-1]
			if int32(epoch) <= prev.Epoch {
				return nil, bad(line, "epoch %d after epoch %d", epoch, prev.Epoch)
			}
			if start < prev.StartOffset {
				return nil, bad(line, "start offset %d below the previous epoch's %d", start, prev.StartOffset)
			}
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return entries, nil
}

// loadLeaderEpochs reads pdir's leader-epoch-checkpoint, if it has one,
// into p.epochs.
func (p *Partition) loadLeaderEpochs(pdir string) error {
	name := filepath.Join(pdir, LeaderEpochCheckpointName)
	data, err := vfs.ReadFile(p.store.fs, name, maxLeaderEpochCheckpointBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, vfs.ErrTooLarge):
		return fmt.Errorf("leader epochs: %w: %w", ErrBadLeaderEpochCheckpoint, err)
	case err != nil:
		return fmt.Errorf("leader epochs: %w", err)
	}
	entries, err := DecodeLeaderEpochCheckpoint(data)
	if err != nil {
		return fmt.Errorf("leader epochs: %s: %w", name, err)
	}
	p.epochs = entries
	return nil
}

// LeaderEpochs returns the partition's leader epochs, oldest first, as
// the log holds them now: the leader-epoch-checkpoint's entries when the
// partition opened with a non-empty one, else epoch 0 from the log
// start; none when the log is empty. As Kafka trims its epoch cache,
// entries that begin at or past the end (the high watermark,
// DurableEnd) are left out, an epoch wholly below the log start too, and
// the first one kept begins no lower than the log start.
func (p *Partition) LeaderEpochs() []EpochEntry {
	return p.leaderEpochs(p.StartOffset(), p.DurableEnd())
}

// leaderEpochs is LeaderEpochs for a log from start to end.
func (p *Partition) leaderEpochs(start, end int64) []EpochEntry {
	if start >= end {
		return nil
	}
	if len(p.epochs) == 0 {
		return []EpochEntry{{Epoch: 0, StartOffset: start}}
	}
	var out []EpochEntry
	for i, e := range p.epochs {
		if e.StartOffset >= end {
			break
		}
		if i+1 < len(p.epochs) && p.epochs[i+1].StartOffset <= start {
			continue // the next one begins at or before the log start
		}
		out = append(out, EpochEntry{Epoch: e.Epoch, StartOffset: max(e.StartOffset, start)})
	}
	return out
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for one partition as
// Kafka's LeaderEpochFileCache.endOffsetFor does, over LeaderEpochs:
// epoch -1, or one above every epoch, is (-1, -1); the latest epoch is
// that epoch and the end (DurableEnd); a lower one is the epoch of the
// latest entry at or below it (the requested epoch itself when none is)
// and the start offset of the first entry above it.
func (p *Partition) EndOffsetForEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	if epoch == -1 {
		return -1, -1
	}
	end := p.DurableEnd()
	epochs := p.leaderEpochs(p.StartOffset(), end)
	if len(epochs) == 0 {
		return -1, -1
	}
	if latest := epochs[len(epochs)-1]; latest.Epoch == epoch {
		return epoch, end
	}
	floor := epoch
	for _, e := range epochs {
		if e.Epoch > epoch {
			return floor, e.StartOffset
		}
		floor = e.Epoch
	}
	return -1, -1
}

// EpochOf returns the leader epoch offset was written in, by
// LeaderEpochs: that of the last epoch beginning at or below it (the
// first epoch's for an offset below them all), and 0, logstore's own
// epoch, when there are none. ListOffsets answers it with an offset, as
// Kafka answers from its epoch cache.
func (p *Partition) EpochOf(offset int64) int32 {
	epochs := p.LeaderEpochs()
	if len(epochs) == 0 {
		return 0
	}
	epoch := epochs[0].Epoch
	for _, e := range epochs[1:] {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// LeaderEpoch is the epoch logstore leads the partition at: the latest
// epoch of an adopted partition's leader-epoch-checkpoint, else 0,
// logstore's own. Produce stamps it into the batches it takes and the
// transaction markers carry it, so what logstore appends to adopted
// data extends its latest epoch, as a Kafka leader's appends extend
// its own, and OffsetForLeaderEpoch, Metadata and the CurrentLeaderEpoch
// checks agree with the batches.
func (p *Partition) LeaderEpoch() int32 {
	if len(p.epochs) == 0 {
		return 0
	}
	return p.epochs[len(p.epochs)-1].Epoch
}

// OpenLeaderEpoch is the LeaderEpoch of partition id when the store has
// it open, and 0 (logstore's own epoch) when it has not: a Metadata
// answer need not open every partition. An adopted partition not yet
// open is thus said to be at 0 until something opens it; a client's
// request with epoch 0 then answers FENCED_LEADER_EPOCH, on which the
// client asks Metadata again and learns the partition's epoch.
func (s *Store) OpenLeaderEpoch(id PartitionID) int32 {
	s.mu.Lock()
	e := s.parts[id]
	s.mu.Unlock()
	if e == nil {
		return 0
	}
	select {
	case <-e.ready:
	default:
		return 0
	}
	if e.p == nil {
		return 0
	}
	return e.p.LeaderEpoch()
}
