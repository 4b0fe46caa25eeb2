package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/sanitize"
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
	role, user, actor, passwordEnv, namespace string
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
  commander  the responder's rights; policy decides who may approve
  automation the responder's rights, for unattended playbooks and scripts;
             it never approves

With --actor NAME the user is bound to that actor: it may write only NAME's
own actor keys, and every write script touches its actor's key, so acting,
requesting or approving as anyone else is refused by Redis itself (NOPERM).
Give each person such a user (the user name defaults to NAME); with one shared
user, roles and approvals rest on a typed --actor and are advisory. See
docs/identity.md.

Without --role every role is printed. The password never appears in clear:
--password-env VAR prints the SHA-256 of that variable's value (#hash); without
it the user has no password and cannot log in until you set one.`,
		Example: `  STORMCTL_PW=s3cret stormctl acl print --role responder --actor alice --password-env STORMCTL_PW | redis-cli
  STORMCTL_PW=t0ken stormctl acl print --role automation --actor automation --password-env STORMCTL_PW | redis-cli`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error { return runACLPrint(f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.role, "role", "", "viewer, flagd, service, actuator, responder, commander or automation (default: all)")
	fl.StringVar(&o.user, "user", "", "ACL user name (default: the --actor, else stormctl-ROLE)")
	fl.StringVar(&o.actor, "actor", "", "bind the user to this actor: it may write as nobody else (needs --role)")
	fl.StringVar(&o.passwordEnv, "password-env", "", "environment variable holding the user's password")
	fl.StringVar(&o.namespace, "namespace", "", "control-plane namespace (default: the context's)")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"viewer", "flagd", "service", "actuator", "responder", "commander", "automation"}, cobra.ShellCompDirectiveNoFileComp))
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
	if (o.user != "" || o.actor != "") && len(roles) > 1 {
		return exit.NewUsage(fmt.Errorf("--user and --actor need --role: one user has one role"))
	}
	actor, err := sanitize.Actor(o.actor)
	if err != nil {
		return exit.NewUsage(fmt.Errorf("--actor: %w", err))
	}
	if o.user == "" && strings.ContainsAny(actor, " \x00") {
		return exit.NewUsage(fmt.Errorf("--actor %q cannot be a Redis user name: pass --user", actor))
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
		user := cmp.Or(o.user, actor, "stormctl-"+string(r))
		args := controlplane.ACLArgs(user, r, controlplane.NewKeys(ns), actor, password)
		users = append(users, aclUser{Role: string(r), User: user, Actor: actor, Args: args, Command: redisCLILine(args)})
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
	Role  string `json:"role"`
	User  string `json:"user"`
	Actor string `json:"actor,omitempty"` // "" for a shared user
	// Command is the line for redis-cli; Args are its arguments as sent.
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// redisCLILine joins args as redis-cli reads a line: an argument with a
// space or a quote is double-quoted with escapes; a backslash elsewhere is
// literal to redis-cli.
func redisCLILine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
