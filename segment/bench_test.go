package segment_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// BenchmarkAppend appends 16 KiB batches, and with sync=always syncs after
// each (one fsync per append: group commit is the root package's). RawWrite
// is the floor: the same bytes written with WriteAt to a plain file (and
// fdatasync'd), with no batch, index or offset work. Run it with a
// -benchtime of at most 60000x so that no roll happens: a roll syncs the
// whole sealed segment, which is a cost of its own.
func BenchmarkAppend(b *testing.B) {
	raw := batch(b, 16, 1000, 1700000000000)
	for _, sync := range []bool{false, true} {
		mode := map[bool]string{false: "never", true: "always"}[sync]
		b.Run(fmt.Sprintf("size=%dKiB/sync=%s", len(raw)>>10, mode), func(b *testing.B) {
			l, _ := open(b, b.TempDir(), segment.Config{})
			own := append(recordbatch.Batch(nil), raw...)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Append(own); err != nil {
					b.Fatal(err)
				}
				if sync {
					if _, err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			l.Close()
		})
		b.Run(fmt.Sprintf("RawWrite/size=%dKiB/sync=%s", len(raw)>>10, mode), func(b *testing.B) {
			f, err := vfs.OS.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var pos int64
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.WriteAt(raw, pos); err != nil {
					b.Fatal(err)
				}
				pos += int64(len(raw))
				if sync {
					if err := f.Sync(); err != nil {
						b.Fatal(err)
					}
				}
				if pos > 256<<20 {
					pos = 0
				}
			}
		})
	}
}

// BenchmarkOpenUnclean measures the recovery scan: opening a 64 MiB
// segment with no checkpoint, which checks every batch's CRC and rebuilds
// the indexes. Bytes are the segment's size.
func BenchmarkOpenUnclean(b *testing.B) {
	src := filepath.Join(b.TempDir(), "p-0")
	l, _ := open(b, src, segment.Config{})
	raw := batch(b, 16, 1000, 1700000000000)
	var size int64
	for size < 64<<20 {
		if _, err := l.Append(raw); err != nil {
			b.Fatal(err)
		}
		size += int64(len(raw))
	}
	l.Close()
	data, err := os.ReadFile(filepath.Join(src, "00000000000000000000.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "p-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		l, rep, err := segment.Open(dir, segment.Config{})
		if err != nil || len(rep.ScannedSegments) != 1 {
			b.Fatal(err)
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}
