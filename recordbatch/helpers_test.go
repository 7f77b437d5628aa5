package recordbatch_test

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// splitBatches parses every whole batch of a segment's bytes, in order,
// and returns them with their positions. It stops at a torn tail and
// fails the test on anything else.
func splitBatches(t testing.TB, data []byte) (batches []recordbatch.Batch, positions []int) {
	t.Helper()
	for pos := 0; pos < len(data); {
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			t.Fatalf("batch at byte %d: %v", pos, err)
		}
		batches = append(batches, b)
		positions = append(positions, pos)
		pos += b.Size()
	}
	return batches, positions
}

// readShared reads a file under shared/testdata, skipping when absent.
func readShared(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(testutil.SharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// allSharedLogs lists every file of batches under shared/testdata that
// Kafka, a Kafka broker or a Kafka client wrote: segments (*.log) and the
// byte vectors of client libraries (*.bin), relative to testdata/.
func allSharedLogs(t testing.TB) []string {
	t.Helper()
	root := filepath.Join(testutil.SharedDir(t), "testdata")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext == ".log" || ext == ".bin" {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no segment files under shared/testdata")
	}
	return files
}

// splitBatchesLenient is splitBatches for files that may also hold legacy
// (magic 0 and 1) message sets, which it steps over, and a torn tail,
// where it stops.
func splitBatchesLenient(t testing.TB, data []byte) (batches []recordbatch.Batch, positions []int) {
	t.Helper()
	for pos := 0; pos < len(data); {
		b, err := recordbatch.Parse(data[pos:], 0)
		switch {
		case err == nil:
			batches = append(batches, b)
			positions = append(positions, pos)
			pos += b.Size()
		case errors.Is(err, recordbatch.ErrMagic):
			pos += 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
		case errors.Is(err, recordbatch.ErrTruncated):
			return batches, positions
		default:
			t.Fatalf("batch at byte %d: %v", pos, err)
		}
	}
	return batches, positions
}
