// Package vfs is the seam between logstore and the filesystem: FS and
// File are every file operation the store, its segments, its checkpoint
// and `logstore check` perform, and OS is the real implementation. The
// seam exists for tests: they wrap OS to inject faults (a failed write
// or sync) or replace it with an in-memory FS that simulates a power
// loss (internal/crashfs). Production code always uses OS.
//
// # Contract
//
// An implementation must give these guarantees, which the callers'
// durability argument rests on and which crashfs models:
//
//   - File.Sync makes the file's bytes and its length durable (OS uses
//     fdatasync where the platform has it, else fsync). Bytes written
//     after the last Sync may be lost, torn or reordered by a crash.
//   - File.Sync says nothing about the file's name: creating a file
//     (OpenFile with os.O_CREATE), Rename, Remove and MkdirAll change a
//     directory's entries, and those changes are durable only after
//     SyncDir of that directory returns. Until then a crash may keep any
//     prefix of them, in order.
//   - Rename within one directory is atomic: after a crash the entry
//     names either the old file or the new one, never neither.
//   - SyncDir makes every earlier change to the directory's entries
//     durable. A filesystem that cannot sync a directory (EINVAL) has
//     nothing more to do, so OS treats that as success.
//   - Reads (ReadDir, Stat, Lstat, File.ReadAt, File.Size) see every
//     earlier write, synced or not.
//
// Two things stay outside the seam, on the real OS: the store's lock
// file (flock is an OS-level lock between processes, which an FS
// wrapper cannot model) and the producer-state snapshot database (bbolt
// maps its file into memory and syncs it itself).
package vfs
