package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui"
	"github.com/stormctl/stormctl/tui/components/signals"
)

type dashOptions struct {
	service, playbook, incident string
	params, playbookDirs        []string
	readOnly                    bool
	refresh                     time.Duration
	top                         int
	recorded                    bool
}

func defaultDashOptions() *dashOptions {
	return &dashOptions{refresh: 10 * time.Second, top: signals.DefaultTop}
}

func newDashCmd(f *Factory) *cobra.Command {
	o := defaultDashOptions()
	cmd := &cobra.Command{
		Use:   "dash",
		Short: "Open the incident dashboard (also: stormctl with no arguments on a terminal)",
		Long: `Open the incident dashboard: the saved queries as live panels (value, threshold,
trend, 15-minute sparkline) per service and dependency, every lever held with
its holder, reason, time left and the instances that have seen it, the steps of
a playbook, the journal as it is written, and a dialog that plans an action
(guards, evidence, diff) before anything is written and applies it only when
the target is typed. Press ? for every key.

Panels refresh through the shared query runner (one query in flight per panel,
backing off when Prometheus struggles; stale data is marked stale). Levers
arrive through the control plane's change feed and the journal is followed,
not polled. --read-only hides every action.

A banner says when the control plane's journal went back (a failover lost
entries: run stormctl journal sync) and which answers Prometheus sent past a
cap were cut; the dashboard's answers in flight share a fixed memory budget.
With alerts.alertmanager-url in the context, Alertmanager's alerts and their
incidents show beside the panels, with the autopilot's state.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runDash(cmd.Context(), f, o, nil) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.service, "service", "", "show only this service's panels")
	fl.StringVar(&o.playbook, "playbook", "", "load this playbook (stormctl playbook list)")
	fl.StringArrayVarP(&o.params, "param", "p", nil, "a playbook parameter as NAME=VALUE (repeatable)")
	addPlaybooksFlag(fl, &o.playbookDirs)
	fl.StringVar(&o.incident, "incident", "", "incident id (default: the open incident)")
	fl.BoolVar(&o.readOnly, "read-only", false, "look, never act: hide every action")
	fl.DurationVar(&o.refresh, "refresh", 10*time.Second, "mean interval between panel refreshes (jittered)")
	fl.IntVar(&o.top, "top", signals.DefaultTop, fmt.Sprintf(
		"without --service: the fleet view, each query's N worst series ranked and grouped by service, "+
			"with the fleet's counts (0: every series; at most %d)", queries.MaxTop))
	fl.BoolVar(&o.recorded, "recorded", false,
		"rank the fleet from the recording rules of `stormctl query export --format rules` (cheaper for Prometheus)")
	return cmd
}

// dashExtra lets `stormctl demo` add to the dashboard what it set up.
type dashExtra struct {
	status string // shown in the status bar at start
	clock  func() string
	// reportDir is where `w` writes the HTML report ("" is the working
	// directory).
	reportDir string
}

func runDash(ctx context.Context, f *Factory, o *dashOptions, extra *dashExtra) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := textOnly(f, "the dashboard", "use stormctl status -o json or journal tail -o json in scripts"); err != nil {
		return err
	}
	if !f.IO.IsStdinTTY() || !f.IO.IsStdoutTTY() {
		return exit.NewUsage(fmt.Errorf("the dashboard needs a terminal; use stormctl status, query check or journal tail in scripts"))
	}
	if o.top < 0 || o.top > queries.MaxTop {
		return exit.NewUsage(fmt.Errorf("--top %d: want 0 to %d", o.top, queries.MaxTop))
	}
	if o.playbook == "" && len(o.params) > 0 {
		return exit.NewUsage(fmt.Errorf("--param needs --playbook"))
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	cat, err := f.Catalog()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var warnings []string
	deps := tui.Deps{}
	if runner, err := f.Runner(); err == nil {
		deps.Querier = runner
		if c, err := f.PromClient(); err == nil {
			// Whatever Prometheus sends, the dashboard's answers in flight
			// hold at most this much together; a cut says so on screen.
			c.SetBudget(queries.NewBudget(queries.DefaultDashBudget))
		}
	} else {
		warnings = append(warnings, "prometheus: "+err.Error())
	}
	var svc *actions.Service
	store, err := f.Store(ctx)
	if err == nil {
		deps.Store = store
		deps.Journal = store.Journal()
		// The machine's mark, shared with status and flagd serve: a loss
		// any of them saw before the dashboard opened still shows.
		deps.Loss = controlplane.NewLossDetector(store, store.MarkPath(f.getenv))
		if !o.readOnly {
			if svc, err = f.Actions(ctx); err != nil {
				return err
			}
			svc.Confirm = tui.TypedConfirmer{}
			deps.Actions = svc
		}
	} else {
		warnings = append(warnings, "redis: "+err.Error())
		if !o.readOnly && cfg.Actor != "" {
			// Each attempt fails with why, on the record in the pending file.
			offline, err := f.Attempts(ctx)
			if err != nil {
				return err
			}
			deps.Actions = offline
		}
	}
	if deps.Store != nil {
		dir := "."
		if extra != nil && extra.reportDir != "" {
			dir = extra.reportDir
		}
		deps.Report = f.reportWriter(dir)
	} else {
		store = nil
	}
	dashAlerts(&deps, cfg, store)
	incident := o.incident
	if incident == "" && deps.Store != nil {
		incident = currentIncidentID(ctx, store)
	}
	var prog *tea.Program
	if o.playbook != "" {
		run, err := dashPlaybook(ctx, f, o, svc, incident, cfg.Actor, func(m tea.Msg) {
			if prog != nil {
				prog.Send(m)
			}
		})
		if err != nil {
			return err
		}
		deps.Playbook = run
	}
	services := make([]string, 0, len(cfg.Services))
	for s := range cfg.Services {
		services = append(services, s)
	}
	sort.Strings(services)
	plan := signals.Plan{Catalog: cat, Service: o.service, Services: services, PackFor: func(service string) (string, map[string]string, error) {
		return f.packFor("", service)
	}, Top: o.top, Recorded: o.recorded}
	opts := tui.Options{Context: cfg.Name, Actor: cfg.Actor, Incident: incident, ReadOnly: o.readOnly,
		Signals: plan, Refresh: o.refresh}
	if deps.Store != nil && !o.readOnly {
		if id, err := store.Identity(ctx); err == nil {
			opts.Advisory = id.Advisory()
		}
	}
	if extra != nil {
		opts.Clock = extra.clock
	}
	if out, ok := f.IO.RawOut().(*os.File); ok {
		askTerminal(out, f.IO.IsStdoutTTY())
	}
	m := tui.New(ctx, deps, opts)
	prog = tea.NewProgram(m, tea.WithAltScreen(), tea.WithInput(f.IO.In), tea.WithOutput(f.IO.RawOut()), tea.WithContext(ctx))
	go func() {
		for _, w := range warnings {
			prog.Send(tui.ErrorStatus(w))
		}
		if extra != nil && extra.status != "" {
			prog.Send(tui.InfoStatus(extra.status))
		}
	}()
	_, err = prog.Run()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// dashPlaybook prepares the playbook run the dashboard steps through,
// resumed from the incident's journal.
func dashPlaybook(ctx context.Context, f *Factory, o *dashOptions, svc *actions.Service, incident, actor string, send func(tea.Msg)) (*playbooks.Run, error) {
	pb, err := f.Playbook(o.playbookDirs, o.playbook)
	if err != nil {
		return nil, err
	}
	given, err := playbooks.ParseParams(o.params)
	if err != nil {
		return nil, err
	}
	env := playbooks.Env{Measurer: &lazyMeasurer{f: f}, Progress: func(step string, m playbooks.Measurement, met bool, err error) {
		send(tui.Progress(step, m, met, err))
	}}
	if svc != nil {
		env.Levers, env.Journal = playbooks.ActionLevers{Service: svc}, svc.Journal
	}
	run, err := playbooks.NewRun(pb, playbooks.RunOptions{Params: given, Incident: incident, Actor: actor}, env)
	if err != nil {
		return nil, err
	}
	if incident != "" && svc != nil {
		history, err := incidentEntries(ctx, f, incident)
		if err != nil {
			return nil, err
		}
		run.Resume(history)
	}
	return run, nil
}

// currentIncidentID is the open incident's id, "" if none or unreadable.
// Looking needs no actor and writes nothing, so --read-only finds it too.
func currentIncidentID(ctx context.Context, store *controlplane.Store) string {
	cur, err := (&actions.Service{Store: actions.FromStore(store)}).CurrentIncident(ctx)
	if err != nil || cur == nil {
		return ""
	}
	return cur.ID
}
