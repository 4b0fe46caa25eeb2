package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
)

func newACLCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Redis ACL users for stormctl roles",
	}
	cmd.AddCommand(newACLPrintCmd(f))
	return cmd
}

type aclPrintOptions struct {
	role, user, passwordEnv, namespace string
}

func newACLPrintCmd(f *Factory) *cobra.Command {
	o := &aclPrintOptions{}
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the ACL SETUSER command of a role",
		Long: `Print the Redis ACL SETUSER command for a stormctl role, limited to the keys
(~stormctl:{namespace}:*) and channels (&stormctl:{namespace}:*) of one namespace:

  viewer     reads levers, the journal and the change feed; no scripts, no writes
  flagd      for stormctl flagd serve: reads levers and the change feed; writes
             only its acknowledgements ("seen by"), never a lever or the journal
  responder  also runs the control-plane scripts (apply, release, extend, journal)
  commander  the responder's rights; approvals are enforced by stormctl, not Redis

Without --role every role is printed. The password never appears in clear:
--password-env VAR prints the SHA-256 of that variable's value (#hash); without
it the user has no password and cannot log in until you set one.`,
		Example: `  STORMCTL_PW=s3cret stormctl acl print --role responder --user alice --password-env STORMCTL_PW | redis-cli`,
		Args:    usageArgs(cobra.NoArgs),
		RunE:    func(*cobra.Command, []string) error { return runACLPrint(f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.role, "role", "", "viewer, flagd, service, actuator, responder or commander (default: all)")
	fl.StringVar(&o.user, "user", "", "ACL user name (default stormctl-ROLE)")
	fl.StringVar(&o.passwordEnv, "password-env", "", "environment variable holding the user's password")
	fl.StringVar(&o.namespace, "namespace", "", "control-plane namespace (default: the context's)")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"viewer", "flagd", "service", "responder", "commander"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runACLPrint(f *Factory, o *aclPrintOptions) error {
	roles := controlplane.Roles
	if o.role != "" {
		r, err := controlplane.ParseRole(o.role)
		if err != nil {
			return exit.NewUsage(err)
		}
		roles = []controlplane.Role{r}
	}
	if o.user != "" && len(roles) > 1 {
		return exit.NewUsage(fmt.Errorf("--user needs --role: one user has one role"))
	}
	ns := o.namespace
	if ns == "" {
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		ns = cfg.Redis.Namespace
	}
	password := ""
	if o.passwordEnv != "" {
		v := f.getenv(o.passwordEnv)
		if v == "" {
			return exit.NewUsage(fmt.Errorf("--password-env %s: the variable is empty or unset", o.passwordEnv))
		}
		sum := sha256.Sum256([]byte(v))
		password = "#" + hex.EncodeToString(sum[:])
	} else {
		fmt.Fprintln(f.IO.ErrOut, "stormctl: no --password-env: these users cannot log in until a password is set")
	}
	users := make([]aclUser, 0, len(roles))
	for _, r := range roles {
		user := o.user
		if user == "" {
			user = "stormctl-" + string(r)
		}
		users = append(users, aclUser{Role: string(r), User: user, Command: controlplane.ACLCommand(user, r, controlplane.NewKeys(ns), password)})
	}
	return f.Print(users, func(bool) error {
		for _, u := range users {
			if _, err := fmt.Fprintln(f.IO.Out, u.Command); err != nil {
				return err
			}
		}
		return nil
	})
}

// aclUser is one role's user in `acl print -o json`.
type aclUser struct {
	Role    string `json:"role"`
	User    string `json:"user"`
	Command string `json:"command"`
}
