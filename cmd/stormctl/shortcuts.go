package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
)

// newShortcutCmds are the one-verb forms of `action apply` that read best in
// a runbook, e.g. `stormctl retries off checkout->payments --ttl 15m ...`.
// They take the flags of `action apply`. Each kind also takes the order of
// `action apply` itself, KIND TARGET VALUE: `stormctl retries
// checkout->payments off`, and KIND VALUE TARGET: `stormctl retries cap:3
// checkout->payments`.
func newShortcutCmds(f *Factory) []*cobra.Command {
	retries := kindCmd(f, "retries", "Turn retries off or cap them for a service or service->dependency", "TARGET off|cap:N")
	retries.AddCommand(
		shortcut(f, "off TARGET", "Turn retries off", 1, false, func(a []string, _ string) (string, string, string) {
			return "retries", a[0], "off"
		}),
		shortcut(f, "cap N TARGET", "Cap attempts at N (1 means no retries)", 2, false, func(a []string, _ string) (string, string, string) {
			return "retries", a[1], "cap:" + a[0]
		}),
	)
	breaker := kindCmd(f, "breaker", "Force the breaker to a dependency open, fleet-wide", "TARGET open")
	breaker.AddCommand(shortcut(f, "open TARGET", "Force the breaker to a dependency (or service->dependency) open", 1, false,
		func(a []string, _ string) (string, string, string) { return "breaker", a[0], "open" }))
	autoscaling := kindCmd(f, "autoscaling", "Freeze a service's autoscaling", "SERVICE frozen")
	autoscaling.AddCommand(shortcut(f, "freeze SERVICE", "Freeze autoscaling", 1, false,
		func(a []string, _ string) (string, string, string) { return "autoscaling", a[0], "frozen" }))
	degraded := kindCmd(f, "degraded", "Put a service in a degraded mode", "SERVICE MODE")
	degraded.AddCommand(shortcut(f, "on SERVICE", "Enter degraded mode (--mode names it)", 1, true,
		func(a []string, mode string) (string, string, string) { return "degraded", a[0], mode }))
	shed := shortcut(f, "shed SERVICE PERCENT", "Reject PERCENT (1-100) of a service's new work at ingress", 2, false,
		func(a []string, _ string) (string, string, string) { return "shed", a[0], a[1] })
	return []*cobra.Command{retries, breaker, autoscaling, degraded, shed}
}

// kindCmd is the parent of a kind's shortcuts; run with two arguments it is
// `action apply KIND TARGET VALUE`.
func kindCmd(f *Factory, kind, short, args string) *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   kind + " " + args + " --ttl D --reason R",
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, value := valueFirst(kind, args[0], args[1])
			if err := checkOrder(cmd, kind, target, value); err != nil {
				return err
			}
			return runAction(cmd.Context(), f, "apply", o.spec(kind, target, value))
		},
	}
	o.bind(cmd)
	return cmd
}

// valueFirst reads KIND VALUE TARGET the way the verb shortcuts read
// (`retries cap:3 TARGET` like `retries off TARGET`): when the first
// argument is one of the kind's values and the second is not, they are
// swapped. Anything else is left for checkOrder and the guards.
func valueFirst(kind, a, b string) (target, value string) {
	ks, err := actions.ParseKind(kind)
	if err != nil {
		return a, b
	}
	_, aErr := ks.ParseValue(a)
	_, bErr := ks.ParseValue(b)
	if aErr == nil && bErr != nil {
		return b, a
	}
	return a, b
}

// shortcut is one `action apply` whose kind, target and value come from
// its arguments (and --mode, when withMode).
func shortcut(f *Factory, use, short string, nargs int, withMode bool, lever func(args []string, mode string) (kind, target, value string)) *cobra.Command {
	o := &applyOptions{}
	mode := "on"
	cmd := &cobra.Command{
		Use:   use + " --ttl D --reason R",
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(nargs)),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, target, value := lever(args, mode)
			if err := checkOrder(cmd, kind, target, value); err != nil {
				return err
			}
			return runAction(cmd.Context(), f, "apply", o.spec(kind, target, value))
		},
	}
	o.bind(cmd)
	if withMode {
		cmd.Flags().StringVar(&mode, "mode", mode, "the degraded mode, e.g. on or rules-only")
	}
	return cmd
}

// checkOrder catches arguments given in the wrong order — a value where
// the target goes — and says the command's form, before any guard runs.
func checkOrder(cmd *cobra.Command, kind, target, value string) error {
	ks, err := actions.ParseKind(kind)
	if err != nil {
		return nil
	}
	_, valueErr := ks.ParseValue(value)
	_, targetErr := ks.ParseValue(target)
	_, capErr := ks.ParseValue("cap:" + target) // retries cap N TARGET, swapped
	if valueErr == nil || (targetErr != nil && (kind != "retries" || capErr != nil)) {
		return nil // not swapped: the guards explain what is wrong
	}
	return exit.NewUsage(fmt.Errorf("arguments out of order: the form is `%s`, e.g. %s", formOf(cmd), exampleOf(cmd, kind)))
}

func formOf(cmd *cobra.Command) string {
	return strings.TrimSuffix(cmd.CommandPath()+" "+strings.TrimPrefix(cmd.Use, cmd.Name()+" "), " --ttl D --reason R")
}

// exampleArgs are a kind's TARGET VALUE in a worked example.
var exampleArgs = map[string]string{"retries": "checkout->payments off", "breaker": "payments open",
	"autoscaling": "checkout frozen", "degraded": "checkout rules-only", "shed": "checkout 20"}

func exampleOf(cmd *cobra.Command, kind string) string {
	if cmd.HasParent() && cmd.Parent().Name() == "action" {
		return cmd.CommandPath() + " " + kind + " " + exampleArgs[kind]
	}
	return map[string]string{
		"retries":     "stormctl retries checkout->payments off (or: stormctl retries off checkout->payments)",
		"breaker":     "stormctl breaker payments open (or: stormctl breaker open payments)",
		"autoscaling": "stormctl autoscaling checkout frozen (or: stormctl autoscaling freeze checkout)",
		"degraded":    "stormctl degraded checkout rules-only (or: stormctl degraded on checkout --mode rules-only)",
		"shed":        "stormctl shed checkout 20",
	}[kind]
}
