package main

import (
	"github.com/spf13/cobra"
)

// newShortcutCmds are the one-verb forms of `action apply` that read best in
// a runbook, e.g. `stormctl retries off checkout->payments --ttl 15m ...`.
// They take the flags of `action apply`.
func newShortcutCmds(f *Factory) []*cobra.Command {
	retries := &cobra.Command{Use: "retries", Short: "Turn retries off or cap them for a service or service->dependency"}
	retries.AddCommand(
		shortcut(f, "off TARGET", "Turn retries off", 1, false, func(a []string, _ string) (string, string, string) {
			return "retries", a[0], "off"
		}),
		shortcut(f, "cap N TARGET", "Cap attempts at N (1 means no retries)", 2, false, func(a []string, _ string) (string, string, string) {
			return "retries", a[1], "cap:" + a[0]
		}),
	)
	breaker := &cobra.Command{Use: "breaker", Short: "Force the breaker to a dependency open, fleet-wide"}
	breaker.AddCommand(shortcut(f, "open TARGET", "Force the breaker to a dependency (or service->dependency) open", 1, false,
		func(a []string, _ string) (string, string, string) { return "breaker", a[0], "open" }))
	autoscaling := &cobra.Command{Use: "autoscaling", Short: "Freeze a service's autoscaling"}
	autoscaling.AddCommand(shortcut(f, "freeze SERVICE", "Freeze autoscaling", 1, false,
		func(a []string, _ string) (string, string, string) { return "autoscaling", a[0], "frozen" }))
	degraded := &cobra.Command{Use: "degraded", Short: "Put a service in a degraded mode"}
	degraded.AddCommand(shortcut(f, "on SERVICE", "Enter degraded mode (--mode names it)", 1, true,
		func(a []string, mode string) (string, string, string) { return "degraded", a[0], mode }))
	shed := shortcut(f, "shed SERVICE PERCENT", "Reject PERCENT (1-100) of a service's new work at ingress", 2, false,
		func(a []string, _ string) (string, string, string) { return "shed", a[0], a[1] })
	return []*cobra.Command{retries, breaker, autoscaling, degraded, shed}
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
			return runAction(cmd.Context(), f, "apply", o.spec(kind, target, value))
		},
	}
	o.bind(cmd)
	if withMode {
		cmd.Flags().StringVar(&mode, "mode", mode, "the degraded mode, e.g. on or rules-only")
	}
	return cmd
}
