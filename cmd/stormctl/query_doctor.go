package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
)

// doctorOptions are the flags of `query doctor`.
type doctorOptions struct {
	service, dependency, at string
	lookback                time.Duration
	maxRequests             int
}

func newQueryDoctorCmd(f *Factory) *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Find which packs and labels answer here, and print the config that makes them work",
		Long: `doctor asks Prometheus, in a handful of requests (one presence query, then the
label names and label values APIs per pack found), which packs' metrics it holds,
which label carries the service and the dependency and in which form (payments,
payments.shop.svc.cluster.local, dns:///payments:50051, outbound|50051||...). It
looks for the service on each pack's client-side metrics (its calls), then its
server-side ones (the requests it received), then its pools'. A service seen only
server-side gets its own error rate, and the queries that need the caller's side
read as its callers see it (the service as their dependency). It prints what it
found, every catalogue answer with that configuration, and a config snippet
(contexts.<ctx>.services and packs) to paste; packs the request budget did not
reach are named, with the --max-requests to reach them. Exit 4 when no pack fits.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runDoctor(cmd, f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.service, "service", "", "service (caller) to look for; empty = any")
	fl.StringVar(&o.dependency, "dependency", "", "dependency (callee) to look for")
	fl.StringVar(&o.at, "time", "", "time to look at: RFC 3339, Unix seconds, or -10m (default now)")
	fl.DurationVar(&o.lookback, "lookback", queries.DefaultDoctorLookback, "how far back the label APIs look")
	fl.IntVar(&o.maxRequests, "max-requests", queries.DefaultDoctorRequests, "probing requests at most")
	return cmd
}

func runDoctor(cmd *cobra.Command, f *Factory, o *doctorOptions) error {
	if o.maxRequests < 1 || o.maxRequests > 100 {
		return exit.NewUsage(fmt.Errorf("--max-requests %d: want 1 to 100", o.maxRequests))
	}
	at, err := evalTime(o.at, time.Now())
	if err != nil {
		return err
	}
	cat, err := f.Catalog()
	if err != nil {
		return err
	}
	runner, err := f.Runner()
	if err != nil {
		return err
	}
	client, err := f.PromClient()
	if err != nil {
		return err
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	doc := &queries.Doctor{Catalog: cat, Client: client, Runner: runner}
	dg, err := doc.Run(cmd.Context(), queries.DoctorOptions{Service: o.service, Dependency: o.dependency,
		Time: at, Lookback: o.lookback, MaxRequests: o.maxRequests, Context: cfg.Name})
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "doctor: %d probing requests to %s\n", dg.Requests, client.Address)
	for _, n := range dg.Notes {
		fmt.Fprintln(f.IO.ErrOut, "doctor: "+sanitize.Line(n))
	}
	if o.service != "" {
		fmt.Fprintln(f.IO.ErrOut, "doctor: "+compareConfig(dg, cfg.Context, o.service))
	}
	if err := f.Print(dg, func(tty bool) error { return printDiagnosis(f, dg, tty) }); err != nil {
		return err
	}
	if dg.Config == "" {
		return &exit.CheckFailedError{Msg: "no pack answers here: see each pack's problem above"}
	}
	return nil
}

func printDiagnosis(f *Factory, dg *queries.Diagnosis, tty bool) error {
	t := output.NewTable(f.IO.Out, tty, "pack", "fits", "service", "dependency", "problem", "side")
	for _, p := range dg.Packs {
		fits, svc, dep := "no", "", ""
		if p.Fits() {
			fits = "yes"
		}
		if p.ServiceLabel != "" {
			svc = p.ServiceLabel + "=" + p.ServiceValue
		}
		if p.DependencyValue != "" {
			dep = fmt.Sprintf("%s=%s (%s)", p.DependencyLabel, p.DependencyValue, p.DependencyForm)
		}
		t.Row(p.Pack, fits, sanitize.Line(svc), sanitize.Line(dep), sanitize.Line(p.Problem), p.Side)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out)
	a := output.NewTable(f.IO.Out, tty, "query", "pack", "series", "value", "status")
	for _, ans := range dg.Answers {
		if ans.From != "" {
			// Evaluated with the service as the dependency: its callers' view.
			ans.Query += " (" + ans.From + ")"
		}
		switch {
		case ans.Error != "":
			a.Row(ans.Query, ans.Pack, "", "", "error: "+sanitize.Line(ans.Error))
		case len(ans.Values) == 0:
			a.Row(ans.Query, ans.Pack, "", "", "no data: "+sanitize.Line(ans.NoData))
		}
		for _, v := range ans.Values {
			val := formatValue(v.Value)
			if ans.Bound != "" {
				val += " (" + ans.Bound + " bound)"
			}
			a.Row(ans.Query, ans.Pack, sanitize.Line(queries.SeriesKey(v.Labels)), val, string(v.Status))
		}
	}
	if err := a.Flush(); err != nil {
		return err
	}
	if dg.Config != "" {
		path, _ := f.configFile()
		fmt.Fprintf(f.IO.Out, "\n# add to the config file (%s):\n%s", sanitize.Line(path), sanitize.Block(dg.Config))
	}
	return nil
}

// compareConfig says whether the context already answers for service the
// way the doctor suggests, so a responder knows whether to paste the snippet.
func compareConfig(dg *queries.Diagnosis, cfg config.Context, service string) string {
	pack := cfg.Services[service].Pack
	if pack == "" {
		pack = queries.DefaultPack
	}
	for _, p := range dg.Packs {
		if p.Pack != pack {
			continue
		}
		if !p.Fits() {
			break
		}
		have := cfg.LabelsFor(pack, service)
		for k, v := range p.Labels {
			if have[k] != v {
				return fmt.Sprintf("the config answers %s with pack %s but not label %s=%s: paste the snippet", service, pack, k, v)
			}
		}
		return fmt.Sprintf("the config already answers %s with pack %s", service, pack)
	}
	if dg.Config == "" {
		return fmt.Sprintf("the config answers %s with pack %s, and no pack fits here", service, pack)
	}
	return fmt.Sprintf("the config answers %s with pack %s, which does not fit here: paste the snippet", service, pack)
}
