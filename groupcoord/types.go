package groupcoord

import "time"

// State is a group's state in Kafka's classic protocol.
type State int8

// The states, named as Kafka names them in ListGroups and DescribeGroups.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the inverse of String; ok is false for other names.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// Protocol is one assignment protocol a member supports, with the
// member's metadata for it (for "consumer": its subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup.
type JoinRequest struct {
	Group    string
	MemberID string // "" on a first join
	// InstanceID is group.instance.id (KIP-345), "" for a dynamic member.
	InstanceID       string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// Version is the JoinGroup version: from 4 a first join without a
	// member id gets MEMBER_ID_REQUIRED (KIP-394); from 9 a static
	// leader rejoining a stable group is told to skip the assignment
	// (KIP-814).
	Version int16
}

// JoinMember is a member as the leader's JoinGroup answer lists it.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// JoinResponse is a JoinGroup's answer.
type JoinResponse struct {
	Code           Code
	MemberID       string
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	SkipAssignment bool
	// Members is set for the leader only: every member with its
	// metadata for the chosen protocol.
	Members []JoinMember
}

// SyncRequest is a SyncGroup. ProtocolType and Protocol are checked
// when not empty (SyncGroup v5).
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType string
	Protocol     string
	// Assignments is the leader's, by member id; empty for followers.
	Assignments map[string][]byte
}

// SyncResponse is a SyncGroup's answer.
type SyncResponse struct {
	Code         Code
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// LeaveMember is one member a LeaveGroup names: by member id, or by
// instance id (static), or both.
type LeaveMember struct {
	MemberID   string
	InstanceID string
}

// OffsetCommit is one partition's offset to commit.
type OffsetCommit struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// CommitRequest is an OffsetCommit. Generation -1 with no member id is
// a commit of a consumer not managed by the group protocol.
type CommitRequest struct {
	Group      string
	MemberID   string
	InstanceID string
	Generation int32
	// Retention is OffsetCommit v2-4's retention time; 0 or less is the
	// coordinator's.
	Retention time.Duration
	Offsets   []OffsetCommit
}

// Offset is a committed offset as OffsetFetch answers it: Offset -1
// when nothing is committed.
type Offset struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// Committed is when it was committed (zero when nothing is).
	Committed time.Time
	// Code is the partition's error: UNSTABLE_OFFSET_COMMIT when stable
	// offsets were asked for and a transaction holds one pending.
	Code Code
}

// GroupListing is one group of ListGroups.
type GroupListing struct {
	Group        string
	ProtocolType string
	State        State
}

// MemberDescription is one member of DescribeGroups.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Metadata and Assignment are set when the group is Stable.
	Metadata   []byte
	Assignment []byte
}

// GroupDescription is one group of DescribeGroups. A group that does
// not exist is described as Dead with no error, as Kafka does.
type GroupDescription struct {
	Group        string
	Code         Code
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Leader       string
	Members      []MemberDescription
}

// Stats are figures for the metrics.
type Stats struct {
	ByState [Dead + 1]int
	Members int
}
