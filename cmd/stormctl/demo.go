package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
)

type demoOptions struct {
	scenario, playbook string
	params             []string
	seed               uint64
	refresh            time.Duration
}

func newDemoCmd(f *Factory) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Live a retry storm in one command: the lab, an embedded control plane and the dashboard",
		Long: `demo starts the storm lab in real time (scenario gateway-blip unless --scenario),
serves its Prometheus API on a loopback port, starts an embedded Redis-protocol
server for the control plane (unless --redis-url is given), opens an incident,
loads the retry-amplification playbook for the scenario's caller and dependency,
and opens the dashboard on all of it. The simulated services read their levers
through the same flags provider real services use, so pulling a lever in the
dashboard changes the storm.

It prints how to attach a second terminal (stormctl status, journal tail, …).
On a terminal that is not a TTY it says so and runs the scenario headless,
printing the lab's summary.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.scenario, "scenario", "gateway-blip", "scenario name (stormctl lab scenarios) or YAML file")
	fl.StringVar(&o.playbook, "playbook", "retry-amplification", "playbook to load")
	fl.StringArrayVarP(&o.params, "param", "p", nil, "playbook parameter NAME=VALUE (default: the scenario's edge service and its first dependency)")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed of the lab")
	fl.DurationVar(&o.refresh, "refresh", 5*time.Second, "mean interval between panel refreshes")
	return cmd
}

// demoLabLength keeps the lab running well past the scenario, so the
// demo's panels stay live while the responder works.
const demoLabLength = 2 * time.Hour

func runDemo(ctx context.Context, f *Factory, o *demoOptions) error {
	if err := textOnly(f, "demo", "it draws the dashboard and prints the timeline; stormctl lab run -o json gives the storm's summary"); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !f.IO.IsStdinTTY() || !f.IO.IsStdoutTTY() {
		fmt.Fprintln(f.IO.ErrOut, "demo: not a terminal, so no dashboard: running the scenario headless")
		return runLab(ctx, f, &labRunOptions{scenario: o.scenario, speed: "max", seed: o.seed})
	}
	sc, err := sim.Find(o.scenario)
	if err != nil {
		return exit.NewUsage(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The Prometheus API is served first, so that the config (read once)
	// points at it; the lab behind it needs the control plane, which needs
	// the config.
	var labAPI atomic.Value
	labAPI.Store(http.Handler(http.NotFoundHandler()))
	srv, err := promapi.Serve("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		labAPI.Load().(http.Handler).ServeHTTP(w, r)
	}))
	if err != nil {
		return err
	}
	defer srv.Close()
	f.flags.PrometheusURL = srv.URL
	if f.flags.RedisURL == "" {
		er, err := lab.StartEmbeddedRedis("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer er.Close()
		f.flags.RedisURL = er.URL
	}
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if cfg.Actor == "" {
		cfg.Actor = "demo"
	}
	// Log lines (the lab's flags provider logs through slog) would tear
	// the full-screen dashboard; what they say shows in its panels.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	// The simulated services read their levers from the control plane
	// through a flags provider, as real services do.
	l, err := lab.New(lab.Options{Scenario: sc, Seed: o.seed, Speed: 1, Until: demoLabLength,
		Redis: store.Client(), Namespace: cfg.Redis.Namespace})
	if err != nil {
		return err
	}
	defer l.Close()
	labAPI.Store(l.Handler())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()

	svc, err := f.Actions(ctx)
	if err != nil {
		return err
	}
	inc, err := svc.OpenIncident(ctx, "demo: "+sc.Name+": "+sc.Title, cfg.Actor)
	if err != nil {
		return err
	}
	params := o.params
	if len(params) == 0 {
		params = demoParams(sc)
	}
	// Reports go to the user's state directory, not the working directory
	// (often a checkout, where they would be committed by mistake).
	reportDir := demoReportDir(f.getenv)
	if err := os.MkdirAll(reportDir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	attach := fmt.Sprintf("STORMCTL_PROMETHEUS_URL=%s STORMCTL_REDIS_URL=%s stormctl status", srv.URL, f.flags.RedisURL)
	fmt.Fprintf(f.IO.ErrOut, "demo: scenario %s in real time; incident %s; attach a second terminal with:\n  %s\n", sc.Name, inc.ID, attach)
	dashErr := runDash(ctx, f, &dashOptions{playbook: o.playbook, params: params, incident: inc.ID, refresh: o.refresh},
		&dashExtra{status: "demo: " + sc.Name + " is live; second terminal: " + attach, clock: l.Clock, reportDir: reportDir})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) && dashErr == nil {
		dashErr = err
	}
	// The embedded control plane ends with the demo: hand over the
	// incident's report and timeline before it does, and say nothing that
	// would need it afterwards.
	rw := f.reportWriter(reportDir)
	if path, warnings, err := rw.WriteReport(context.Background(), inc.ID); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "demo: the HTML report was not written: %v\n", err)
	} else {
		for _, w := range warnings {
			fmt.Fprintln(f.IO.ErrOut, "demo: report warning: "+w)
		}
		fmt.Fprintf(f.IO.ErrOut, "demo: the incident's HTML report: %s\n", path)
	}
	fmt.Fprintf(f.IO.ErrOut, "demo: stopped, and its control plane with it; incident %s's timeline:\n", inc.ID)
	stream := store.Journal()
	if _, err := journal.Export(f.IO.Out, journal.Markdown, stream.Range(context.Background(), "-", "+"), journal.Filter{Incident: inc.ID}); err != nil && dashErr == nil {
		dashErr = err
	}
	return dashErr
}

// demoReportDir is where the demo's HTML reports go:
// $XDG_STATE_HOME/stormctl/reports (else ~/.local/state/stormctl/reports).
func demoReportDir(getenv func(string) string) string {
	return filepath.Join(journal.StateDir(getenv), "reports")
}

// demoParams are the playbook parameters of a scenario: its edge service
// and the first dependency that service calls.
func demoParams(sc *sim.Scenario) []string {
	params := []string{"service=" + sc.Edge.Service}
	for _, s := range sc.Services {
		if s.Name != sc.Edge.Service {
			continue
		}
		for _, e := range s.Endpoints {
			for _, c := range e.Calls {
				return append(params, "dependency="+c.Target)
			}
		}
	}
	return params
}
