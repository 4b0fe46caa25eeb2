package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/playbooks"
)

type playbookRunOptions struct {
	params                       []string
	incident, step, from, reason string
	yes                          bool
}

func newPlaybookRunCmd(f *Factory, dirs *[]string) *cobra.Command {
	o := &playbookRunOptions{}
	cmd := &cobra.Command{
		Use:   "run NAME --param NAME=VALUE...",
		Short: "Run a playbook step by step, or unattended with --yes",
		Long: `run executes a playbook's steps in order. On a terminal it shows each step, the
evidence of each check and the plan of each action (guards, before and after),
asks for your reason and for confirmation. With --yes it runs unattended and
stops at the first failed check (exit 4) or refused guard (exit 3, 5 or 6).

A run belongs to an incident (--incident, default the open one): the journal
says which steps are done, so running again continues from the step that
stopped, and an action step applied once for the incident is never applied
twice. --step runs one step (for example a rollback step), --from starts at one.`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: playbookNames(f, dirs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlaybook(cmd.Context(), f, o, *dirs, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.params, "param", "p", nil, "a parameter as NAME=VALUE (repeatable)")
	fl.StringVar(&o.incident, "incident", "", "incident id (default: the open incident)")
	fl.StringVar(&o.step, "step", "", "run only this step")
	fl.StringVar(&o.from, "from", "", "start at this step")
	fl.BoolVar(&o.yes, "yes", false, "run unattended: confirm actions, take default answers")
	fl.StringVar(&o.reason, "reason", "", "your reason, added to every action's")
	return cmd
}

// runReport is the -o json result of a run.
type runReport struct {
	Playbook string                `json:"playbook"`
	Version  string                `json:"version"`
	Incident string                `json:"incident,omitempty"`
	Params   map[string]string     `json:"params"`
	Result   string                `json:"result"` // completed, paused or stopped
	ExitCode int                   `json:"exit_code"`
	Error    string                `json:"error,omitempty"`
	Steps    []playbooks.StepState `json:"steps"`
}

func runPlaybook(ctx context.Context, f *Factory, o *playbookRunOptions, dirs []string, name string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// An interrupt stops the run where it is (a wait, a prompt) and still
	// journals the step and the run as stopped.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if o.step != "" && o.from != "" {
		return exit.NewUsage(errors.New("give --step or --from, not both"))
	}
	format, err := f.Output()
	if err != nil {
		return err
	}
	pb, err := f.Playbook(dirs, name)
	if err != nil {
		return err
	}
	given, err := playbooks.ParseParams(o.params)
	if err != nil {
		return err
	}
	svc, err := f.Actions(ctx)
	if err != nil {
		return err
	}
	cfg, _ := f.Config()
	levers := playbooks.ActionLevers{Service: svc}
	incident := o.incident
	if incident == "" {
		if incident, err = levers.CurrentIncident(ctx); err != nil {
			return err
		}
	}
	if incident == "" {
		fmt.Fprintln(f.IO.ErrOut, "warning: no incident is open: this run cannot be resumed and re-running an action step would act again; open one with `stormctl incident open TITLE`")
	}
	p := &stepPrinter{f: f, table: format == output.Table}
	env := playbooks.Env{Measurer: &lazyMeasurer{f: f}, Levers: levers, Journal: svc.Journal, Progress: p.progress, StepDone: p.done}
	r, err := playbooks.NewRun(pb, playbooks.RunOptions{Params: given, Incident: incident, Actor: cfg.Actor, Reason: o.reason}, env)
	if err != nil {
		return err
	}
	if incident != "" {
		history, err := incidentEntries(ctx, f, incident)
		if err != nil {
			return err
		}
		r.Resume(history)
	}
	if o.from != "" {
		if err := r.From(o.from); err != nil {
			return err
		}
	}
	var runErr error
	if f.IO.IsStdinTTY() && !o.yes {
		runErr = newPrompter(f, r, svc).run(ctx, o.step)
	} else {
		runErr = runUnattended(ctx, r, o)
	}
	return report(f, r, p, runErr)
}

func runUnattended(ctx context.Context, r *playbooks.Run, o *playbookRunOptions) error {
	in := playbooks.Input{Yes: o.yes}
	if o.step == "" {
		return r.RunAll(ctx, in)
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	_, err := r.RunStep(ctx, o.step, in)
	if ferr := r.Finish(ctx, err); err == nil {
		err = ferr
	}
	return err
}

// report prints the run's result: the JSON report, or a last line on stderr.
func report(f *Factory, r *playbooks.Run, p *stepPrinter, runErr error) error {
	rep := runReport{Playbook: r.Playbook().Name, Version: r.Playbook().Version, Incident: r.Incident(), Params: r.Params(),
		Result: "completed", ExitCode: exit.Code(runErr), Steps: r.Steps()}
	switch next := r.Next(); {
	case runErr != nil:
		rep.Result, rep.Error = "stopped", runErr.Error()
	case next != nil:
		rep.Result = "paused before step " + next.ID
	}
	if p.table {
		fmt.Fprintf(f.IO.ErrOut, "playbook %s %s\n", rep.Playbook, rep.Result)
		return runErr
	}
	if err := f.Print(rep, nil); err != nil {
		return err
	}
	if runErr != nil {
		return &exit.Silent{Err: runErr}
	}
	return nil
}

// stepPrinter prints each step's outcome as it is journaled (table
// output) and the polls of wait steps on stderr.
type stepPrinter struct {
	f     *Factory
	table bool
}

var statusMark = map[playbooks.Status]string{playbooks.Passed: "✓", playbooks.Failed: "✗", playbooks.Skipped: "-", playbooks.Pending: " "}

func (p *stepPrinter) done(st playbooks.StepState) {
	if !p.table {
		return
	}
	text := st.Outcome
	if st.Error != "" && st.Outcome != playbooks.OutcomeContinued {
		text = st.Error
	} else if st.Error != "" {
		text = st.Error + " (the run continues)"
	}
	fmt.Fprintf(p.f.IO.Out, "%s %-7s %-24s %s\n", statusMark[st.Status], st.Type, st.ID, text)
}

func (p *stepPrinter) progress(step string, m playbooks.Measurement, met bool, err error) {
	switch {
	case err != nil:
		fmt.Fprintf(p.f.IO.ErrOut, "  %s: %v; polling again\n", step, err)
	case len(m.Series) == 0:
		fmt.Fprintf(p.f.IO.ErrOut, "  %s: %s: no data (%s)\n", step, m.Query, m.NoData)
	case !met:
		fmt.Fprintf(p.f.IO.ErrOut, "  %s: %s = %.3g, not yet\n", step, m.Query, m.Series[0].Value)
	}
}

// lazyMeasurer connects to Prometheus on the first check, so a playbook
// whose steps need none (a rollback step) runs without it.
type lazyMeasurer struct {
	f    *Factory
	once sync.Once
	m    *playbooks.PromMeasurer
	err  error
}

func (l *lazyMeasurer) Measure(ctx context.Context, req playbooks.MeasureRequest) (playbooks.Measurement, error) {
	l.once.Do(func() {
		cat, err := l.f.Catalog()
		if err != nil {
			l.err = err
			return
		}
		runner, err := l.f.Runner()
		if err != nil {
			l.err = err
			return
		}
		l.m = &playbooks.PromMeasurer{Catalog: cat, Runner: runner, PackFor: l.f.packFor}
	})
	if l.err != nil {
		return playbooks.Measurement{Query: req.Query}, l.err
	}
	return l.m.Measure(ctx, req)
}

// incidentEntries reads the journal entries of one incident.
func incidentEntries(ctx context.Context, f *Factory, incident string) ([]journal.Entry, error) {
	_, stream, err := openJournal(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []journal.Entry
	for e, err := range journal.Entries(stream.Range(ctx, "-", "+")) {
		if err != nil {
			return nil, fmt.Errorf("read the journal: %w", err)
		}
		if e.Incident == incident {
			out = append(out, e)
		}
	}
	return out, nil
}
