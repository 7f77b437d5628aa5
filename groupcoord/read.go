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

	"github.com/logstore/logstore/internal/metalog"
)

// GroupInfo is a group as groups.db holds it: what survives a restart.
type GroupInfo struct {
	Group        string
	ProtocolType string
	Generation   int32
	// State is Empty, Stable or CompletingRebalance as recorded (Empty
	// for a group of commits only); Protocol, Leader and Members are
	// the recorded members', Assignment set when Stable.
	State    State
	Protocol string
	Leader   string
	Members  []MemberDescription
	// EmptySince is when the group last became Empty as recorded, zero
	// when it had members when last written (or has no record: a group
	// of commits only).
	EmptySince time.Time
	// Offsets are the committed offsets, sorted by topic and partition.
	Offsets []Offset
}

// Read returns the groups of DIR/groups.db, sorted by id, without
// changing the file: it reads it under a shared lock, waiting at most
// timeout for a process that has it open for writing (a running
// server: then ErrInUse). A torn tail is left for the next Open to
// drop (it reads what is before it); a bbolt file of format 1 is read
// as it is (Open converts it). A file that does not exist is an error
// matching fs.ErrNotExist; a damaged one, ErrDamaged.
func Read(dir string, timeout time.Duration) ([]GroupInfo, error) {
	path := filepath.Join(dir, FileName)
	l, err := readFile(path, timeout)
	if err != nil {
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
		g.State, g.Protocol, g.Leader = r.state, r.protocol, r.leader
		for _, m := range r.members {
			g.Members = append(g.Members, MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost, Metadata: m.metadata, Assignment: m.assignment})
		}
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

// readFile reads the file at path under a shared lock, a record file
// or a bbolt file of format 1, changing nothing.
func readFile(path string, timeout time.Duration) (loaded, error) {
	f, data, err := metalog.ReadLocked(path, false, timeout)
	if errors.Is(err, metalog.ErrLockTimeout) {
		return loaded{}, ErrInUse
	}
	if err != nil {
		return loaded{}, damaged(err)
	}
	f.Close()
	if groupsFormat.IsFile(data) {
		st, err := groupsFormat.Decode(data, path)
		if err != nil {
			return loaded{}, damaged(err)
		}
		return loadRecords(st.Records, path)
	}
	db, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return loaded{}, ErrInUse
	}
	if err != nil {
		return loaded{}, err
	}
	defer db.Close()
	var l loaded
	err = db.View(func(tx *bolt.Tx) error {
		var err error
		l, err = readAll(tx, path, false)
		return err
	})
	return l, err
}
