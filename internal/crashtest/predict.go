package crashtest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/segment"
)

// predictOpen runs the verifier on the partition directory of img, read
// only, and returns what it predicts the next open does; ok is false when
// img holds no partition directory yet.
func (e *Env) predictOpen(img *crashfs.FS) (pred segment.OpenPrediction, ok bool, err error) {
	v := segment.Verifier{FS: img, Predict: func(p segment.OpenPrediction) { pred, ok = p, true }}
	if _, err := v.Verify(e.PartitionDir()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return pred, false, nil
		}
		return pred, false, fmt.Errorf("verify before the open: %w", err)
	}
	return pred, ok, nil
}

// checkPrediction compares what the verifier predicted with what the
// open did: the segment cut and the byte position of the cut, the
// segments removed, the indexes rebuilt, the spare adopted; a crash
// image is never refused. after is the image's files after the open.
func (e *Env) checkPrediction(pred segment.OpenPrediction, rep segment.RecoveryReport, after map[string][]byte) error {
	cutPos := int64(-1)
	for _, f := range rep.CutFiles {
		if base, pos, ok := segment.IsCutFile(filepath.Base(f)); ok && base == rep.TruncatedSegment {
			cutPos = pos
		}
	}
	if rep.TruncatedSegment >= 0 && rep.TruncatedBytes == 0 {
		cutPos = pred.CutPos // a lost tail: nothing cut off, no file names the position
	}
	// Indexes rebuilt beside the scan: every one the verifier was sure
	// of, and no other than it found fault with (or than those the open
	// removes as below the log start, which the verifier skips).
	rebuiltElsewhere := slices.DeleteFunc(slices.Clone(rep.RebuiltIndexes), func(b int64) bool {
		return slices.Contains(rep.ScannedSegments, b) || slices.Contains(pred.Rebuilt, b) ||
			slices.Contains(pred.MayRebuild, b) || slices.Contains(pred.BelowStart, b)
	})
	notRebuilt := slices.DeleteFunc(slices.Clone(pred.Rebuilt), func(b int64) bool { return slices.Contains(rep.RebuiltIndexes, b) })
	var removed []int64
	for _, b := range pred.BelowStart {
		if _, ok := after[filepath.Join(e.PartitionDir(), fmt.Sprintf("%020d.log", b))]; ok {
			removed = append(removed, b)
		}
	}
	adopted := pred.AdoptedSpare < 0
	for _, suffix := range []string{".log", ".log.cut-0"} {
		if _, ok := after[filepath.Join(e.PartitionDir(), fmt.Sprintf("%020d%s", pred.AdoptedSpare, suffix))]; ok {
			adopted = true
		}
	}
	switch {
	case !adopted:
		return fmt.Errorf("the verifier predicted the spare adopted as segment %d; the open left no such segment", pred.AdoptedSpare)
	case pred.Refused:
		return fmt.Errorf("the verifier predicted a refusal; the open recovered with %+v", rep)
	case pred.CutSegment != rep.TruncatedSegment || pred.CutBytes != rep.TruncatedBytes || pred.CutPos != cutPos:
		return fmt.Errorf("the verifier predicted a cut in segment %d at byte %d (%d bytes); the open cut segment %d at byte %d (%d bytes): %+v",
			pred.CutSegment, pred.CutPos, pred.CutBytes, rep.TruncatedSegment, cutPos, rep.TruncatedBytes, rep)
	case pred.DeletedSegment != rep.DeletedSegment:
		return fmt.Errorf("the verifier predicted segment %d deleted; the open deleted %d", pred.DeletedSegment, rep.DeletedSegment)
	case !slices.Equal(pred.Scanned, rep.ScannedSegments):
		return fmt.Errorf("the verifier predicted segments %v scanned and their indexes rebuilt; the open scanned %v", pred.Scanned, rep.ScannedSegments)
	case len(rebuiltElsewhere) > 0:
		return fmt.Errorf("the open rebuilt the indexes of segments %v, which it did not scan and the verifier found nothing wrong with", rebuiltElsewhere)
	case len(notRebuilt) > 0:
		return fmt.Errorf("the verifier predicted the indexes of segments %v rebuilt; the open rebuilt %v", pred.Rebuilt, rep.RebuiltIndexes)
	case len(removed) > 0:
		return fmt.Errorf("segments %v below the log start were predicted removed, but are still there", removed)
	}
	return nil
}
