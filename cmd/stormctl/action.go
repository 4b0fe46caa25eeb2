package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
)

func newActionCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "action",
		Short: "Plan, apply, release and approve guarded, expiring lever changes",
		Long: `An action sets a lever — retries off, a breaker forced open, autoscaling frozen,
degraded mode, load shed — on one or more targets, for a limited time, after every
guard agrees, in this order: validation (the target must be known), policy (the
actor's role may use the kind), reason, TTL (at most the kind's maximum),
evidence (a saved query must show the problem, else --force), blast radius
(more targets than the policy allows need --targets N), approval (kinds marked in
policy need a second person), conflict (another action holds the lever: exit 6
unless --supersede), rate limit, confirmation (type the target, or --yes).

Every refusal is journaled and exits 3 (a conflict 6, a pending approval 5).

Kinds and values:
  retries      service or service->dependency   off | cap:N      max TTL 30m
  breaker      dependency or service->dependency open             max TTL 15m
  autoscaling  service                          frozen           max TTL 2h
  degraded     service                          a mode name      max TTL 1h
  shed         service                          percent 1-100    max TTL 30m`,
	}
	cmd.AddCommand(newActionApplyCmd(f, "plan"), newActionApplyCmd(f, "apply"), newActionApplyCmd(f, "request"),
		newActionApproveCmd(f), newActionReleaseCmd(f), newActionExtendCmd(f), newActionListCmd(f))
	return cmd
}

// applyOptions are the flags of apply, plan, request and the shortcuts.
type applyOptions struct {
	ttl                   time.Duration
	reason, incident, key string
	yes, force, supersede bool
	targets               int
}

func (o *applyOptions) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.DurationVar(&o.ttl, "ttl", 0, "how long the lever holds before it expires by itself (required; at most the kind's maximum)")
	fs.StringVar(&o.reason, "reason", "", "why: what you saw and why this helps (required)")
	fs.BoolVar(&o.yes, "yes", false, "confirm without typing the target (scripts)")
	fs.BoolVar(&o.force, "force", false, "act without supporting evidence (journaled as forced)")
	fs.BoolVar(&o.supersede, "supersede", false, "replace a lever another action holds (releasing this one restores it)")
	fs.StringVar(&o.key, "idempotency-key", "", "a retried command with the same key and arguments returns the first result and changes nothing; the key reused with other arguments exits 2")
	fs.StringVar(&o.incident, "incident", "", "incident to attach (default: the current one)")
	fs.IntVar(&o.targets, "targets", 0, "the number of targets, required when the list is longer than the blast radius")
}

func (o *applyOptions) spec(kind, target, value string) actions.Spec {
	return actions.Spec{Kind: kind, Target: target, Value: value, TTL: o.ttl, Reason: o.reason, Incident: o.incident,
		Force: o.force, Supersede: o.supersede, Yes: o.yes, Targets: o.targets, IdempotencyKey: o.key}
}

func newActionApplyCmd(f *Factory, op string) *cobra.Command {
	o := &applyOptions{}
	short := map[string]string{
		"plan":    "Run every guard and show the change and the evidence, without applying it",
		"apply":   "Set a lever after every guard agrees",
		"request": "Ask a second person to approve a lever change",
	}[op]
	long := map[string]string{
		"plan": short + `. It writes nothing but an action.planned journal entry,
asks for no confirmation and consumes no rate budget, and it exits as apply would:
0, 3 (a guard would refuse), 5 (approval needed) or 6 (conflict).`,
		"apply": short + `. Targets may be a comma list (more than the policy's blast radius needs
--targets N); the action id names all of its levers for release and extend.`,
		"request": short + `: the guards up to approval run now, the request waits an hour,
and "stormctl action approve ID" by someone else applies it. Exits 0 with the request id.`,
	}[op]
	cmd := &cobra.Command{
		Use:   op + " KIND TARGET VALUE --ttl D --reason R",
		Short: short,
		Long:  long,
		Example: fmt.Sprintf(`  stormctl action %s retries checkout->payments off --ttl 15m --reason "amplification 4x"
  stormctl action %s breaker payments open --ttl 10m --reason "p99 above timeout" --yes`, op, op),
		Args: usageArgs(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOrder(cmd, args[0], args[1], args[2]); err != nil {
				return err
			}
			return runAction(cmd.Context(), f, op, o.spec(args[0], args[1], args[2]))
		},
	}
	o.bind(cmd)
	return cmd
}

// runAction plans, applies or requests spec and prints the result. A plan
// prints what it found even when apply would be refused, and exits as
// apply would.
func runAction(ctx context.Context, f *Factory, op string, spec actions.Spec) error {
	s, err := f.Attempts(ctx)
	if err != nil {
		return err
	}
	cfg, _ := f.Config()
	spec.Actor = cfg.Actor
	var res *actions.Result
	switch op {
	case "plan":
		res, err = s.Plan(ctx, spec)
	case "request":
		res, _, err = s.Request(ctx, spec)
	default:
		res, err = s.Apply(ctx, spec)
	}
	var pending *actions.PendingError
	ft, _ := f.Output()
	if errors.As(err, &pending) && op != "plan" && ft == output.Table {
		// Nothing was applied: a table would read as if it had been. The
		// error alone says that approval is pending and what to run.
		return err
	}
	var unrep *controlplane.UnreplicatedError
	if res != nil && (err == nil || op == "plan" || pending != nil || ft != output.Table || errors.As(err, &unrep)) {
		if perr := printResult(f, res, err); perr != nil {
			return perr
		}
	}
	return err
}

func newActionApproveCmd(f *Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "approve REQUEST-ID",
		Short: "Approve and apply someone else's request (the guards run again, as you)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChange(cmd.Context(), f, func(s *actions.Service, actor string) (*actions.Result, error) {
				return s.Approve(cmd.Context(), args[0], actor, yes)
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm without typing the target (scripts)")
	return cmd
}

func newActionReleaseCmd(f *Factory) *cobra.Command {
	o := &changeOptions{}
	cmd := &cobra.Command{
		Use:   "release ACTION-ID --reason R",
		Short: "Undo an action: remove its levers, or restore the levers it superseded",
		Long: `Undo an action: remove its levers, or restore the levers it superseded. A reason
is required, as for apply, and so is a confirmation: type the target on a
terminal, or pass --yes in a script.`,
		Example: `  stormctl action release 01JD5Q... --reason "p99 back under the timeout" --yes`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runChange(cmd.Context(), f, func(s *actions.Service, actor string) (*actions.Result, error) {
				return s.ReleaseWith(cmd.Context(), args[0], actor, o.reason, actions.ChangeOptions{Confirm: true, Yes: o.yes})
			})
		},
	}
	o.bind(cmd, "released")
	return cmd
}

func newActionExtendCmd(f *Factory) *cobra.Command {
	o := &changeOptions{}
	var ttl time.Duration
	var shorten bool
	cmd := &cobra.Command{
		Use:   "extend ACTION-ID --ttl D --reason R",
		Short: "Move an action's expiry later, to now + TTL (at most the kind's maximum)",
		Long: `Move an action's expiry later, to now + TTL, at most the kind's maximum. Extend
never shortens: a TTL shorter than the time left is refused unless --shorten
says that is the point (journaled with the outcome "shortened"). A reason is
required, as for apply, and so is a confirmation: type the target on a
terminal, or pass --yes in a script.`,
		Example: `  stormctl action extend 01JD5Q... --ttl 20m --reason "gateway still slow" --yes`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl == 0 { // a negative or too short TTL is the TTL guard's to refuse, on the record
				return exit.NewUsage(errors.New("--ttl is required: the new time left, from now"))
			}
			return runChange(cmd.Context(), f, func(s *actions.Service, actor string) (*actions.Result, error) {
				return s.ExtendWith(cmd.Context(), args[0], actor, o.reason, ttl, actions.ChangeOptions{Confirm: true, Yes: o.yes, Shorten: shorten})
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "time left from now (required)")
	cmd.Flags().BoolVar(&shorten, "shorten", false, "allow a TTL shorter than the time left: end the action sooner")
	o.bind(cmd, "extended")
	return cmd
}

// changeOptions are the flags of release and extend.
type changeOptions struct {
	reason string
	yes    bool
}

func (o *changeOptions) bind(cmd *cobra.Command, done string) {
	cmd.Flags().StringVar(&o.reason, "reason", "", "why it is "+done+" (required)")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "confirm without typing the target (scripts), as for apply")
}

func runChange(ctx context.Context, f *Factory, do func(*actions.Service, string) (*actions.Result, error)) error {
	s, err := f.Actions(ctx)
	if err != nil {
		return err
	}
	cfg, _ := f.Config()
	res, err := do(s, cfg.Actor)
	var unrep *controlplane.UnreplicatedError
	if err != nil && !errors.As(err, &unrep) {
		return err
	}
	if perr := printResult(f, res, err); perr != nil {
		return perr
	}
	return err
}

func newActionListCmd(f *Factory) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List active actions and pending approval requests (--all: also those that ended)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := f.Actions(ctx)
			if err != nil {
				return err
			}
			list, err := s.List(ctx, all)
			if err != nil {
				return err
			}
			return printActionList(f, list)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired actions and requests no longer pending")
	return cmd
}
