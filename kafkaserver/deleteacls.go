package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// handleDeleteAcls removes the bindings each filter of a DeleteAcls
// request matches: ALTER on the cluster is needed (31 for each filter
// else), a filter with an UNKNOWN field is 42. Each filter is matched
// against the bindings as they were before the request, as Kafka's
// controller does, so a binding two filters match is answered under
// both; all the removals are one durable change.
func handleDeleteAcls(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	p.resp = resp
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	code, msg := s.aclCode(c, kmsg.ACLOperationAlter)
	filters := make([]*acl.Filter, len(r.Filters))
	for i, rf := range r.Filters {
		res := &resp.Results[i]
		res.ErrorCode, res.ErrorMessage = code, msg
		if code != errNone {
			continue
		}
		f := acl.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType, Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
		if err := f.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, errString(err)
			continue
		}
		filters[i] = &f
	}
	if code == errNone {
		err := s.updateACLs(func(bs []acl.Binding) ([]acl.Binding, error) {
			var valid []acl.Filter
			for i, f := range filters {
				if f == nil {
					continue
				}
				valid = append(valid, *f)
				_, removed := acl.Remove(bs, *f)
				res := &resp.Results[i]
				res.MatchingACLs = res.MatchingACLs[:0]
				for _, b := range removed {
					m := kmsg.NewDeleteACLsResponseResultMatchingACL()
					m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
					m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
					res.MatchingACLs = append(res.MatchingACLs, m)
				}
			}
			left, _ := acl.Remove(bs, valid...)
			return left, nil
		})
		if err != nil {
			s.log.Error("kafka DeleteAcls: writing the acl file failed", "err", err.Error())
			for i, f := range filters {
				if f != nil {
					resp.Results[i] = kmsg.DeleteACLsResponseResult{ErrorCode: kerr.UnknownServerError.Code, ErrorMessage: errString(err)}
				}
			}
		}
	}
	for _, res := range resp.Results {
		p.setErr(res.ErrorCode)
	}
	return nil
}
