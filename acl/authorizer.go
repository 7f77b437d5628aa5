package acl

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recheckInterval is how often an Authorizer looks whether its file
// changed.
const recheckInterval = time.Second

// Authorizer decides actions by a File's bindings (see the package doc).
// Its methods may be called from any goroutine.
type Authorizer struct {
	file       *File
	superUsers []string
	allowIfNo  bool

	idx atomic.Pointer[index]
	// checked is when the file was last looked at (UnixNano); mu is
	// held by the one goroutine looking.
	checked atomic.Int64
	mu      sync.Mutex
}

// NewAuthorizer decides by f's bindings. superUsers are principals that
// may do anything (Kafka's super.users); allowIfNoACL allows an action
// on a resource that no binding matches (allow.everyone.if.no.acl.found).
func NewAuthorizer(f *File, superUsers []string, allowIfNoACL bool) (*Authorizer, error) {
	a := &Authorizer{file: f, superUsers: slices.Clone(superUsers), allowIfNo: allowIfNoACL}
	bindings, gen, err := f.current()
	if err != nil {
		return nil, err
	}
	a.idx.Store(newIndex(bindings, gen))
	a.checked.Store(time.Now().UnixNano())
	return a, nil
}

// File is the file a decides by.
func (a *Authorizer) File() *File { return a.file }

// SuperUser says whether principal is a super user.
func (a *Authorizer) SuperUser(principal string) bool {
	return slices.Contains(a.superUsers, principal)
}

// Refresh makes a decide by the file as it is now (after a change made
// through a.File(), Update already did).
func (a *Authorizer) Refresh() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshLocked()
}

func (a *Authorizer) refreshLocked() error {
	bindings, gen, err := a.file.current()
	a.checked.Store(time.Now().UnixNano())
	if a.idx.Load().gen != gen {
		a.idx.Store(newIndex(bindings, gen))
	}
	return err
}

// index returns the bindings' index, having looked at the file again if
// it was last looked at more than recheckInterval ago. A file that no
// longer reads keeps the bindings read before.
func (a *Authorizer) index() *index {
	if time.Now().UnixNano()-a.checked.Load() > int64(recheckInterval) && a.mu.TryLock() {
		a.refreshLocked()
		a.mu.Unlock()
	}
	return a.idx.Load()
}

// Authorize says whether principal, connected from host, may do op on
// the resource of type rt named name.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.SuperUser(principal) {
		return true
	}
	return a.index().decide(principal, host, op, rt, name, a.allowIfNo)
}

// AuthorizeAny says whether principal may do op on some resource of
// type rt, as Kafka's authorizeByResourceType: an ALLOW that applies to
// the principal and host on some pattern that no applicable DENY covers
// (a DENY of the LITERAL "*", of the same LITERAL name, or PREFIXED by
// a beginning of the pattern). With no binding of the type at all it is
// allowIfNoACL. Kafka asks this for an idempotent producer's
// InitProducerId: WRITE on any topic.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.SuperUser(principal) {
		return true
	}
	idx := a.index()
	var allows, denies []Binding
	typed := false
	for _, b := range idx.bindings {
		if b.ResourceType != rt {
			continue
		}
		typed = true
		switch applies(b, principal, host, op) {
		case kmsg.ACLPermissionTypeAllow:
			allows = append(allows, b)
		case kmsg.ACLPermissionTypeDeny:
			denies = append(denies, b)
		}
	}
	if !typed {
		return a.allowIfNo
	}
	for _, allow := range allows {
		covered := slices.ContainsFunc(denies, func(deny Binding) bool {
			switch {
			case deny.PatternType == kmsg.ACLResourcePatternTypeLiteral && deny.ResourceName == Wildcard:
				return true
			case deny.PatternType == kmsg.ACLResourcePatternTypePrefixed:
				return strings.HasPrefix(allow.ResourceName, deny.ResourceName)
			default:
				return allow.PatternType == kmsg.ACLResourcePatternTypeLiteral && allow.ResourceName == deny.ResourceName
			}
		})
		if !covered {
			return true
		}
	}
	return false
}

// index is the bindings arranged for decide: per resource type, the
// LITERAL bindings by name and the PREFIXED ones by prefix, with the
// lengths of the prefixes, so that a decision costs a few map lookups
// whatever the number of bindings.
type index struct {
	bindings []Binding
	gen      uint64 // the File's generation of bindings
	types    map[kmsg.ACLResourceType]*typeIndex
}

type typeIndex struct {
	literal  map[string][]Binding
	prefixed map[string][]Binding
	lengths  []int // of the prefixes, ascending
}

func newIndex(bindings []Binding, gen uint64) *index {
	idx := &index{bindings: bindings, gen: gen, types: map[kmsg.ACLResourceType]*typeIndex{}}
	for _, b := range bindings {
		t := idx.types[b.ResourceType]
		if t == nil {
			t = &typeIndex{literal: map[string][]Binding{}, prefixed: map[string][]Binding{}}
			idx.types[b.ResourceType] = t
		}
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			t.prefixed[b.ResourceName] = append(t.prefixed[b.ResourceName], b)
			if n := len(b.ResourceName); !slices.Contains(t.lengths, n) {
				t.lengths = append(t.lengths, n)
			}
		} else {
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], b)
		}
	}
	for _, t := range idx.types {
		slices.Sort(t.lengths)
	}
	return idx
}

// decide is step 2 to 4 of the package doc.
func (idx *index) decide(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, allowIfNo bool) bool {
	t := idx.types[rt]
	if t == nil {
		return allowIfNo
	}
	matched, allowed := false, false
	check := func(bs []Binding) bool { // false: denied
		for _, b := range bs {
			matched = true
			switch applies(b, principal, host, op) {
			case kmsg.ACLPermissionTypeDeny:
				return false
			case kmsg.ACLPermissionTypeAllow:
				allowed = true
			}
		}
		return true
	}
	if !check(t.literal[name]) {
		return false
	}
	if name != Wildcard && !check(t.literal[Wildcard]) {
		return false
	}
	for _, n := range t.lengths {
		if n > len(name) {
			break
		}
		if !check(t.prefixed[name[:n]]) {
			return false
		}
	}
	if !matched {
		return allowIfNo
	}
	return allowed
}

// applies is what b says of principal doing op from host: ALLOW, DENY,
// or UNKNOWN when b is not about them (Kafka's
// StandardAuthorizerData.findResult).
func applies(b Binding, principal, host string, op kmsg.ACLOperation) kmsg.ACLPermissionType {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Host != Wildcard && b.Host != host {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Operation != kmsg.ACLOperationAll && b.Operation != op && !(b.Permission == kmsg.ACLPermissionTypeAllow && implies(b.Operation, op)) {
		return kmsg.ACLPermissionTypeUnknown
	}
	return b.Permission
}

// implies says whether an ALLOW of have allows want too.
func implies(have, want kmsg.ACLOperation) bool {
	switch want {
	case kmsg.ACLOperationDescribe:
		switch have {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return have == kmsg.ACLOperationAlterConfigs
	}
	return false
}
