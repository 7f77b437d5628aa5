package kafkadump

// The .txnindex dump: DumpLogSegments.dumpTxnIndex over
// TransactionIndex.allAbortedTxns, read in chunks.

import (
	"encoding/binary"
	"fmt"
	"os"
)

// txnIndexEntrySize is AbortedTxn.TOTAL_SIZE: int16 version, then producer
// id, first offset, last offset and last stable offset, int64 each.
const txnIndexEntrySize = 34

// dumpAbortedTxn is one entry, as AbortedTxn reads it: the version is the
// first byte only (AbortedTxn.version() reads one byte), signed.
type dumpAbortedTxn struct {
	version          int8
	producerID       int64
	firstOffset      int64
	lastOffset       int64
	lastStableOffset int64
}

func parseDumpAbortedTxn(e []byte) dumpAbortedTxn {
	return dumpAbortedTxn{
		version:          int8(e[0]),
		producerID:       int64(binary.BigEndian.Uint64(e[2:])),
		firstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
		lastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
		lastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
	}
}

// dumpTxnIndex prints every whole entry of a .txnindex; a partial entry at
// the end is ignored, as Kafka ignores it. Kafka reads every entry before
// it prints one, so an entry of a version it does not know fails the file
// with nothing printed: the entries are checked in a first pass.
//
// Kafka prints nothing for a .txnindex that does not exist (the index is
// created only when a transaction is aborted); here a missing file is an
// error, as for the other kinds, since the name was given.
func (d *dumper) dumpTxnIndex(f javaFile) error {
	file, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", f)
	}
	return d.txnIndex(newDumpIndexFile(f, file, info.Size(), 0, txnIndexEntrySize))
}

// txnIndex is dumpTxnIndex once the file is open.
func (d *dumper) txnIndex(x *dumpIndexFile) error {
	f := x.file
	err := x.each(&d.ibuf, func(i int64, e []byte) (bool, error) {
		if v := int8(e[0]); v > 0 {
			//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
			return false, &dumpIndexError{f, i, txnIndexEntrySize, fmt.Errorf("Unexpected aborted transaction version %d in transaction index %s, current version is 0", v, d.absPath(f))}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return x.each(&d.ibuf, func(i int64, e []byte) (bool, error) {
		t := parseDumpAbortedTxn(e)
		if d.opts.JSON {
			d.line = djBegin(d.line[:0], "abortedTxn", f.path)
			d.line = djInt(d.line, "version", int64(t.version))
			d.line = djInt(d.line, "producerId", t.producerID)
			d.line = djInt(d.line, "firstOffset", t.firstOffset)
			d.line = djInt(d.line, "lastOffset", t.lastOffset)
			d.line = djEnd(djInt(d.line, "lastStableOffset", t.lastStableOffset))
		} else {
			d.line = fmt.Appendf(d.line[:0], "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
				t.version, t.producerID, t.firstOffset, t.lastOffset, t.lastStableOffset)
		}
		d.write(d.line)
		d.progress(f, i+1, x.entries)
		return d.werr == nil, nil
	})
}
