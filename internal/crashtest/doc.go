// Package crashtest is the model, the oracle and the workloads of the
// store's crash-recovery suite. It is test machinery, not part of the
// library: the root package's crash tests use it, and so can the crash
// tests of the packages above the root.
//
// # The model
//
// A Timeline is every batch a workload wrote to one partition, in offset
// order, with contiguous offsets from 0 (a Written each). It only grows:
// a batch lost in a crash is sent again by its producer and lands at the
// same offsets. An Expect is what a crashed image owes: the timeline up
// to the crash (the batch in flight included), how many of its batches
// were acknowledged, and whether acknowledged batches must survive this
// crash. They must under SyncAlways, and after a crash of the process
// only (crashfs.KeepAll).
//
// # The oracle
//
// Oracle checks a partition reopened on a crashed image against an
// Expect. These are its invariants:
//
//   - The log is a valid prefix of the timeline. Offsets are contiguous,
//     and every batch is valid (CRC included) and is the batch written
//     at its offset. The log starts at a batch boundary.
//   - When the Expect is durable, every acknowledged batch is there,
//     once.
//   - The producer state equals a full replay. That is a replay of the
//     timeline below the log end when a snapshot was loaded (it remembers
//     producers whose batches retention deleted), and of the log left
//     otherwise. Seen times are equal too: the store runs on Clock,
//     fixed.
//   - A retry of every batch a producer's window holds is answered
//     DUPLICATE, with the first copy's offsets, and writes nothing.
//
// CheckOptions add steps after the looking. Resend sends the lost
// batches again, and each must be accepted at its old offsets. NewAppend
// appends new batches. Reopen closes, reopens, and wants the same log
// and state with nothing replayed. Diverge lets a new producer write
// past the old end, kills the process and reopens: a snapshot of the
// first life left above the recovered end must not be used.
//
// Env.CheckImage runs the whole check of one image. Before the open it
// asks segment.Verifier what the open will do, and afterwards compares
// the prediction with the open's RecoveryReport. It also checks that the
// open threw no byte of a segment away (CheckNothingThrownAway): what is
// cut goes to a cut file beside the segment.
//
// # The workloads
//
// A Workload is the shape of a seeded client history: idempotent
// producers sending, retrying, bumping their epochs, leaving gaps and
// sending as zombies, plain batches, and, when asked, clean and unclean
// restarts. Run runs one against a store on a crashfs.FS. It records a
// crash point after every filesystem operation and after every commit
// of the snapshot db. CheckPoints crashes each point in every mode and
// checks each distinct image with Env.CheckImage.
//
// The store opened on an image keeps its root and .lock on the real
// filesystem, its partition directory on the image, and its bbolt
// snapshot db, which the filesystem seam does not reach, in the real
// partition directory: Env puts back the db as last committed before
// each open.
//
// # Seams
//
// The store's filesystem and clock are unexported fields of
// logstore.Options. WithFS and WithClock set them, through package
// internal/testseam.
package crashtest
