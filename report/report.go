// Package report builds an incident's post-incident report: it reads the
// journal (journal.BuildReportWith), decides which saved queries the report
// draws and over which services and dependencies (those the record's
// actions targeted), fills the charts from Prometheus, writes the commands
// that re-check its proof, and writes it as one HTML file. The CLI's
// `journal export --format html`, the dashboard's report key and the
// demo's exit all write their report here.
package report

import (
	"context"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
)

// PackFor names the pack that answers for a service, and the label names
// that pack uses there.
type PackFor func(service string) (pack string, labels map[string]string, err error)

// Runner asks Prometheus; *queries.Runner is one.
type Runner interface {
	Run(ctx context.Context, req queries.Request) queries.Result
	RunAll(ctx context.Context, reqs []queries.Request) []queries.Result
}

// Sources are where the charts come from. Each is called only when charts
// are drawn, so a report without them never loads the catalogue or dials
// Prometheus.
type Sources struct {
	Catalog func() (*queries.Catalog, error)
	Runner  func() (Runner, error)
	PackFor PackFor
}

// Options are what one report reads, proves and says about itself.
type Options struct {
	// Report is what the proof checks against and signs the closing
	// checkpoint with; its Filter selects the entries shown.
	Report journal.ReportOptions
	// NoCharts writes the report without asking Prometheus.
	NoCharts bool
	// File is the saved journal read ("" for the control plane's),
	// AllowedSigners the allowed_signers file of Report.AllowedSigners and
	// Out the report's own path ("" for stdout): the re-verify commands
	// name them.
	File, AllowedSigners, Out string
}

// Write builds the report of recs, draws its charts from src unless
// o.NoCharts, and writes it to w. It returns how many entries it shows
// and the charts that could not be drawn, one warning each, safe to print.
func Write(ctx context.Context, w io.Writer, recs iter.Seq2[journal.Record, error], o Options, src Sources) (int, []string, error) {
	rep, err := journal.BuildReportWith(recs, o.Report)
	if err != nil {
		return 0, nil, fmt.Errorf("journal export: %w", err)
	}
	if len(rep.Entries) == 0 {
		return 0, nil, fmt.Errorf("journal export: no entries match (incident %q): nothing to report", o.Report.Filter.Incident)
	}
	var warnings []string
	if o.NoCharts {
		rep.ChartsNote = "Charts were not drawn (--no-charts)."
	} else {
		rep.Charts, warnings = fetchCharts(ctx, src, rep)
		for i, w := range warnings {
			warnings[i] = sanitize.Line(w)
		}
	}
	rep.Proof.Commands = o.verifyCommands(rep.Proof.Checkpoint != nil)
	return len(rep.Entries), warnings, journal.WriteHTML(w, rep, rep.Generated)
}

// verifyCommands are the shell commands that re-check the report's proof.
// Relative --since/--until are written as the times they resolved to, so
// the commands select the same range tomorrow.
// With a checkpoint, verify matches it from the report file itself.
func (o Options) verifyCommands(checkpoint bool) []string {
	src := ""
	if o.File != "" {
		src = " --file " + shellQuote(o.File)
	}
	verify := "stormctl journal verify" + src
	if o.AllowedSigners != "" {
		verify += " --allowed-signers " + shellQuote(o.AllowedSigners)
	}
	if o.Report.RequireSignatures {
		verify += " --require-signatures"
	}
	if checkpoint {
		report := "REPORT.html"
		if o.Out != "" {
			report = shellQuote(o.Out)
		}
		verify += " --checkpoint " + report
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	flt := o.Report.Filter
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
