package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// handleDescribeAcls answers the bindings a DescribeAcls filter
// matches, grouped by resource pattern in the order the file has them:
// DESCRIBE on the cluster is needed (31), a filter with an UNKNOWN
// field is 42.
func handleDescribeAcls(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	p.resp = resp
	if code, msg := s.aclCode(c, kmsg.ACLOperationDescribe); code != errNone {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		p.setErr(code)
		return nil
	}
	f := acl.Filter{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType, Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errString(err)
		p.setErr(resp.ErrorCode)
		return nil
	}
	bindings, err := s.cfg.Authorizer.File().List()
	if err != nil {
		s.log.Error("kafka DescribeAcls: reading the acl file failed", "err", err.Error())
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, errString(err)
		p.setErr(resp.ErrorCode)
		return nil
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	at := map[pattern]int{}
	for _, b := range bindings {
		if !f.Matches(b) {
			continue
		}
		k := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[k]
		if !ok {
			i = len(resp.Resources)
			at[k] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = k.rt, k.name, k.pt
			resp.Resources = append(resp.Resources, res)
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return nil
}
