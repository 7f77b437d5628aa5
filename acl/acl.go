// Package acl keeps the access control lists that logstore serve's
// authorizer enforces, in acls.json at the store root, and decides each
// action as Kafka's StandardAuthorizer does.
//
// A binding (Kafka's AclBinding) is a resource pattern and an entry:
//
//   - the resource: a type (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, ...),
//     a name, and how the name is read: LITERAL (the name itself, or
//     "*" for every resource of the type) or PREFIXED (every resource
//     whose name starts with it);
//   - the entry: a principal ("User:alice", or "User:*" for everyone),
//     a host (a client's IP address, or "*"), an operation (READ,
//     WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
//     ALTER_CONFIGS, IDEMPOTENT_WRITE, ..., or ALL) and a permission,
//     ALLOW or DENY.
//
// An action (principal, host, operation, resource type and name) is
// decided so:
//
//  1. a super user may do anything;
//  2. the bindings that match the resource are those of its type whose
//     LITERAL name is the resource's name or "*", and whose PREFIXED
//     name begins the resource's name;
//  3. of those, the ones whose principal is the action's or "User:*"
//     and whose host is the action's or "*" apply: one DENY that names
//     the operation (or ALL) denies; else one ALLOW that names it (or
//     ALL, or implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE,
//     ALTER_CONFIGS implies DESCRIBE_CONFIGS; a DENY implies nothing)
//     allows;
//  4. else the action is denied, unless no binding at all matched the
//     resource (whatever its principal) and the authorizer allows
//     everyone where no ACL is found (Kafka's
//     allow.everyone.if.no.acl.found).
//
// The file is JSON, one object per binding, with the names Kafka's
// tools print:
//
//	{"version": 1, "acls": [{"resource_type": "TOPIC",
//	  "resource_name": "orders", "pattern_type": "PREFIXED",
//	  "principal": "User:app", "host": "*", "operation": "WRITE",
//	  "permission": "ALLOW"}]}
//
// It is replaced whole by each change (Update), durably and under a
// flock, as package rootfile keeps a file (two writers, serve answering
// CreateAcls and `logstore acls add`, do not lose each other's change).
// An Authorizer looks at the file again at most once a second and reads
// it when its size or time changed, so a change made by another process
// applies within a second.
package acl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/rootfile"
)

// FileName is the ACL file at the store root.
const FileName = "acls.json"

// ClusterName is the name of the one CLUSTER resource, as Kafka names it.
const ClusterName = "kafka-cluster"

// Wildcard is the LITERAL resource name, principal name and host that
// match any.
const Wildcard = "*"

// WildcardPrincipal is the principal of a binding for everyone.
const WildcardPrincipal = "User:*"

// maxFileBytes bounds what a read of the file takes in.
const maxFileBytes = 64 << 20

// ErrCorrupt is wrapped by the error of an ACL file that does not
// decode or holds a binding Validate refuses.
var ErrCorrupt = errors.New("acl file is corrupt")

// ErrInvalid is wrapped by Validate's error: a binding or filter that a
// CreateAcls, DescribeAcls or DeleteAcls request may not carry (Kafka
// answers such with INVALID_REQUEST).
var ErrInvalid = errors.New("invalid acl")

// Binding is one ACL: a resource pattern and an entry (Kafka's
// AclBinding).
type Binding struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s %s %s %q: %s %s from %s)", b.PatternType, b.ResourceType, b.ResourceName, b.Principal, b.Permission, b.Operation, b.Host)
}

// Validate says whether b may be stored, with Kafka's rules
// (AclControlManager.validateNewAcl and AclApis): a concrete resource
// type, LITERAL or PREFIXED, a concrete operation, ALLOW or DENY, a
// name (the CLUSTER's is kafka-cluster), a principal "Type:Name" and a
// host.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType <= kmsg.ACLResourceTypeAny || b.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("%w: resource type %s", ErrInvalid, b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: pattern type %s, want LITERAL or PREFIXED", ErrInvalid, b.PatternType)
	case b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("%w: operation %s", ErrInvalid, b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return fmt.Errorf("%w: permission %s, want ALLOW or DENY", ErrInvalid, b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("%w: an empty resource name", ErrInvalid)
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return fmt.Errorf("%w: cluster resource %q: the only cluster resource is %q", ErrInvalid, b.ResourceName, ClusterName)
	case b.Host == "":
		return fmt.Errorf("%w: an empty host (%q is any)", ErrInvalid, Wildcard)
	}
	return ValidatePrincipal(b.Principal)
}

// ValidatePrincipal says whether p is a principal "Type:Name".
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q, want TYPE:NAME (User:alice, User:*)", ErrInvalid, p)
	}
	return nil
}

// Filter selects bindings (Kafka's AclBindingFilter), for DescribeAcls
// and DeleteAcls: ANY in a type field, and nil in a name, principal or
// host, match anything. PatternType MATCH selects the bindings that
// would apply to the resource ResourceName names: its LITERAL name, the
// LITERAL "*", and every PREFIXED name that begins it.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate refuses a filter with an UNKNOWN field (Kafka's
// AclControlManager.validateFilter), which matches nothing Kafka could
// answer for.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("%w: filter of resource type %s", ErrInvalid, f.ResourceType)
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: filter of pattern type %s", ErrInvalid, f.PatternType)
	case f.Operation == kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("%w: filter of operation %s", ErrInvalid, f.Operation)
	case f.Permission == kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("%w: filter of permission %s", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches says whether f selects b, as Kafka's ResourcePatternFilter and
// AccessControlEntryFilter match.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal ||
		f.Host != nil && *f.Host != b.Host ||
		f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation ||
		f.Permission != kmsg.ACLPermissionTypeAny && f.Permission != b.Permission {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			return strings.HasPrefix(name, b.ResourceName)
		}
		return b.ResourceName == name || b.ResourceName == Wildcard
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	return f.ResourceName == nil || *f.ResourceName == b.ResourceName
}

type fileJSON struct {
	Version int       `json:"version"`
	ACLs    []Binding `json:"acls"`
}

// Decode reads an ACL file's bytes; path names it in errors. Each
// binding must pass Validate, and none may be given twice.
func Decode(path string, data []byte) ([]Binding, error) {
	var f fileJSON
	if err := rootfile.DecodeJSON(path, data, &f, ErrCorrupt); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%s: %w: version %d, want 1", path, ErrCorrupt, f.Version)
	}
	seen := make(map[Binding]bool, len(f.ACLs))
	for i, b := range f.ACLs {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w: acl %d %s: %w", path, ErrCorrupt, i, b, err)
		}
		if seen[b] {
			return nil, fmt.Errorf("%s: %w: acl %d %s given twice", path, ErrCorrupt, i, b)
		}
		seen[b] = true
	}
	if f.ACLs == nil {
		f.ACLs = []Binding{}
	}
	return f.ACLs, nil
}

// Encode is the file's bytes for bindings.
func Encode(bindings []Binding) ([]byte, error) {
	data, err := json.MarshalIndent(fileJSON{Version: 1, ACLs: bindings}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// File is the ACL file of a store directory.
type File struct {
	f *rootfile.File[[]Binding]
}

// Open reads dir's ACL file; without one there are no bindings.
func Open(dir string) (*File, error) {
	f, err := rootfile.Open(filepath.Join(dir, FileName), rootfile.Codec[[]Binding]{
		Decode: Decode, Encode: Encode, Empty: func() []Binding { return []Binding{} },
		MaxBytes: maxFileBytes, Corrupt: ErrCorrupt,
	})
	if err != nil {
		return nil, err
	}
	return &File{f}, nil
}

// Path is the ACL file's path.
func (f *File) Path() string { return f.f.Path() }

// List returns the bindings as the file has them now, in the order
// they were added.
func (f *File) List() ([]Binding, error) {
	bs, err := f.f.Fresh()
	return slices.Clone(bs), err
}

// current returns the bindings (shared: not to be changed), read again
// if the file changed, and their generation; a file that changed and
// does not read keeps those read before (and err says why).
func (f *File) current() ([]Binding, uint64, error) { return f.f.Current() }

// Update changes the file with fn, which gets the bindings as the file
// has them (read again under the lock, its own copy) and returns them
// changed; the result is checked as Decode checks a file and written
// durably before Update returns.
func (f *File) Update(ctx context.Context, fn func([]Binding) ([]Binding, error)) error {
	return f.f.Update(ctx, fn)
}

// Add appends the bindings not already in bindings (adding one twice
// is no error, as in Kafka).
func Add(bindings []Binding, add ...Binding) []Binding {
	for _, b := range add {
		if !slices.Contains(bindings, b) {
			bindings = append(bindings, b)
		}
	}
	return bindings
}

// Remove takes the bindings some filter of fs matches out of bindings,
// and returns what is left and what was taken.
func Remove(bindings []Binding, fs ...Filter) (left, removed []Binding) {
	for _, b := range bindings {
		if slices.ContainsFunc(fs, func(f Filter) bool { return f.Matches(b) }) {
			removed = append(removed, b)
		} else {
			left = append(left, b)
		}
	}
	if left == nil {
		left = []Binding{}
	}
	return left, removed
}
