package kafkadump

// Producer snapshots: Kafka's <offset>.snapshot files, dumped as
// DumpLogSegments.dumpProducerIdSnapshot does, and logstore's own
// producer-snapshots.db, dumped in a format of ours (see the package doc).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
)

// dumpProducerSnapshot prints a Kafka producer snapshot, one line per
// entry in file order. A snapshot Kafka refuses gets Kafka's message on
// stderr, and the dump goes on, as in Kafka.
func (d *dumper) dumpProducerSnapshot(f javaFile) error {
	// Kafka reads the whole file too (Files.readAllBytes); it is as big
	// as the file is, whatever its count field claims.
	data, err := os.ReadFile(f.path)
	if err != nil {
		return err
	}
	entries, err := snapshot.ReadKafka(data)
	var ke *snapshot.KafkaSnapshotError
	if errors.As(err, &ke) {
		if d.opts.JSON {
			d.line = djBegin(d.line[:0], "snapshotError", f.path)
			d.line = djString(d.line, "error", ke.Msg)
			d.line = djInt(d.line, "position", int64(ke.Pos))
			d.write(djEnd(djInt(d.line, "size", int64(len(data)))))
			return nil
		}
		return d.errorLine(ke.Msg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f, err)
	}
	for _, k := range entries {
		if d.opts.JSON {
			d.line = appendSnapshotEntryJSON(d.line[:0], f.path, k)
		} else {
			d.line = appendSnapshotEntryLine(d.line[:0], k)
		}
		d.write(d.line)
	}
	return nil
}

// appendSnapshotEntryLine formats an entry as dumpProducerIdSnapshot
// prints it, with the space after lastTimestamp that Kafka leaves when the
// entry has no batch.
func appendSnapshotEntryLine(dst []byte, k snapshot.KafkaEntry) []byte {
	e := k.Entry()
	dst = appendDumpProducerFields(dst, e)
	dst = append(dst, ' ')
	if len(e.Batches) > 0 {
		b := e.Batches[0]
		dst = append(dst, "firstSequence: "...)
		dst = strconv.AppendInt(dst, int64(b.FirstSeq), 10)
		dst = append(dst, " lastSequence: "...)
		dst = strconv.AppendInt(dst, int64(b.LastSeq), 10)
		dst = append(dst, " lastOffset: "...)
		dst = strconv.AppendInt(dst, b.LastOffset, 10)
		dst = append(dst, " offsetDelta: "...)
		dst = strconv.AppendInt(dst, int64(k.OffsetDelta), 10)
		dst = append(dst, " timestamp: "...)
		dst = strconv.AppendInt(dst, b.Timestamp, 10)
	}
	return append(dst, '\n')
}

// appendDumpProducerFields formats the fields Kafka's snapshot line starts
// with, up to lastTimestamp.
func appendDumpProducerFields(dst []byte, e producerstate.Entry) []byte {
	dst = append(dst, "producerId: "...)
	dst = strconv.AppendInt(dst, e.ProducerID, 10)
	dst = append(dst, " producerEpoch: "...)
	dst = strconv.AppendInt(dst, int64(e.Epoch), 10)
	dst = append(dst, " coordinatorEpoch: "...)
	dst = strconv.AppendInt(dst, int64(e.CoordinatorEpoch), 10)
	dst = append(dst, " currentTxnFirstOffset: "...)
	if e.TxnFirstOffset >= 0 {
		dst = append(dst, "OptionalLong["...)
		dst = strconv.AppendInt(dst, e.TxnFirstOffset, 10)
		dst = append(dst, ']')
	} else {
		dst = append(dst, "OptionalLong.empty"...)
	}
	dst = append(dst, " lastTimestamp: "...)
	return strconv.AppendInt(dst, e.LastTimestamp, 10)
}

func appendSnapshotEntryJSON(dst []byte, file string, k snapshot.KafkaEntry) []byte {
	e := k.Entry()
	dst = djBegin(dst, "snapshotEntry", file)
	dst = dumpProducerJSON(dst, e)
	dst = djKey(dst, "batch")
	if len(e.Batches) == 0 {
		dst = append(dst, "null"...)
	} else {
		b := e.Batches[0]
		dst = append(dst, `{"firstSequence":`...)
		dst = strconv.AppendInt(dst, int64(b.FirstSeq), 10)
		dst = djInt(dst, "lastSequence", int64(b.LastSeq))
		dst = djInt(dst, "lastOffset", b.LastOffset)
		dst = djInt(dst, "offsetDelta", int64(k.OffsetDelta))
		dst = djInt(dst, "timestamp", b.Timestamp)
		dst = append(dst, '}')
	}
	return djEnd(dst)
}

func dumpProducerJSON(dst []byte, e producerstate.Entry) []byte {
	dst = djInt(dst, "producerId", e.ProducerID)
	dst = djInt(dst, "producerEpoch", int64(e.Epoch))
	dst = djInt(dst, "coordinatorEpoch", int64(e.CoordinatorEpoch))
	dst = djOptional(dst, "currentTxnFirstOffset", e.TxnFirstOffset, e.TxnFirstOffset >= 0)
	return djInt(dst, "lastTimestamp", e.LastTimestamp)
}

// dumpSnapshotDB prints every snapshot of a producer-snapshots.db, opened
// read-only, oldest first. A snapshot that does not decode is reported
// (on stderr, or as a snapshotError line) and the next one is dumped. A
// db that cannot be opened or read (empty, not a bbolt file, damaged,
// held by a running store) is reported the same way, and the dump goes on
// with the next file; Dump's error names it at the end. A db that does
// not exist fails the dump, as a missing file of any kind does.
func (d *dumper) dumpSnapshotDB(f javaFile) error {
	if info, err := os.Stat(f.path); err == nil && info.Mode().IsRegular() && info.Size() == 0 {
		// bbolt would try to write its first pages into the read-only
		// file and fail with "bad file descriptor".
		return d.unreadableDB(f, errors.New("the file is empty (0 bytes), not a snapshot db"))
	}
	st, _, err := snapshot.Open(filepath.Dir(f.path), snapshot.Options{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", f, err)
	}
	if err != nil {
		return d.unreadableDB(f, err)
	}
	defer st.Close()
	offsets, err := st.List()
	if err != nil {
		return d.unreadableDB(f, err)
	}
	for i, off := range offsets {
		snap, err := st.Load(off)
		var de *snapshot.DecodeError
		if errors.As(err, &de) {
			if err := d.snapshotDBError(f, off, de); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return d.unreadableDB(f, err)
		}
		d.dumpSnapshotValue(f, snap)
		if d.werr != nil {
			return nil
		}
		d.progress(f, int64(i+1), int64(len(offsets)))
	}
	return nil
}

// unreadableDB reports a producer-snapshots.db that cannot be dumped (on
// stderr, or as a snapshotError line with the error alone) and notes it
// for Dump's error.
func (d *dumper) unreadableDB(f javaFile, err error) error {
	d.unreadableDBs = append(d.unreadableDBs, f)
	if !d.opts.JSON {
		return d.errorLine(fmt.Sprintf("%s: %v", f, err))
	}
	d.line = djBegin(d.line[:0], "snapshotError", f.path)
	d.write(djEnd(djString(d.line, "error", err.Error())))
	return nil
}

// ErrUnreadableDB is what Dump's error wraps when a producer-snapshots.db
// could not be dumped and the dump went on with the other files.
var ErrUnreadableDB = errors.New("producer-snapshots.db could not be dumped")

// unreadable is Dump's error for the dbs that could not be dumped.
func (d *dumper) unreadable() error {
	if len(d.unreadableDBs) == 0 {
		return nil
	}
	names := make([]string, len(d.unreadableDBs))
	for i, f := range d.unreadableDBs {
		names[i] = f.path
	}
	return fmt.Errorf("%w: %s (reported where it was met; the other files were dumped)", ErrUnreadableDB, strings.Join(names, ", "))
}

func (d *dumper) snapshotDBError(f javaFile, off int64, de *snapshot.DecodeError) error {
	if !d.opts.JSON {
		return d.errorLine(fmt.Sprintf("%s: %v", f, de))
	}
	d.line = djBegin(d.line[:0], "snapshotError", f.path)
	d.line = djInt(d.line, "offset", off)
	d.line = djString(d.line, "error", de.Error())
	d.write(djEnd(djInt(d.line, "position", int64(de.Pos))))
	return nil
}

// dumpSnapshotValue prints one stored snapshot: its line, then a line per
// producer with the whole window.
func (d *dumper) dumpSnapshotValue(f javaFile, snap producerstate.Snapshot) {
	if d.opts.JSON {
		d.line = djBegin(d.line[:0], "snapshot", f.path)
		d.line = djInt(d.line, "offset", snap.Offset)
		d.write(djEnd(djInt(d.line, "producers", int64(len(snap.Producers)))))
	} else {
		d.printf("snapshot offset: %d producers: %d\n", snap.Offset, len(snap.Producers))
	}
	for _, e := range snap.Producers {
		if d.opts.JSON {
			d.line = djBegin(d.line[:0], "producer", f.path)
			d.line = djInt(d.line, "snapshotOffset", snap.Offset)
			d.line = dumpProducerJSON(d.line, e)
			d.line = append(djKey(d.line, "window"), '[')
			for i, b := range e.Batches {
				if i > 0 {
					d.line = append(d.line, ',')
				}
				d.line = append(d.line, `{"firstSequence":`...)
				d.line = strconv.AppendInt(d.line, int64(b.FirstSeq), 10)
				d.line = djInt(d.line, "lastSequence", int64(b.LastSeq))
				d.line = djInt(d.line, "firstOffset", b.FirstOffset)
				d.line = djInt(d.line, "lastOffset", b.LastOffset)
				d.line = djInt(d.line, "timestamp", b.Timestamp)
				d.line = append(d.line, '}')
			}
			d.line = djEnd(append(d.line, ']'))
		} else {
			d.line = appendDumpProducerLine(d.line[:0], e)
		}
		d.write(d.line)
	}
}

// appendDumpProducerLine formats a producer of producer-snapshots.db: Kafka's
// snapshot fields, then the window, oldest batch first.
func appendDumpProducerLine(dst []byte, e producerstate.Entry) []byte {
	dst = appendDumpProducerFields(dst, e)
	dst = append(dst, " window: ["...)
	for i, b := range e.Batches {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(dst, "sequences "...)
		dst = strconv.AppendInt(dst, int64(b.FirstSeq), 10)
		dst = append(dst, ".."...)
		dst = strconv.AppendInt(dst, int64(b.LastSeq), 10)
		dst = append(dst, " offsets "...)
		dst = strconv.AppendInt(dst, b.FirstOffset, 10)
		dst = append(dst, ".."...)
		dst = strconv.AppendInt(dst, b.LastOffset, 10)
		dst = append(dst, " timestamp "...)
		dst = strconv.AppendInt(dst, b.Timestamp, 10)
	}
	return append(dst, "]\n"...)
}
