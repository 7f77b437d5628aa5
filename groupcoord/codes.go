package groupcoord

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is a Kafka error code the coordinator answers with. The server
// puts it on the wire unchanged; the numbers are Kafka's.
type Code int16

// The codes of the classic group protocol.
const (
	None                      Code = 0
	UnknownTopicOrPartition   Code = 3
	OffsetMetadataTooLarge    Code = 12
	CoordinatorNotAvailable   Code = 15
	NotCoordinator            Code = 16
	IllegalGeneration         Code = 22
	InconsistentGroupProtocol Code = 23
	InvalidGroupID            Code = 24
	UnknownMemberID           Code = 25
	InvalidSessionTimeout     Code = 26
	RebalanceInProgress       Code = 27
	NonEmptyGroup             Code = 68
	GroupIDNotFound           Code = 69
	MemberIDRequired          Code = 79
	FencedInstanceID          Code = 82
	GroupSubscribedToTopic    Code = 86
	UnstableOffsetCommit      Code = 88
)

var codeNames = map[Code]string{
	None:                      "NONE",
	UnknownTopicOrPartition:   "UNKNOWN_TOPIC_OR_PARTITION",
	OffsetMetadataTooLarge:    "OFFSET_METADATA_TOO_LARGE",
	CoordinatorNotAvailable:   "COORDINATOR_NOT_AVAILABLE",
	NotCoordinator:            "NOT_COORDINATOR",
	IllegalGeneration:         "ILLEGAL_GENERATION",
	InconsistentGroupProtocol: "INCONSISTENT_GROUP_PROTOCOL",
	InvalidGroupID:            "INVALID_GROUP_ID",
	UnknownMemberID:           "UNKNOWN_MEMBER_ID",
	InvalidSessionTimeout:     "INVALID_SESSION_TIMEOUT",
	RebalanceInProgress:       "REBALANCE_IN_PROGRESS",
	NonEmptyGroup:             "NON_EMPTY_GROUP",
	GroupIDNotFound:           "GROUP_ID_NOT_FOUND",
	MemberIDRequired:          "MEMBER_ID_REQUIRED",
	FencedInstanceID:          "FENCED_INSTANCE_ID",
	GroupSubscribedToTopic:    "GROUP_SUBSCRIBED_TO_TOPIC",
	UnstableOffsetCommit:      "UNSTABLE_OFFSET_COMMIT",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code " + strconv.Itoa(int(c))
}

// ErrDamaged: groups.db holds what this build cannot read (an unknown
// format version, a key or record that does not decode, a file bbolt
// refuses or panics on). Open refuses it rather than guess. Always
// inside a *DamagedError when a key is to blame.
var ErrDamaged = errors.New("groups.db damaged")

// ErrClosed: the coordinator was closed.
var ErrClosed = errors.New("groupcoord: closed")

// ErrInUse: Read could not get groups.db within its timeout because a
// process has it open for writing (a running server).
var ErrInUse = errors.New("groups.db is in use by another process (a running server?)")

// DamagedError names the file, bucket and key of groups.db that does not
// decode, and the byte offset where decoding stopped. In the record
// file (InFile) the offset is in the file, and Bucket names the kind
// of record its key holds (empty when the damage is not in a record).
// In a bbolt file of format 1 it is in the key or value. It matches
// ErrDamaged.
type DamagedError struct {
	File   string
	Bucket string
	Key    []byte
	// InKey says Offset is in the key, not the value.
	InKey bool
	// InFile says Offset is in the record file.
	InFile bool
	Offset int
	Reason string
}

func (e *DamagedError) Error() string {
	if e.InFile {
		if e.Bucket == "" {
			return fmt.Sprintf("%s: %s: byte %d: %s", e.File, ErrDamaged, e.Offset, e.Reason)
		}
		return fmt.Sprintf("%s: %s: byte %d (%s key %q): %s", e.File, ErrDamaged, e.Offset, e.Bucket, e.Key, e.Reason)
	}
	where := "value"
	if e.InKey {
		where = "key"
	}
	return fmt.Sprintf("%s: %s: bucket %q, key %q: %s byte %d: %s", e.File, ErrDamaged, e.Bucket, e.Key, where, e.Offset, e.Reason)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// decodeError is where and why a record or key did not decode.
type decodeError struct {
	offset int
	reason string
}

func (e *decodeError) Error() string { return fmt.Sprintf("byte %d: %s", e.offset, e.reason) }
