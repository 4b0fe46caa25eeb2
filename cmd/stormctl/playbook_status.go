package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/playbooks"
)

// statusReport is the -o json result of `playbook status`.
type statusReport struct {
	Playbook string                `json:"playbook"`
	Version  string                `json:"version"`
	Incident string                `json:"incident"`
	Next     string                `json:"next,omitempty"`
	Runs     []journal.Entry       `json:"runs"`
	Steps    []playbooks.StepState `json:"steps"`
}

func newPlaybookStatusCmd(f *Factory, dirs *[]string) *cobra.Command {
	var incident string
	cmd := &cobra.Command{
		Use:               "status NAME",
		Short:             "Which steps of a playbook are done for an incident, by whom, from the journal",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: playbookNames(f, dirs),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return playbookStatus(ctx, f, *dirs, args[0], incident)
		},
	}
	cmd.Flags().StringVar(&incident, "incident", "", "incident id (default: the open incident)")
	return cmd
}

func playbookStatus(ctx context.Context, f *Factory, dirs []string, name, incident string) error {
	pb, err := f.Playbook(dirs, name)
	if err != nil {
		return err
	}
	if incident == "" {
		svc, err := f.Actions(ctx)
		if err != nil {
			return err
		}
		if incident, err = (playbooks.ActionLevers{Service: svc}).CurrentIncident(ctx); err != nil {
			return err
		}
		if incident == "" {
			return exit.NewUsage(fmt.Errorf("no incident is open: pass --incident ID (see `stormctl incident list`)"))
		}
	}
	entries, err := incidentEntries(ctx, f, incident)
	if err != nil {
		return err
	}
	rep := statusReport{Playbook: pb.Name, Version: pb.Version, Incident: incident, Runs: playbooks.Runs(pb, incident, entries)}
	done := playbooks.History(pb, incident, entries)
	for _, s := range pb.Steps {
		st, ok := done[s.ID]
		if !ok {
			st = playbooks.StepState{ID: s.ID, Type: s.Type, Title: s.Title, RollbackOf: s.RollbackOf(), Status: playbooks.Pending}
		}
		if rep.Next == "" && !st.Done() && s.RollbackOf() == "" {
			rep.Next = s.ID
		}
		rep.Steps = append(rep.Steps, st)
	}
	if rep.Runs == nil {
		rep.Runs = []journal.Entry{}
	}
	return f.Print(rep, func(tty bool) error { return printStatus(f, tty, rep) })
}

func printStatus(f *Factory, tty bool, rep statusReport) error {
	switch {
	case len(rep.Runs) == 0:
		fmt.Fprintf(f.IO.ErrOut, "playbook %s has not run for incident %s\n", rep.Playbook, rep.Incident)
	case rep.Next == "":
		fmt.Fprintf(f.IO.ErrOut, "playbook %s for incident %s: every step is done\n", rep.Playbook, rep.Incident)
	default:
		fmt.Fprintf(f.IO.ErrOut, "playbook %s for incident %s: next step %s (`stormctl playbook run %s` continues there)\n",
			rep.Playbook, rep.Incident, rep.Next, rep.Playbook)
	}
	t := output.NewTable(f.IO.Out, tty, "step", "type", "status", "by", "at", "version", "outcome")
	for _, st := range rep.Steps {
		at, status := "", string(st.Status)
		if st.At != nil {
			at = st.At.UTC().Format(time.RFC3339)
		}
		if st.RollbackOf != "" && st.Status == playbooks.Pending {
			status = "rollback of " + st.RollbackOf
		}
		outcome := st.Outcome
		if st.Error != "" {
			outcome = st.Error
		}
		t.Row(st.ID, string(st.Type), status, st.Actor, at, st.Version, outcome)
	}
	return t.Flush()
}
