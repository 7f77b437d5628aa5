package kafkaserver

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// noAuthorizer is the message of the ACL APIs' 54 SECURITY_DISABLED
// when serve runs without an authorizer, Kafka's words.
var noAuthorizer = "No Authorizer is configured."

// aclCode is the answer for an ACL API when c may not do op on the
// cluster or there is no authorizer, with its message; errNone else.
func (s *Server) aclCode(c *conn, op kmsg.ACLOperation) (int16, *string) {
	if s.cfg.Authorizer == nil {
		return kerr.SecurityDisabled.Code, &noAuthorizer
	}
	if code := s.clusterCode(c, op); code != errNone {
		return code, nil
	}
	return errNone, nil
}

// updateACLs changes the ACL file with fn, durably, and makes the
// authorizer decide by the result at once.
func (s *Server) updateACLs(fn func([]acl.Binding) ([]acl.Binding, error)) error {
	a := s.cfg.Authorizer
	ctx, cancel := context.WithTimeout(s.ctx, DefaultWriteTimeout)
	defer cancel()
	err := a.File().Update(ctx, fn)
	if rerr := a.Refresh(); err == nil {
		err = rerr
	}
	return err
}

// errString is err's text as a response's message.
func errString(err error) *string {
	msg := err.Error()
	return &msg
}

// handleCreateAcls adds the bindings of a CreateAcls request (KIP-140;
// v1+ with a pattern type, KIP-290) to the ACL file: ALTER on the
// cluster is needed (31 for each creation else), each binding must be
// valid (42 INVALID_REQUEST with the reason), and the valid ones are
// written durably, in one change, before the answer.
func handleCreateAcls(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	p.resp = resp
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	code, msg := s.aclCode(c, kmsg.ACLOperationAlter)
	var add []acl.Binding
	var added []int // the results of add's bindings
	for i, cr := range r.Creations {
		res := &resp.Results[i]
		res.ErrorCode, res.ErrorMessage = code, msg
		if code != errNone {
			continue
		}
		b := acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType, Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
		if err := b.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, errString(err)
			continue
		}
		add = append(add, b)
		added = append(added, i)
	}
	if len(add) > 0 {
		if err := s.updateACLs(func(bs []acl.Binding) ([]acl.Binding, error) { return acl.Add(bs, add...), nil }); err != nil {
			s.log.Error("kafka CreateAcls: writing the acl file failed", "err", err.Error())
			code := kerr.UnknownServerError.Code
			if errors.Is(err, acl.ErrCorrupt) {
				code = kerr.KafkaStorageError.Code
			}
			for _, i := range added {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, errString(err)
			}
		}
	}
	for _, res := range resp.Results {
		p.setErr(res.ErrorCode)
	}
	return nil
}
