package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// Which partitions may hold an open transaction, known without opening
// them, so that the transaction coordinator's scan at open (every open
// transaction of every partition, to abort those a crash left without a
// record) opens only those, not all of a store's thousands.
//
// A partition's first transactional batch is preceded by
// logstore.transactional in its directory, created and its directory
// synced before the batch is written, and never removed: a partition
// without it has held no transaction since it was marked so. The store
// root's logstore.transactions-tracked says that the marks can be
// trusted: it is written once a scan of every partition has marked each
// partition found with an open transaction (a store written before the
// marks existed has none); until then every partition may hold one. A
// partition never opened by logstore (no logstore.checkpoint: adopted
// from Kafka, which has its own transactions) with a log may hold one
// too.
const (
	txnMarkName    = "logstore.transactional"
	txnTrackedName = "logstore.transactions-tracked"
)

// MayHoldOpenTransactions says whether partition id may hold an open
// transaction, from its directory's entries alone; true when unsure.
func (s *Store) MayHoldOpenTransactions(id PartitionID) bool {
	if !s.txnTracked.Load() {
		if _, err := s.fs.Stat(filepath.Join(s.dir, txnTrackedName)); err != nil {
			return true
		}
		s.txnTracked.Store(true) // the file is never removed
	}
	pdir := filepath.Join(s.dir, id.String())
	if _, err := s.fs.Stat(filepath.Join(pdir, txnMarkName)); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if _, err := s.fs.Stat(filepath.Join(pdir, segment.CheckpointName)); !errors.Is(err, fs.ErrNotExist) {
		return err != nil
	}
	names, err := s.fs.ReadDir(pdir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if fi, err := s.fs.Stat(filepath.Join(pdir, n)); err != nil || fi.Size() > 0 {
				return true
			}
		}
	}
	return false
}

// SetTransactionsTracked records, durably, that every partition that
// may hold an open transaction is marked: call it after a scan of every
// partition that marked (Partition.MarkTransactional) each one found
// holding one.
func (s *Store) SetTransactionsTracked() error {
	name := filepath.Join(s.dir, txnTrackedName)
	if _, err := s.fs.Stat(name); err == nil {
		return nil
	}
	if err := createEmpty(s.fs, name); err != nil {
		return fmt.Errorf("logstore: %s: %w", name, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("logstore: %s: %w", name, err)
	}
	s.txnTracked.Store(true)
	return nil
}

// MarkTransactional marks the partition as one that has held a
// transaction (see Store.MayHoldOpenTransactions), durably; once is
// enough.
func (p *Partition) MarkTransactional() error {
	if p.txnMarked.Load() {
		return nil
	}
	pdir := filepath.Join(p.store.dir, p.id.String())
	if err := createEmpty(p.store.fs, filepath.Join(pdir, txnMarkName)); err != nil {
		return p.wrap("mark transactional", err)
	}
	if err := p.store.fs.SyncDir(pdir); err != nil {
		return p.wrap("mark transactional", err)
	}
	p.txnMarked.Store(true)
	return nil
}

// createEmpty creates name, empty, if it is not there.
func createEmpty(fsys vfs.FS, name string) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
