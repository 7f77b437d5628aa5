package segment

import (
	"fmt"
	"math"
	"strings"

	"github.com/logstore/logstore/recordbatch"
)

// The recovery policy, written once. Open carries these decisions out and
// Verify reports them ("the next open cuts ..."), so the two cannot
// drift. They are pure: what they decide from is the directory listing,
// the checkpoint, and what the scan of each segment found.
//
// The plan is made in two steps because the scan is itself one of its
// actions: planRecovery decides from the listing and the checkpoint
// which segments are scanned and where a scan may cut; segmentEnd then
// decides, from what the scan of one segment found, whether it is cut,
// whether the segment after it is removed, or whether the partition is
// refused.

// listSegments reads the segments' base offsets from a directory
// listing: every <20 digits>.log, unsorted, and the same into the set
// logs (the caller's, so that it may stay on the stack).
func listSegments(names []string, logs map[int64]bool) (bases []int64) {
	for _, n := range names {
		if base, ok := parseSegmentName(n, logSuffix); ok {
			logs[base] = true
			bases = append(bases, base)
		}
	}
	return bases
}

// Why an open removes a file it lists.
const (
	keepFile    = iota
	leftoverTmp // left by an interrupted operation: *.tmp, *.deleted
	orphanIndex // an index whose .log is gone
)

// leftover says whether the open removes the file name, and why; logs
// are the segments, an adopted spare among them.
func leftover(name string, logs map[int64]bool) int {
	if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
		return leftoverTmp
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if base, ok := parseSegmentName(name, suf); ok && !logs[base] {
			return orphanIndex
		}
	}
	return keepFile
}

// planSpare decides about a spare .log holding a whole batch header whose
// base offset is base (see adoptSpare): nil adopts it as the newest
// segment; an error refuses the partition, as base cannot begin a new
// segment. logs are the segments' base offsets.
func planSpare(name string, base int64, logs map[int64]bool) (refuse error) {
	if base < 0 || logs[base] {
		return &CorruptionError{File: name, Offset: 0, Err: fmt.Errorf("the first batch's base offset %d is not a new segment's", base)}
	}
	return nil
}

// recoveryPlan is what an open decides before it reads a segment.
type recoveryPlan struct {
	bases         []int64 // every segment, by base offset, an adopted spare among them
	clean         bool    // the checkpoint says the last shutdown was clean: nothing is scanned
	ours          bool    // the checkpoint was read: logstore wrote the directory
	logStart      int64   // the checkpoint's log start; without one the first segment's base, or the adopted start above it
	adopted       bool    // logStart is the adopted start (Config.AdoptedLogStart), above the first segment's base
	recoveryPoint int64
	scanFrom      int // segments from this index on are scanned batch by batch
}

// planRecovery plans the open of the segments bases (sorted) with the
// checkpoint ck; ckRead says it was read. adoptedStart is
// Config.AdoptedLogStart: without a checkpoint of its own, the log starts
// at the larger of it and the first segment's base, as a Kafka broker
// starts a partition from its log dir's log-start-offset-checkpoint. A
// checkpoint of its own wins: the log start it holds only grew from the
// adopted one. A directory without segments ignores it: it is a new
// partition (a topic deleted and made again keeps no Kafka start).
func planRecovery(bases []int64, ck checkpoint, ckRead bool, adoptedStart int64) recoveryPlan {
	p := recoveryPlan{bases: bases, clean: ckRead && ck.clean, ours: ckRead, logStart: ck.logStart, recoveryPoint: ck.recoveryPoint}
	if !ckRead && len(bases) > 0 {
		p.logStart = max(bases[0], adoptedStart)
		p.adopted = adoptedStart > bases[0]
	}
	// Unclean: scan from the segment holding the recovery point.
	p.scanFrom = len(bases)
	if !p.clean {
		p.scanFrom = 0
		for i, b := range bases {
			if b <= ck.recoveryPoint {
				p.scanFrom = i
			}
		}
	}
	return p
}

// scanned says the segment at index i is scanned, and its indexes
// rebuilt.
func (p *recoveryPlan) scanned(i int) bool { return i >= p.scanFrom }

// cutFrom is the lowest offset at which the scan of segment i may cut.
// A torn write can only be in the last two segments (a roll waits for
// the flush of the one before), at or above the recovery point; damage
// anywhere else is corruption of durable data, refused and never cut
// (Kafka would cut it and delete every later segment).
func (p *recoveryPlan) cutFrom(i int) int64 {
	if i >= len(p.bases)-2 {
		return p.recoveryPoint
	}
	return math.MaxInt64
}

// mayCut says damage found after the valid batches ending at offset end
// is cut, given the scan's cutFrom; else the partition is refused.
func mayCut(end, cutFrom int64) bool { return end >= cutFrom }

// segmentScan is what the scan of one segment found.
type segmentScan struct {
	damaged bool  // the scan stopped at damage before the end of the file
	end     int64 // the offset after the last valid batch before it
}

// segmentDecision is what an open does after scanning a segment.
type segmentDecision struct {
	// cut: the segment is cut after its valid batches (a torn write).
	cut bool
	// refuse: damage the open may not cut; the partition is refused.
	refuse bool
	// lostTail: the segment is whole, but ends below the next segment's
	// base: its last batches never reached the disk. It counts as a cut
	// of nothing, for reason lostTailErr.
	lostTail bool
	// dropNext is the base offset of the segment after this one, removed
	// with the cut (a roll whose flush had not finished), -1 when none.
	dropNext int64
}

// segmentEnd decides about segment i from its scan.
func (p *recoveryPlan) segmentEnd(i int, sc segmentScan) segmentDecision {
	d := segmentDecision{dropNext: -1}
	last := len(p.bases) - 1
	// A roll starts the next segment at this one's end, so a gap there
	// lost the tail of this one: whole batches that never reached the
	// disk before a crash.
	d.lostTail = !sc.damaged && p.ours && i == last-1 && sc.end < p.bases[i+1]
	if !sc.damaged && !d.lostTail {
		return d
	}
	if !mayCut(sc.end, p.cutFrom(i)) {
		d.refuse = true
		return d
	}
	d.cut = true
	if i < last {
		d.dropNext = p.bases[i+1]
	}
	return d
}

// lostTailErr is the reason of a lostTail cut.
func lostTailErr(logName string, size, end, nextBase int64) error {
	return &CorruptionError{File: logName, Offset: size, Err: fmt.Errorf("%w: the segment ends at offset %d, but the next one starts at %d", recordbatch.ErrTruncated, end, nextBase)}
}

// overlaps says a segment based at base may not follow segments whose
// batches end below prevEnd: offsets must increase across segments, and
// the open refuses a log where they do not, wherever it scans.
func overlaps(prevEnd, base int64) bool { return prevEnd > base }

// belowStart is how many of the first segments lie wholly below the log
// start (retention interrupted before their files were removed): the
// open removes them.
func belowStart(bases []int64, logStart int64) int {
	n := 0
	for len(bases)-n > 1 && bases[n+1] <= logStart {
		n++
	}
	return n
}
