package kafkaserver

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/users"
)

// DescribeUserScramCredentials (50) and AlterUserScramCredentials (51),
// KIP-554: the users of Config.Users, as `logstore users` edits them.
// Kafka asks DESCRIBE and ALTER on the cluster; with no ACLs here yet,
// only a super user (Config.SuperUsers) may call them, and anyone else
// is answered 31 CLUSTER_AUTHORIZATION_FAILED. An upsertion carries the
// salted password the client computed (never the password), from which
// the credential's keys are derived. Errors per user as Kafka's: 92
// DUPLICATE_RESOURCE for a user named twice, 33 for a mechanism other
// than SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2), 93
// UNACCEPTABLE_CREDENTIAL for an empty name or iterations outside
// 4096-16384, 91 RESOURCE_NOT_FOUND for a credential that is not there.

// scramMechanisms are KIP-554's mechanism numbers.
var scramMechanisms = map[int8]users.Mechanism{1: users.ScramSHA256, 2: users.ScramSHA512}

func scramNumber(m users.Mechanism) int8 {
	for n, mm := range scramMechanisms {
		if mm == m {
			return n
		}
	}
	return 0
}

// mayManageUsers says whether c may do op (DESCRIBE, ALTER) on the
// users: by the ACLs of the cluster when there is an authorizer (super
// users may), else only a super user (Config.SuperUsers): where Kafka
// without an authorizer lets anyone manage the credentials, logstore
// does not.
func (s *Server) mayManageUsers(c *conn, op kmsg.ACLOperation) bool {
	if s.cfg.Authorizer != nil {
		return s.clusterCode(c, op) == errNone
	}
	return c.principal != "" && slices.Contains(s.cfg.SuperUsers, c.principal)
}

func notAuthorized(c *conn) *string {
	msg := fmt.Sprintf("principal %q may not manage the users", principalOf(c))
	return &msg
}

func handleDescribeUserScramCredentials(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	p.resp = resp
	if !s.mayManageUsers(c, kmsg.ACLOperationDescribe) || s.cfg.Users == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, notAuthorized(c)
		p.setErr(resp.ErrorCode)
		return nil
	}
	all, err := s.cfg.Users.List()
	if err != nil {
		s.log.Error("kafka DescribeUserScramCredentials: reading the users file failed", "err", err.Error())
		resp.ErrorCode = kerr.UnknownServerError.Code
		p.setErr(resp.ErrorCode)
		return nil
	}
	byName := map[string]users.User{}
	for _, u := range all {
		byName[u.Name] = u
	}
	names := make([]string, 0, len(r.Users))
	count := map[string]int{}
	for _, u := range r.Users {
		if count[u.Name]++; count[u.Name] == 1 {
			names = append(names, u.Name)
		}
	}
	if len(r.Users) == 0 {
		for _, u := range all {
			names = append(names, u.Name)
		}
	}
	for _, name := range names {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		u, ok := byName[name]
		switch {
		case count[name] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
		case !ok:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "attempt to describe a user credential that does not exist"
			res.ErrorMessage = &msg
		}
		if res.ErrorCode == 0 {
			for _, cred := range u.Credentials {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = scramNumber(cred.Mechanism), int32(cred.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		p.setErr(res.ErrorCode)
		resp.Results = append(resp.Results, res)
	}
	return nil
}

func handleAlterUserScramCredentials(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	p.resp = resp
	// One result per user named, in the order first named.
	var order []string
	codes := map[string]int16{}
	msgs := map[string]*string{}
	named := map[string]int{}
	fail := func(name string, code int16, msg string) {
		if codes[name] == 0 {
			codes[name], msgs[name] = code, &msg
		}
	}
	note := func(name string) {
		if named[name]++; named[name] == 1 {
			order = append(order, name)
		} else {
			fail(name, kerr.DuplicateResource.Code, "a user altered twice in one request")
		}
	}
	for _, d := range r.Deletions {
		note(d.Name)
	}
	for _, u := range r.Upsertions {
		note(u.Name)
	}
	var deletes []kmsg.AlterUserSCRAMCredentialsRequestDeletion
	creds := map[string]users.Credential{}
	for _, d := range r.Deletions {
		if _, ok := scramMechanisms[d.Mechanism]; !ok {
			fail(d.Name, kerr.UnsupportedSaslMechanism.Code, fmt.Sprintf("unknown SCRAM mechanism %d", d.Mechanism))
		}
		if d.Name == "" {
			fail(d.Name, kerr.UnacceptableCredential.Code, "the user name is empty")
		}
		deletes = append(deletes, d)
	}
	for _, u := range r.Upsertions {
		mech, ok := scramMechanisms[u.Mechanism]
		switch {
		case !ok:
			fail(u.Name, kerr.UnsupportedSaslMechanism.Code, fmt.Sprintf("unknown SCRAM mechanism %d", u.Mechanism))
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential.Code, "the user name is empty")
		default:
			cred, err := users.CredentialFromSalted(mech, u.Salt, u.SaltedPassword, int(u.Iterations))
			if err != nil {
				fail(u.Name, kerr.UnacceptableCredential.Code, err.Error())
			} else {
				creds[u.Name] = cred
			}
		}
	}
	authorized := s.mayManageUsers(c, kmsg.ACLOperationAlter) && s.cfg.Users != nil
	if authorized {
		err := s.cfg.Users.Update(context.Background(), func(us []users.User) ([]users.User, error) {
			for _, d := range deletes {
				if codes[d.Name] != 0 {
					continue
				}
				next, err := users.Remove(us, d.Name, scramMechanisms[d.Mechanism])
				if err != nil {
					fail(d.Name, kerr.ResourceNotFound.Code, "attempt to delete a user credential that does not exist")
					continue
				}
				us = next
			}
			for name, cred := range creds {
				if codes[name] == 0 {
					us = users.Set(us, name, cred)
				}
			}
			return us, nil
		})
		if err != nil {
			s.log.Error("kafka AlterUserScramCredentials: writing the users file failed", "err", err.Error())
			for _, name := range order {
				fail(name, kerr.UnknownServerError.Code, "the users file was not written")
			}
		}
	}
	for _, name := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = name
		if !authorized {
			res.ErrorCode, res.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, notAuthorized(c)
		} else {
			res.ErrorCode, res.ErrorMessage = codes[name], msgs[name]
		}
		p.setErr(res.ErrorCode)
		resp.Results = append(resp.Results, res)
	}
	return nil
}
