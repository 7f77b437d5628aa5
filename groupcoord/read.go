package groupcoord

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// GroupInfo is a group as groups.db holds it: what survives a restart
// (no members: they rejoin a running server).
type GroupInfo struct {
	Group        string
	ProtocolType string
	Generation   int32
	// EmptySince is when the group last became Empty as recorded, zero
	// when it had members when last written (or has no record: a group
	// of commits only).
	EmptySince time.Time
	// Offsets are the committed offsets, sorted by topic and partition.
	Offsets []Offset
}

// Read returns the groups of DIR/groups.db, sorted by id, without
// changing the file: it opens it read-only (a shared lock, waiting at
// most timeout for a process that has it open for writing, a running
// server: then ErrInUse). A file that does not exist is an error
// matching fs.ErrNotExist; a damaged one, ErrDamaged.
func Read(dir string, timeout time.Duration) ([]GroupInfo, error) {
	path := filepath.Join(dir, FileName)
	db, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("groupcoord: read %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("groupcoord: read %s: %w", path, err)
	}
	defer db.Close()
	var l loaded
	if err := db.View(func(tx *bolt.Tx) error {
		var err error
		l, err = readAll(tx, path, false)
		return err
	}); err != nil {
		return nil, fmt.Errorf("groupcoord: read %s: %w", path, err)
	}
	byID := map[string]*GroupInfo{}
	get := func(id string) *GroupInfo {
		if g := byID[id]; g != nil {
			return g
		}
		g := &GroupInfo{Group: id}
		byID[id] = g
		return g
	}
	for id, r := range l.groups {
		g := get(id)
		g.ProtocolType, g.Generation = r.protocolType, r.generation
		if r.emptyMs >= 0 {
			g.EmptySince = time.UnixMilli(r.emptyMs)
		}
	}
	for id, offs := range l.offsets {
		g := get(id)
		for tp, r := range offs {
			g.Offsets = append(g.Offsets, Offset{TopicPartition: tp, Offset: r.offset, LeaderEpoch: r.leaderEpoch, Metadata: r.metadata, Committed: time.UnixMilli(r.commitMs)})
		}
		slices.SortFunc(g.Offsets, func(a, b Offset) int { return compareTP(a.TopicPartition, b.TopicPartition) })
	}
	out := make([]GroupInfo, 0, len(byID))
	for _, g := range byID {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b GroupInfo) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}
