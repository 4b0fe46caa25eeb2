package main

import (
	"context"
	"iter"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	reports "github.com/stormctl/stormctl/report"
)

// reportOptions are what a report's proof checks against (allowedSigners,
// else the context's journal.allowed-signers) and signs its closing
// checkpoint with (the journal signing key, as the current actor).
func (f *Factory) reportOptions(allowedSigners string, requireSigs bool) (reports.Options, error) {
	var o reports.Options
	cfg, err := f.Config()
	if err != nil {
		return o, err
	}
	if allowedSigners == "" {
		allowedSigners = cfg.Journal.AllowedSigners
	}
	if requireSigs && allowedSigners == "" {
		return o, exit.NewUsage(errRequireNeedsAllowed)
	}
	o.AllowedSigners = allowedSigners
	if o.Report.AllowedSigners, err = loadAllowedSigners(allowedSigners); err != nil {
		return o, err
	}
	o.Report.RequireSignatures = requireSigs
	if o.Report.Signer, err = f.Signer(); err != nil {
		return o, err
	}
	o.Report.Actor = cfg.Actor
	return o, nil
}

// reportSources are the catalogue, Prometheus and packs a report's charts
// come from, each reached on first use.
func (f *Factory) reportSources() reports.Sources {
	return reports.Sources{
		Catalog: f.Catalog,
		Runner:  func() (reports.Runner, error) { return f.Runner() },
		PackFor: func(service string) (string, map[string]string, error) { return f.packFor("", service) },
	}
}

// reportWriter writes an incident's report from the control plane's
// journal into dir, for the dashboard's report key and the demo's exit.
func (f *Factory) reportWriter(dir string) reports.Writer {
	return reports.Writer{Dir: dir, Sources: f.reportSources(),
		Options: func() (reports.Options, error) { return f.reportOptions("", false) },
		Records: func(ctx context.Context) (iter.Seq2[journal.Record, error], string, func(), error) {
			var src journalSourceOptions
			return src.records(ctx, f)
		}}
}
