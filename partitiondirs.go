package logstore

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/logstore/logstore/vfs"
)

// partitionDir is an entry of a store directory named as a partition
// (<topic>-<partition>).
type partitionDir struct {
	id   PartitionID
	name string
	// files lists the entries of the partition directory, sorted.
	files []string
	// err is why the entry could not be listed as a directory (a regular
	// file, a dangling symbolic link, a directory that cannot be read):
	// the store cannot open it as a partition. Nil for a partition.
	err error
}

// listPartitionDirs returns the entries of dir named as partitions,
// sorted by topic and partition, each with its files or the error
// listing it gave. A symbolic link is followed. Store.Partitions keeps
// those without an error; Check reports the others.
func listPartitionDirs(fsys vfs.FS, dir string) ([]partitionDir, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var parts []partitionDir
	for _, name := range names {
		id, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		files, err := fsys.ReadDir(filepath.Join(dir, name))
		parts = append(parts, partitionDir{id: id, name: name, files: files, err: err})
	}
	slices.SortFunc(parts, func(a, b partitionDir) int {
		if c := strings.Compare(a.id.Topic, b.id.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.id.Partition, b.id.Partition)
	})
	return parts, nil
}
