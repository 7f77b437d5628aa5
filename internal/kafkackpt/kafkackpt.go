// Package kafkackpt is the text format of a Kafka log directory's offset
// checkpoints: log-start-offset-checkpoint and
// recovery-point-offset-checkpoint, each in the root of a log dir with
// one entry per partition. Kafka's CheckpointFile writes them as lines
// ended by "\n":
//
//	0                               the version
//	<n>                             the number of entries
//	<topic> <partition> <offset>    n lines, one per partition
//
// Encode writes the entries in the order of the partitions (topic, then
// number), as kafkaexport writes log-start-offset-checkpoint. Decode
// reads what Encode or Kafka wrote and refuses what Kafka's reader
// refuses: another version, a count that is not the number of lines
// after it, a line that is not three fields (a topic, an int32, an
// int64). Its errors wrap ErrMalformed and name the line (from 1).
//
// The package is internal so that the root package (which adopts a Kafka
// log dir, honouring its log-start-offset-checkpoint) and kafkaexport
// (which writes one) share one codec; it has its own Partition type, as
// an internal package cannot import the root package.
package kafkackpt

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// LogStartFileName is the file of a Kafka log directory that holds each
// partition's log start offset where it is above the partition's first
// segment (after DeleteRecords): a broker starts the partition at the
// larger of the two.
const LogStartFileName = "log-start-offset-checkpoint"

// Partition names an entry: a topic and a partition number.
type Partition struct {
	Topic     string
	Partition int32
}

// ErrMalformed marks an offset checkpoint that Decode cannot read.
var ErrMalformed = errors.New("malformed offset checkpoint")

// Encode returns the bytes of an offset checkpoint holding offsets, in
// the order of the partitions.
func Encode(offsets map[Partition]int64) []byte {
	ids := slices.SortedFunc(maps.Keys(offsets), func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	b := fmt.Appendf(nil, "0\n%d\n", len(ids))
	for _, id := range ids {
		b = fmt.Appendf(b, "%s %d %d\n", id.Topic, id.Partition, offsets[id])
	}
	return b
}

// Decode reads an offset checkpoint. A partition named twice keeps its
// last line's offset, as Kafka's reader (a map) does.
func Decode(data []byte) (map[Partition]int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%w: line 1: version %q, expected 0", ErrMalformed, truncate(lines[0]))
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: line 2: %q entries, %d lines follow", ErrMalformed, truncate(lines[1]), len(lines)-2)
	}
	// n is the number of lines there are, not a claim.
	out := make(map[Partition]int64, n)
	for i, line := range lines[2:] {
		f := strings.Fields(line)
		var p, off int64
		if len(f) == 3 {
			p, err = strconv.ParseInt(f[1], 10, 32)
			if err == nil {
				off, err = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if len(f) != 3 || err != nil {
			return nil, fmt.Errorf("%w: line %d: %q", ErrMalformed, i+3, truncate(line))
		}
		out[Partition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// truncate bounds a line quoted in an error.
func truncate(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
