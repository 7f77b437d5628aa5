package kafkaserver

import (
	"context"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
)

// FuzzACLRequests feeds arbitrary frames to a connection of a server
// with an authorizer whose ACLs the connection may change (its
// principal, User:ANONYMOUS, may ALTER the cluster): ACL requests, and
// the requests they then decide. Nothing may panic; each input starts
// from no ACL but that one.
func FuzzACLRequests(f *testing.F) {
	store, err := logstore.Open(f.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	file, err := acl.Open(store.Dir())
	if err != nil {
		f.Fatal(err)
	}
	admin := acl.Binding{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: acl.ClusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: anonymous, Host: acl.Wildcard, Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeAllow}
	// reset makes the file hold admin alone again; it writes (and
	// fsyncs) only when an input changed it, which keeps the fuzzer
	// fast.
	reset := func() {
		if bs, err := file.List(); err == nil && len(bs) == 1 && bs[0] == admin {
			return
		}
		if err := file.Update(context.Background(), func([]acl.Binding) ([]acl.Binding, error) { return []acl.Binding{admin}, nil }); err != nil {
			f.Fatal(err)
		}
	}
	reset()
	authorizer, err := acl.NewAuthorizer(file, nil, false)
	if err != nil {
		f.Fatal(err)
	}
	logs := &panicWatch{}
	srv, err := New(store, Config{MaxRequestBytes: 1 << 20, Authorizer: authorizer, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.cat.CreateTopic("t", 1, nil, false); err != nil {
		f.Fatal(err)
	}

	create := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypePrefixed
	c.Principal, c.Host, c.Operation, c.PermissionType = anonymous, "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, c)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeMatch
	describe.ResourceName = kmsg.StringPtr("t")
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	df.Operation, df.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, df)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	for _, v := range []int16{0, 1, 3} {
		var seed []byte
		for i, r := range []kmsg.Request{create, describe, produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "a")), fetchReq(12, "t", 0, 0, 0, 0), md, del} {
			if r.Key() >= 29 && r.Key() <= 31 {
				r.SetVersion(v)
			}
			seed = append(seed, frame(r, int32(i))...)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer func() {
			reset()
			authorizer.Refresh()
		}()
		fuzzConnInput(t, srv, logs, data)
	})
}
