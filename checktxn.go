package logstore

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/logstore/logstore/segment"
)

// checkTxnIndex compares each segment's .txnindex with the entries the
// replay of the log rebuilt (the open's rule, see recoverTxnIndex): a
// file that does not decode, or whose entries differ from the log's
// ABORT markers, is a ProblemIndex (the next open rebuilds it). Segments
// below the offset the replay started from are not compared.
func (pc *partitionCheck) checkTxnIndex(vs segment.VerifyStats) error {
	if pc.txr == nil || pc.broken || vs.Damaged {
		return nil
	}
	names, err := pc.fs.ReadDir(pc.pdir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, n := range names {
		var base int64
		if len(n) == 24 && filepath.Ext(n) == ".log" {
			if _, err := fmt.Sscanf(n, "%020d.log", &base); err == nil {
				bases = append(bases, base)
			}
		}
	}
	slices.Sort(bases)
	for i, base := range bases {
		end := int64(math.MaxInt64)
		if i+1 < len(bases) {
			end = bases[i+1]
		}
		if end <= pc.txr.from {
			continue
		}
		name := filepath.Join(pc.pdir, fmt.Sprintf("%020d.txnindex", base))
		have, err := pc.readTxnIndex(name, base)
		if err != nil {
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) {
				return err
			}
			pc.report(Problem{Kind: ProblemIndex, File: pc.rel(name), Pos: ce.Offset, Snapshot: -1,
				Detail: fmt.Sprintf("%v; the next open rebuilds it from the log", trimPackage(ce.Err))})
			continue
		}
		var want []segment.AbortedTxn
		for _, t := range pc.txr.aborted {
			if t.LastOffset >= base && t.LastOffset < end {
				want = append(want, t)
			}
		}
		have = slices.DeleteFunc(have, func(t segment.AbortedTxn) bool { return t.LastOffset < pc.txr.from })
		if !equalTxns(have, want) {
			pc.report(Problem{Kind: ProblemIndex, File: pc.rel(name), Pos: -1, Snapshot: -1,
				Detail: fmt.Sprintf("holds the aborted transactions %s, the log's ABORT markers give %s; the next open rebuilds it", txnsText(have), txnsText(want))})
		}
	}
	return nil
}

// readTxnIndex reads and decodes the .txnindex name (none: no entries),
// reading no more than 64 MiB.
func (pc *partitionCheck) readTxnIndex(name string, base int64) ([]segment.AbortedTxn, error) {
	f, err := pc.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	const limit = 64 << 20
	if size > limit {
		return nil, &segment.CorruptionError{File: name, Offset: limit, Err: fmt.Errorf("%d bytes, more than a check reads", size)}
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	entries, whole, err := segment.ParseTxnIndex(name, data, base)
	if err == nil && whole < size {
		err = &segment.CorruptionError{File: name, Offset: whole, Err: fmt.Errorf("%d bytes of a partial entry at the end", size-whole)}
	}
	return entries, err
}

func txnsText(ts []segment.AbortedTxn) string {
	if len(ts) == 0 {
		return "[]"
	}
	s := "["
	for i, t := range ts {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("{pid %d first %d last %d lso %d}", t.ProducerID, t.FirstOffset, t.LastOffset, t.LastStableOffset)
	}
	return s + "]"
}
