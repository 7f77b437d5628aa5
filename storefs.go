package logstore

import "github.com/logstore/logstore/vfs"

// FS returns the filesystem the store keeps its directory on (vfs.OS,
// unless a test set another). Packages that keep files of their own in
// the store's partition directories (package catalog's partition.metadata)
// go through it, so that tests can inject faults and simulate power loss
// in their files as in the store's.
func (s *Store) FS() vfs.FS { return s.fs }
