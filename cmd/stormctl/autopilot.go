package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/sanitize"
)

func newAutopilotCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "autopilot",
		Short: "Pause, resume or show the autopilot of stormctl alerts serve",
	}
	var reason string
	for _, paused := range []bool{true, false} {
		verb := map[bool]string{true: "pause", false: "resume"}[paused]
		c := &cobra.Command{
			Use:   verb + " --reason R",
			Short: map[bool]string{true: "Stop every receiver pulling levers unattended (journaled)", false: "Let the receivers pull levers unattended again (journaled)"}[paused],
			Args:  usageArgs(cobra.NoArgs),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if strings.TrimSpace(reason) == "" {
					return exit.NewUsage(errors.New("--reason is required: it is journaled"))
				}
				svc, err := f.Actions(cmd.Context())
				if err != nil {
					return err
				}
				cfg, _ := f.Config()
				st, err := alerts.SetPaused(cmd.Context(), svc, paused, cfg.Actor, reason)
				if err != nil {
					return err
				}
				return f.Print(st, func(bool) error {
					fmt.Fprintf(f.IO.Out, "autopilot %sd by %s: %s\n", verb, sanitize.Line(st.By), sanitize.Line(st.Reason))
					return nil
				})
			},
		}
		c.Flags().StringVar(&reason, "reason", "", "why (journaled)")
		cmd.AddCommand(c)
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Whether the autopilot is paused, what it may pull, and the levers it holds",
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return runAutopilotStatus(cmd.Context(), f) },
	})
	return cmd
}

// autopilotStatus is `autopilot status -o json`.
type autopilotStatus struct {
	alerts.State
	Allow   map[string][]string  `json:"allow"`
	TTL     string               `json:"ttl"`
	Actions []actions.ActionInfo `json:"actions"`
}

func runAutopilotStatus(ctx context.Context, f *Factory) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if f.flags.Actor == "" {
		f.flags.Actor = alerts.Actor // reading needs no responder
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	svc, err := f.Actions(ctx)
	if err != nil {
		return err
	}
	st, _, err := alerts.ReadState(ctx, svc)
	if err != nil {
		return err
	}
	all, err := svc.List(ctx, true)
	if err != nil {
		return err
	}
	out := autopilotStatus{State: st, Allow: cfg.Autopilot, TTL: time.Duration(cfg.Alerts.AutopilotTTL).String(), Actions: []actions.ActionInfo{}}
	if cfg.Alerts.AutopilotTTL == 0 {
		out.TTL = alerts.DefaultAutopilotTTL.String()
	}
	if out.Allow == nil {
		out.Allow = map[string][]string{}
	}
	for _, a := range all {
		if a.Actor == alerts.Actor {
			out.Actions = append(out.Actions, a)
		}
	}
	return f.Print(out, func(bool) error {
		w := f.IO.Out
		switch {
		case st.Paused:
			fmt.Fprintf(w, "autopilot: PAUSED by %s at %s: %s\n", sanitize.Line(st.By), st.At.Format(time.RFC3339), sanitize.Line(st.Reason))
		case len(out.Allow) == 0:
			fmt.Fprintln(w, "autopilot: off (the context's autopilot lists no kind)")
		default:
			fmt.Fprintln(w, "autopilot: on")
		}
		for _, k := range slices.Sorted(maps.Keys(out.Allow)) {
			fmt.Fprintf(w, "  may pull %s for %s (TTL %s)\n", k, sanitize.Line(strings.Join(out.Allow[k], ", ")), out.TTL)
		}
		if len(out.Actions) == 0 {
			fmt.Fprintln(w, "no actions taken")
		}
		for _, a := range out.Actions {
			fmt.Fprintf(w, "  %s  %-8s %s=%s on %s until %s  %s\n", a.ActionID, a.State, a.Kind, sanitize.Line(a.Value),
				sanitize.Line(strings.Join(a.Targets, ",")), a.ExpiresAt.Format(time.RFC3339), sanitize.Line(a.Reason))
		}
		return nil
	})
}
