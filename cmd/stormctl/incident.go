package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/output"
)

func newIncidentCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "incident",
		Short: "Open, close and list incidents; the current one is attached to every action",
		Long: `An incident names a response. While one is open, every action (and its journal
entries) carries the current incident — the latest opened that is still open —
unless --incident names another; "journal export --incident ID" then gives its
timeline.`,
	}
	cmd.AddCommand(newIncidentOpenCmd(f), newIncidentCloseCmd(f), newIncidentListCmd(f))
	return cmd
}

func newIncidentOpenCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "open TITLE",
		Short: "Open an incident; it becomes the current one",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return incidentRun(cmd, f, func(s *actions.Service, actor string) (*actions.Incident, error) {
				return s.OpenIncident(cmd.Context(), args[0], actor)
			})
		},
	}
}

func newIncidentCloseCmd(f *Factory) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "close [ID] [--reason R]",
		Short: "Close an incident (default: the current one)",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return incidentRun(cmd, f, func(s *actions.Service, actor string) (*actions.Incident, error) {
				return s.CloseIncident(cmd.Context(), id, actor, reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is closed, for the journal (default: the incident's title)")
	return cmd
}

func incidentRun(cmd *cobra.Command, f *Factory, do func(*actions.Service, string) (*actions.Incident, error)) error {
	s, err := f.Actions(cmd.Context())
	if err != nil {
		return err
	}
	cfg, _ := f.Config()
	inc, err := do(s, cfg.Actor)
	if err != nil {
		return err
	}
	return printIncidents(f, inc)
}

func newIncidentListCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List incidents, oldest first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Reading needs no actor: only the store.
			store, err := f.Store(cmd.Context())
			if err != nil {
				return err
			}
			incs, err := (&actions.Service{Store: actions.FromStore(store)}).Incidents(cmd.Context())
			if incs == nil {
				incs = []actions.Incident{}
			}
			if perr := printIncidents(f, incs); perr != nil {
				return perr
			}
			return err
		},
	}
}

// printIncidents prints one incident (open, close) or a list.
func printIncidents(f *Factory, v any) error {
	var incs []actions.Incident
	switch x := v.(type) {
	case *actions.Incident:
		incs = []actions.Incident{*x}
	case []actions.Incident:
		incs = x
	}
	return f.Print(v, func(tty bool) error {
		if len(incs) == 0 {
			fmt.Fprintln(f.IO.ErrOut, "no incidents")
			return nil
		}
		tp := output.NewTable(f.IO.Out, tty, "id", "state", "title", "opened by", "opened", "closed by", "closed")
		for _, i := range incs {
			state, closed := "open", ""
			if !i.IsOpen() {
				state, closed = "closed", i.ClosedAt.Format(time.RFC3339)
			}
			tp.Row(i.ID, state, i.Title, i.OpenedBy, i.OpenedAt.Format(time.RFC3339), i.ClosedBy, closed)
		}
		return tp.Flush()
	})
}
