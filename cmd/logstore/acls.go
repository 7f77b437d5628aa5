package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/acl"
)

// aclResources are the resource flags of the acls commands.
type aclResources struct {
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
}

func (r *aclResources) register(f *pflag.FlagSet, pattern string) {
	r.pattern = pattern
	f.StringArrayVar(&r.topics, "topic", nil, "a topic (repeatable; with --resource-pattern-type prefixed, a prefix; * is every topic)")
	f.StringArrayVar(&r.groups, "group", nil, "a consumer group (repeatable)")
	f.StringArrayVar(&r.txnIDs, "transactional-id", nil, "a transactional id (repeatable)")
	f.BoolVar(&r.cluster, "cluster", false, "the cluster ("+acl.ClusterName+")")
	f.StringVar(&r.pattern, "resource-pattern-type", pattern, "how the names are read: literal or prefixed (list and delete: also any, or match for the ACLs that apply to the names)")
}

type namedResource struct {
	typ  kmsg.ACLResourceType
	name string
}

// list is the resources named, in flag order.
func (r *aclResources) list() []namedResource {
	var out []namedResource
	for _, x := range []struct {
		typ   kmsg.ACLResourceType
		names []string
	}{{kmsg.ACLResourceTypeTopic, r.topics}, {kmsg.ACLResourceTypeGroup, r.groups}, {kmsg.ACLResourceTypeTransactionalId, r.txnIDs}} {
		for _, n := range x.names {
			out = append(out, namedResource{x.typ, n})
		}
	}
	if r.cluster {
		out = append(out, namedResource{kmsg.ACLResourceTypeCluster, acl.ClusterName})
	}
	return out
}

func parseEnum[T any](flag, s string, parse func(string) (T, error)) (T, error) {
	v, err := parse(s)
	if err != nil {
		return v, fmt.Errorf("--%s %q: %w", flag, s, err)
	}
	return v, nil
}

func parseOperations(ops []string) ([]kmsg.ACLOperation, error) {
	var out []kmsg.ACLOperation
	for _, s := range ops {
		op, err := parseEnum("operation", s, kmsg.ParseACLOperation)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, nil
}

func newACLsCommand() *cobra.Command {
	dir := defaultStoreDir()
	cmd := &cobra.Command{
		Use:   "acls",
		Short: "Add, list and delete the ACLs that serve --authorizer acl enforces",
		Long: `acls edits DIR/acls.json, the access control lists that logstore serve checks
every request against when it runs with --authorizer acl (as kafka-acls.sh
does for Kafka; CreateAcls, DescribeAcls and DeleteAcls change the same file
over the wire). An ACL allows or denies a principal (User:NAME, or User:* for
everyone), connecting from a host (an IP address, or * for any), an operation
(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
ALTER_CONFIGS, IDEMPOTENT_WRITE, ..., or ALL) on a topic, group,
transactional id or the cluster, named literally (* is every one) or by a
prefix. A DENY wins over any ALLOW; READ, WRITE, DELETE and ALTER imply
DESCRIBE. The file is replaced durably at each change, and a running serve
reads it again within a second.`,
		Example: `  logstore acls add --allow-principal User:app --operation WRITE --operation READ --topic orders
  logstore acls add --allow-principal User:app --operation READ --topic logs- --resource-pattern-type prefixed
  logstore acls add --allow-principal User:app --operation READ --group app-consumers
  logstore acls add --deny-principal User:guest --operation ALL --topic '*'
  logstore acls list --topic orders --resource-pattern-type match
  logstore acls delete --principal User:app --topic orders`,
		Args: cobra.NoArgs,
	}
	addDirFlag(cmd.PersistentFlags(), &dir)

	var addRes aclResources
	var allow, deny, hosts, addOps []string
	add := &cobra.Command{
		Use:   "add",
		Short: "Add ACLs: each principal x host x operation x resource given",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pattern, err := parseEnum("resource-pattern-type", addRes.pattern, kmsg.ParseACLResourcePatternType)
			if err != nil {
				return err
			}
			ops, err := parseOperations(addOps)
			if err != nil {
				return err
			}
			resources := addRes.list()
			if len(allow)+len(deny) == 0 || len(ops) == 0 || len(resources) == 0 {
				return errors.New("give a principal (--allow-principal, --deny-principal), an --operation and a resource (--topic, --group, --transactional-id, --cluster)")
			}
			var bindings []acl.Binding
			for _, perm := range []struct {
				p          kmsg.ACLPermissionType
				principals []string
			}{{kmsg.ACLPermissionTypeAllow, allow}, {kmsg.ACLPermissionTypeDeny, deny}} {
				for _, principal := range perm.principals {
					for _, host := range hosts {
						for _, op := range ops {
							for _, r := range resources {
								b := acl.Binding{ResourceType: r.typ, ResourceName: r.name, PatternType: pattern, Principal: principal, Host: host, Operation: op, Permission: perm.p}
								if err := b.Validate(); err != nil {
									return err
								}
								bindings = append(bindings, b)
							}
						}
					}
				}
			}
			f, err := openACLs(dir)
			if err != nil {
				return err
			}
			return f.Update(cmd.Context(), func(bs []acl.Binding) ([]acl.Binding, error) { return acl.Add(bs, bindings...), nil })
		},
	}
	addRes.register(add.Flags(), "literal")
	add.Flags().StringArrayVar(&allow, "allow-principal", nil, "a principal to allow (User:NAME, User:*; repeatable)")
	add.Flags().StringArrayVar(&deny, "deny-principal", nil, "a principal to deny (repeatable)")
	add.Flags().StringArrayVar(&hosts, "host", []string{acl.Wildcard}, "the client address the ACLs apply to (repeatable; * is any)")
	add.Flags().StringArrayVar(&addOps, "operation", nil, "an operation: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALL (repeatable)")

	// A filter's flags: those of list and of delete.
	type filterFlags struct {
		res        aclResources
		principals []string
		ops        []string
		permission string
	}
	filterFlagsOn := func(c *cobra.Command, ff *filterFlags, pattern string) {
		ff.res.register(c.Flags(), pattern)
		c.Flags().StringArrayVar(&ff.principals, "principal", nil, "only the ACLs of this principal (repeatable)")
		c.Flags().StringArrayVar(&ff.ops, "operation", nil, "only the ACLs of this operation (repeatable)")
		c.Flags().StringVar(&ff.permission, "permission", "any", "only allow or deny ACLs, or any")
	}
	// filters is the cross product of ff's resources, principals and
	// operations, any for each not given.
	filters := func(ff *filterFlags) ([]acl.Filter, error) {
		pattern, err := parseEnum("resource-pattern-type", ff.res.pattern, kmsg.ParseACLResourcePatternType)
		if err != nil {
			return nil, err
		}
		perm, err := parseEnum("permission", ff.permission, kmsg.ParseACLPermissionType)
		if err != nil {
			return nil, err
		}
		ops, err := parseOperations(ff.ops)
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
		}
		resources := ff.res.list()
		if len(resources) == 0 {
			resources = []namedResource{{typ: kmsg.ACLResourceTypeAny}}
		}
		principals := []*string{nil}
		if len(ff.principals) > 0 {
			principals = principals[:0]
			for _, p := range ff.principals {
				principals = append(principals, &p)
			}
		}
		var out []acl.Filter
		for _, r := range resources {
			for _, p := range principals {
				for _, op := range ops {
					f := acl.Filter{ResourceType: r.typ, PatternType: pattern, Principal: p, Operation: op, Permission: perm}
					if r.typ != kmsg.ACLResourceTypeAny {
						f.ResourceName = &r.name
					}
					if err := f.Validate(); err != nil {
						return nil, err
					}
					out = append(out, f)
				}
			}
		}
		return out, nil
	}
	// selected opens the file and reads ff's filters.
	selected := func(ff *filterFlags) (*acl.File, []acl.Filter, error) {
		fs, err := filters(ff)
		if err != nil {
			return nil, nil, err
		}
		f, err := openACLs(dir)
		return f, fs, err
	}

	var listFlags filterFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the ACLs, or those the flags select",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, fs, err := selected(&listFlags)
			if err != nil {
				return err
			}
			bs, err := f.List()
			if err != nil {
				return err
			}
			_, matched := acl.Remove(bs, fs...) // (from the list read, not the file)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
			for _, b := range matched {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
			}
			return tw.Flush()
		},
	}
	filterFlagsOn(list, &listFlags, "any")

	var delFlags filterFlags
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete the ACLs the flags select (a resource or a principal at least)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(delFlags.res.list()) == 0 && len(delFlags.principals) == 0 {
				return errors.New("give a resource (--topic, --group, --transactional-id, --cluster) or a --principal: delete does not delete every ACL")
			}
			f, fs, err := selected(&delFlags)
			if err != nil {
				return err
			}
			removed := 0
			err = f.Update(cmd.Context(), func(bs []acl.Binding) ([]acl.Binding, error) {
				left, gone := acl.Remove(bs, fs...)
				removed = len(gone)
				return left, nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d ACLs\n", removed)
			return nil
		},
	}
	filterFlagsOn(del, &delFlags, "literal")

	cmd.AddCommand(add, list, del)
	return cmd
}

// openACLs opens dir's ACL file; dir must exist (a store, or where serve
// will make one).
func openACLs(dir string) (*acl.File, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	return acl.Open(dir)
}
