// Package metalog is the append-only record file of the store's
// metadata: a keyed map (key -> opaque value bytes) kept as a log of
// commits, replayed whole at open, compacted by rewriting it. The
// transaction coordinator's transactions.db and the group
// coordinator's groups.db are such files, each with its own Format
// (magic, version, key width, meta value, value check).
//
// # Byte format
//
// All integers are big-endian; CRCs are CRC-32C (Castagnoli).
//
//	file:   header | frame*
//	header: magic (8 bytes, the Format's) | version uint32 | CRC of both uint32
//	frame:  payload length uint32 (1 to 2^30) | CRC of the payload uint32 | payload
//
// The first byte of a payload is its type:
//
//	1 meta:   the Format's meta value (MetaSize bytes), e.g. an epoch
//	2 puts:   entry+, each: key length (uint16, or uint32 with
//	          WideKeys; > 0) | key | value length uint32 | value;
//	          a value length of 0 is a tombstone (the key is deleted)
//	3 closed: no fields
//
// # Invariants
//
// A file at its name is always whole up to its last commit. It only
// ever comes into place by a rename of a file written and synced
// before, and every frame after that is one commit: all its puts under
// one CRC, appended in one write and synced (one fdatasync) before the
// next commit is appended. So only the last frame can be torn by a
// crash.
//
// A Format with a meta value has it as the first frame; a puts or
// closed frame before it is damage. The replay keeps the last meta
// value and, for each key, its last put, minus the keys whose last
// entry is a tombstone. The file ends with the closed frame exactly
// when its writer called MarkClosed after its last commit and no
// commit failed; any frame after a closed frame clears it.
//
// The replay (Format.Decode) reads the file whole, so no length is ever
// allocated for: each is checked against the bytes left. It checks
// every length and CRC, and each value with the Format's check. The
// first frame that is cut off, has a length of 0 or over the limit, or
// fails its CRC ends the replay: a torn tail, the last commit a crash
// interrupted before its sync returned. It is reported (State.Tail, at
// State.End) for the user to log and leave out of the file it writes.
// Two things are not taken for a torn tail. A frame that fails its CRC
// with a good frame after it is damage in place (a later commit was
// appended, so this one had been synced). A frame whose CRC is right
// but whose payload does not decode was written so. Both, a bad header,
// an unknown version, and a missing meta frame are a *DamagedError
// naming the file and the byte offset (and the key when known),
// matching ErrDamaged. The replay never guesses.
//
// # Rewrites
//
// A user opens a file with ReadLocked and Format.Decode, then either
// appends to it as it is (Adopt, only for a file without a torn tail:
// appending after one would make it damage in the middle) or writes it
// anew (Create). Create, and a commit after which the file is larger
// than Options.CompactBytes (1 MiB) and twice its live records, write
// the file anew: the header, the meta frame, the live records in key
// order (in puts frames of about 1 MiB; a deleted key and its tombstone
// are not live, so a rewrite drops both). The new file goes to the name
// plus TmpSuffix, is synced (fdatasync) and locked, then renamed over
// the file, and the directory is synced. A crash before the rename
// leaves the old file whole and the tmp file, which is ignored and
// replaced by the next rewrite. After the rename, the new file holds
// the same state; if the directory sync is lost, the old name comes
// back with the old file, also the same state. A compaction that fails
// before its rename leaves the old file, which is kept and appended to.
// One whose directory sync fails has the sync retried before the next
// commit is appended. A commit whose write or sync fails is followed
// by a rewrite of the state before it, so the file holds exactly what
// is durable; if that fails too, every later commit fails.
//
// # Locking
//
// The writer holds an exclusive flock on the file for as long as it is
// open (a rewrite locks the new file before its rename). ReadLocked
// takes a shared or exclusive one, waiting at most its timeout
// (ErrLockTimeout). After taking it, it checks that the file it locked
// is still the one at the name (a rewrite may have renamed a new one
// in meanwhile; then it starts again). The lock is the kind bbolt
// takes, so readers and writers of a bbolt file at the same name (the
// format these files were converted from) are excluded the same way.
//
// # Group commit
//
// A Committer is a Log's one writer: a goroutine that commits every
// item queued while the previous commit ran in one commit (one frame,
// one write, one fdatasync), in queue order. A lazy item costs no
// commit of its own: it is held until an item that is not lazy carries
// it, or the Committer's delay passes, or Close. A Prefix put deletes,
// at its commit, every key with that prefix (the file holds a
// tombstone for each).
package metalog
