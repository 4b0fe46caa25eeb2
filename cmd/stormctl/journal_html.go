package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

// writeHTMLReport builds the report, draws its charts from Prometheus
// unless --no-charts, and writes it. Charts that could not be drawn are
// warnings, one line each and safe to print.
func writeHTMLReport(ctx context.Context, f *Factory, o *journalExportOptions, w io.Writer,
	recs iter.Seq2[journal.Record, error], head string, flt journal.Filter) (int, []string, error) {
	ro, err := o.reportOptions(f, head, flt)
	if err != nil {
		return 0, nil, err
	}
	rep, err := journal.BuildReportWith(recs, ro)
	if err != nil {
		return 0, nil, fmt.Errorf("journal export: %w", err)
	}
	if len(rep.Entries) == 0 {
		return 0, nil, fmt.Errorf("journal export: no entries match (incident %q): nothing to report", flt.Incident)
	}
	var warnings []string
	if o.noCharts {
		rep.ChartsNote = "Charts were not drawn (--no-charts)."
	} else {
		rep.Charts, warnings = fetchCharts(ctx, f, rep)
		for i, w := range warnings {
			warnings[i] = sanitize.Line(w)
		}
	}
	rep.Proof.Commands = o.verifyCommands(flt, rep.Proof.Checkpoint != nil)
	return len(rep.Entries), warnings, journal.WriteHTML(w, rep, time.Now())
}

// reportOptions are what the report's proof checks against (the allowed
// signers of --allowed-signers or the context) and signs its closing
// checkpoint with (the journal signing key, as the current actor).
func (o *journalExportOptions) reportOptions(f *Factory, head string, flt journal.Filter) (journal.ReportOptions, error) {
	ro := journal.ReportOptions{Filter: flt, Head: head}
	cfg, err := f.Config()
	if err != nil {
		return ro, err
	}
	if o.allowedSigners == "" {
		o.allowedSigners = cfg.Journal.AllowedSigners
	}
	if o.requireSigs && o.allowedSigners == "" {
		return ro, exit.NewUsage(errRequireNeedsAllowed)
	}
	if ro.AllowedSigners, err = loadAllowedSigners(o.allowedSigners); err != nil {
		return ro, err
	}
	ro.RequireSignatures = o.requireSigs
	if ro.Signer, err = f.Signer(); err != nil {
		return ro, err
	}
	ro.Actor = cfg.Actor
	return ro, nil
}

// reportWriter writes an incident's HTML report from the control plane's
// journal into dir, for the dashboard's report key and the demo's exit.
type reportWriter struct {
	f   *Factory
	dir string
}

// ReportPath is where the report of incident is written.
func (r reportWriter) ReportPath(incident string) string {
	name := "stormctl-report.html"
	if incident != "" {
		name = "stormctl-report-" + incident + ".html"
	}
	path := filepath.Join(r.dir, name)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}

// WriteReport implements tui.Reporter.
func (r reportWriter) WriteReport(ctx context.Context, incident string) (string, []string, error) {
	o := &journalExportOptions{incident: incident, out: r.ReportPath(incident)}
	recs, head, done, err := o.src.records(ctx, r.f)
	if err != nil {
		return "", nil, err
	}
	defer done()
	var warnings []string
	err = writeOut(o.out, nil, func(w io.Writer) error {
		_, warnings, err = writeHTMLReport(ctx, r.f, o, w, recs, head, journal.Filter{Incident: incident})
		return err
	})
	return o.out, warnings, err
}

// verifyCommands are the shell commands that re-check the report's proof.
// Relative --since/--until are written as the times they resolved to, so
// the commands select the same range tomorrow.
// With a checkpoint, verify matches it from the report file itself.
func (o *journalExportOptions) verifyCommands(flt journal.Filter, checkpoint bool) []string {
	src := ""
	if o.src.file != "" {
		src = " --file " + shellQuote(o.src.file)
	}
	verify := "stormctl journal verify" + src
	if o.allowedSigners != "" {
		verify += " --allowed-signers " + shellQuote(o.allowedSigners)
	}
	if o.requireSigs {
		verify += " --require-signatures"
	}
	if checkpoint {
		report := "REPORT.html"
		if o.out != "" {
			report = shellQuote(o.out)
		}
		verify += " --checkpoint " + report
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	filter := ""
	for _, kv := range [][2]string{{"--incident", flt.Incident}, {"--actor", flt.Actor}, {"--since", at(flt.Since)}, {"--until", at(flt.Until)}} {
		if kv[1] != "" {
			filter += " " + kv[0] + " " + shellQuote(kv[1])
		}
	}
	return []string{
		verify,
		"stormctl journal export --format jsonl" + src + filter + ` | grep -v '^{"checkpoint":' | sha256sum`,
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
