package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lab/alertloop"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

func newLabCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "The storm lab: a simulated fleet with an embedded Prometheus, to rehearse retry storms",
	}
	cmd.AddCommand(newLabScenariosCmd(f), newLabRunCmd(f))
	return cmd
}

type labScenario struct {
	Name     string `json:"name"`
	Protects string `json:"protects,omitempty"`
	Title    string `json:"title"`
}

func newLabScenariosCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios and their protected variants",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(_ *cobra.Command, _ []string) error {
			all, err := sim.Builtins()
			if err != nil {
				return err
			}
			var rows []labScenario
			for _, s := range all {
				rows = append(rows, labScenario{Name: s.Name, Protects: s.Protects, Title: s.Title})
			}
			return f.Print(rows, func(tty bool) error {
				t := output.NewTable(f.IO.Out, tty, "NAME", "PROTECTS", "TITLE")
				for _, r := range rows {
					t.Row(r.Name, r.Protects, r.Title)
				}
				return t.Flush()
			})
		},
	}
}

type labRunOptions struct {
	scenario, speed, serve, events string
	until, groupWait               time.Duration
	seed                           uint64
	autopilot                      bool
}

func newLabRunCmd(f *Factory) *cobra.Command {
	o := &labRunOptions{}
	cmd := &cobra.Command{
		Use:   "run --scenario NAME",
		Short: "Run a scenario and print its summary; with --serve, keep its Prometheus API and Redis up",
		Long: `Run a scenario (built-in name or a .yaml file) on a virtual clock and print the
summary: peak amplification, attempts per request, pool saturation, edge success,
and when the saved amplification and edge_error_rate queries first breach.

The simulated services read their levers through the flags provider from a
control plane: the Redis of --redis-url (given on this command; contexts and
STORMCTL_REDIS_URL are not used, so a lab never touches production levers),
else an embedded Redis-protocol server on a loopback port. --events pulls
levers at simulated times through that control plane, with every guard
(evidence from the lab itself) and the journal; a refused event is reported
and the run goes on.

With --serve the lab serves the Prometheus HTTP API and /metrics on a loopback
address until interrupted and prints the STORMCTL_PROMETHEUS_URL and
STORMCTL_REDIS_URL to use from another terminal: in a real-time run,
'stormctl retries off checkout->payments ...' there changes the lab within a
scrape interval or two.

Time: samples are never stamped ahead of the wall clock. A real-time run
starts now; a --speed max run ends about now; an Nx run starts in the past
and ends about now. Instant queries that name no time are answered at the
lab's present. Levers live on the wall clock in paced runs (at Nx a TTL lasts
N times as much simulated time); in a --speed max run they live on the clock
a real-time run would have had, so a scheduled lever lasts its TTL of
simulated time, and the control plane keeps it until that wall time.

With --autopilot the alerting rules of 'query export --format rules --alerts'
(with the scenario's thresholds) are evaluated by the lab's engine every 5 s
of simulated time, honouring for:; what fires or resolves is grouped as
Alertmanager would (group_by alertname, service, dependency; --group-wait) and
delivered to the real receiver of 'alerts serve' on the lab's control plane,
whose autopilot (the context's autopilot list, else retries and breakers of
any service) pulls the playbook's chosen lever through every guard. A lever
reaches the fleet at the simulated instant it was pulled and lives its TTL
(alerts.autopilot-ttl, 10m) of simulated time; the playbook's verify step is
not run. The summary adds "autopilot": the levers pulled, when the first
retry signal fired and when the first lever landed.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runLab(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.scenario, "scenario", "", "scenario name (stormctl lab scenarios) or YAML file")
	fl.DurationVar(&o.until, "until", 0, "simulated time to run (default: the scenario's duration)")
	fl.StringVar(&o.speed, "speed", "max", "max, realtime or Nx (e.g. 10x)")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same run")
	fl.StringVar(&o.serve, "serve", "", "serve the Prometheus API on this loopback address, e.g. 127.0.0.1:9090")
	fl.BoolVar(&o.autopilot, "autopilot", false, "run the exported alerting rules, the alerts receiver and its autopilot in the loop")
	fl.DurationVar(&o.groupWait, "group-wait", alertloop.DefaultGroupWait, "with --autopilot: Alertmanager's group_wait before a new group's first webhook")
	fl.StringVar(&o.events, "events", "", "YAML file of levers to pull at simulated times: [{at, kind, target, value, ttl, reason, force}]")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// labRunResult is `lab run -o json`: the summary's keys, and with
// --autopilot what the autopilot did.
type labRunResult struct {
	sim.Summary
	Autopilot *alertloop.Report `json:"autopilot,omitempty"`
}

func parseSpeed(s string) (float64, error) {
	switch s {
	case "max", "":
		return 0, nil
	case "realtime":
		return 1, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || !strings.HasSuffix(s, "x") || v <= 0 {
		return 0, exit.NewUsage(fmt.Errorf("--speed %q: want max, realtime or Nx such as 10x", s))
	}
	return v, nil
}

func runLab(ctx context.Context, f *Factory, o *labRunOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	speed, err := parseSpeed(o.speed)
	if err != nil {
		return err
	}
	sc, err := sim.Find(o.scenario)
	if err != nil {
		return exit.NewUsage(err)
	}
	var events []sim.LeverEvent
	if o.events != "" {
		data, err := yamlfile.ReadFile(o.events, yamlfile.DefaultLimits())
		if err != nil {
			return exit.NewUsage(err)
		}
		if events, err = sim.ParseEvents(o.events, data); err != nil {
			return exit.NewUsage(err)
		}
	}
	if o.autopilot && len(events) > 0 {
		return exit.NewUsage(errors.New("--autopilot and --events: give one; the autopilot pulls the levers"))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	cp, err := openLabControl(ctx, f)
	if err != nil {
		return err
	}
	defer cp.close()
	l, err := lab.New(lab.Options{Scenario: sc, Seed: o.seed, Until: o.until, Speed: speed,
		Redis: cp.store.Client(), Events: events})
	if err != nil {
		return err
	}
	defer l.Close()
	addr := o.serve
	if addr == "" {
		addr = "127.0.0.1:0" // for the evidence of --events
	}
	srv, err := promapi.Serve(addr, l.Handler())
	if err != nil {
		return exit.NewUsage(err)
	}
	defer srv.Close()
	if o.serve != "" {
		fmt.Fprintf(f.IO.ErrOut, "lab: serving scenario %s; from another terminal:\n", sc.Name)
		fmt.Fprintf(f.IO.ErrOut, "STORMCTL_PROMETHEUS_URL=%s\nSTORMCTL_REDIS_URL=%s\n", srv.URL, cp.url)
	}
	if len(events) > 0 {
		if l.Actions, err = cp.actions(f, l, srv.URL); err != nil {
			return err
		}
	}
	var loop *alertloop.Loop
	if o.autopilot {
		if loop, err = cp.autopilot(f, l, srv.URL, o.groupWait); err != nil {
			return err
		}
		defer loop.Close()
	}
	fmt.Fprintf(f.IO.ErrOut, "lab: running %s (seed %d, speed %s, levers from %s)\n", sanitize.Line(sc.Name), o.seed, o.speed, cp.url)
	var report *alertloop.Report
	if loop != nil {
		report, err = loop.Run(ctx)
	} else {
		err = l.Run(ctx)
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	printPulls(f, l.Pulls)
	sum, err := l.Summary(context.Background())
	if err != nil {
		return err
	}
	out := labRunResult{Summary: sum, Autopilot: report}
	if err := f.Print(out, func(bool) error {
		if err := lab.WriteSummary(f.IO.Out, sum); err != nil || report == nil {
			return err
		}
		return alertloop.WriteReport(f.IO.Out, report)
	}); err != nil {
		return err
	}
	if o.serve != "" && ctx.Err() == nil {
		fmt.Fprintln(f.IO.ErrOut, "lab: run finished; still serving until interrupted (Ctrl-C)")
		<-ctx.Done()
	}
	return nil
}
