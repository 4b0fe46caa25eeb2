package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// writeHTMLReport builds the report, draws its charts from Prometheus
// unless --no-charts, and writes it. Charts that could not be drawn are
// warnings, one line each and safe to print.
func writeHTMLReport(ctx context.Context, f *Factory, o *journalExportOptions, w io.Writer,
	recs iter.Seq2[journal.Record, error], head string, flt journal.Filter) (int, []string, error) {
	rep, err := journal.BuildReport(recs, head, flt)
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
			warnings[i] = oneLine(journal.Printable(w))
		}
	}
	rep.Proof.Commands = o.verifyCommands(flt)
	return len(rep.Entries), warnings, journal.WriteHTML(w, rep, time.Now())
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

// chartPlan is one saved query the report asks for.
type chartPlan struct {
	id     string
	scoped bool // by service and dependency; else by service only
	hidden bool // not drawn: asked only to date its first breach
}

// reportCharts are the saved queries the HTML report draws, in order.
var reportCharts = []chartPlan{
	{"amplification", true, false},
	{"retry_ratio", true, false},
	{"edge_error_rate", false, false},
	{"pool_saturation", false, false},
	{"dependency_p99", true, false},
}

// maxBreachOnly bounds the other saved queries asked for their first breach.
const maxBreachOnly = 10

// chartPlans are the drawn charts, then every other saved query of the
// catalogue (at most maxBreachOnly), whose first breach the key times list.
func chartPlans(cat *queries.Catalog) []chartPlan {
	plans := slices.Clone(reportCharts)
	for _, q := range cat.Queries() {
		if len(plans) == len(reportCharts)+maxBreachOnly {
			break
		}
		if !slices.ContainsFunc(reportCharts, func(p chartPlan) bool { return p.id == q.ID }) {
			plans = append(plans, chartPlan{id: q.ID, scoped: slices.Contains(q.Params, queries.ParamDependency), hidden: true})
		}
	}
	return plans
}

// maxReportScopes bounds the range queries one report sends per chart, so
// an incident that touched many targets cannot flood a struggling Prometheus.
const maxReportScopes = 8

// chartScope is one (service, dependency) selection a chart queries.
type chartScope struct{ service, dependency string }

// reportScopes are the services and dependencies the record's actions
// targeted, in order of first appearance: edges and dependencies for the
// by-dependency charts, services for the others.
func reportScopes(entries []journal.Entry) (edges, services []chartScope) {
	for _, e := range entries {
		if e.Kind == "" || e.Target == "" {
			continue
		}
		sc := lever.ScopeOf(lever.Kind(e.Kind), e.Target)
		edge := chartScope{sc.Service, sc.Dependency}
		if !slices.Contains(edges, edge) {
			edges = append(edges, edge)
		}
		if svc := (chartScope{service: sc.Service}); sc.Service != "" && !slices.Contains(services, svc) {
			services = append(services, svc)
		}
	}
	if len(services) == 0 {
		services = []chartScope{{}} // every service
	}
	if len(edges) == 0 {
		edges = []chartScope{{}}
	}
	return edges, services
}

// chartJob is one range query behind a chart.
type chartJob struct {
	chart int
	r     *queries.Rendered
	req   queries.Request
}

// fetchCharts asks Prometheus for every chart over the report's window.
// It never fails: a chart that cannot be drawn says why in its place, and
// the warnings (for stderr) say what was not done. A server that does not
// answer the first query is not sent the others.
func fetchCharts(ctx context.Context, f *Factory, rep *journal.Report) ([]journal.Chart, []string) {
	from, to := rep.ChartWindow()
	rng := &queries.Range{Start: from, End: to, Step: journal.ChartStep(from, to)}
	var warnings []string
	cat, err := f.Catalog()
	if err != nil {
		charts := make([]journal.Chart, len(reportCharts))
		for i, rc := range reportCharts {
			charts[i].ID = rc.id
		}
		return allNoData(charts, "the query catalogue did not load: "+err.Error()), []string{"charts not drawn: " + err.Error()}
	}
	plans := chartPlans(cat)
	charts := make([]journal.Chart, len(plans))
	edges, services := reportScopes(rep.Entries)
	var jobs []chartJob
	for i, rc := range plans {
		charts[i].ID, charts[i].Hidden = rc.id, rc.hidden
		q, err := cat.Query(rc.id)
		if err != nil {
			charts[i].NoData = err.Error()
			continue
		}
		charts[i].Title, charts[i].Unit = q.Title, q.Unit
		setThresholds(&charts[i], q.Threshold)
		scopes := services
		if rc.scoped {
			scopes = edges
		}
		if len(scopes) > maxReportScopes && !rc.hidden {
			warnings = append(warnings, fmt.Sprintf("%s: charting the first %d of %d targets", rc.id, maxReportScopes, len(scopes)))
			scopes = scopes[:maxReportScopes]
		}
		for _, s := range scopes {
			pack, labels, err := f.packFor("", s.service)
			var r *queries.Rendered
			if err == nil {
				r, err = cat.Render(rc.id, pack, queries.Params{Service: s.service, Dependency: s.dependency, Labels: labels})
			}
			if err != nil {
				charts[i].NoData = err.Error()
				break
			}
			jobs = append(jobs, chartJob{chart: i, r: r, req: queries.Request{Key: "report|" + rc.id + "|" + pack + "|" + s.service + "->" + s.dependency,
				Expr: r.Expr, Range: rng, Metrics: r.Metrics}})
		}
	}
	if len(jobs) == 0 {
		return charts, warnings
	}
	runner, err := f.Runner()
	if err != nil {
		return allNoData(charts, err.Error()), append(warnings, "charts not drawn: "+err.Error())
	}
	results := []queries.Result{runner.Run(ctx, jobs[0].req)}
	if unreachable(results[0].Err) {
		msg := fmt.Sprintf("Prometheus did not answer (%v); no chart was drawn", results[0].Err)
		return allNoData(charts, msg), append(warnings, "charts not drawn: "+results[0].Err.Error())
	}
	rest := make([]queries.Request, len(jobs)-1)
	for i, j := range jobs[1:] {
		rest[i] = j.req
	}
	results = append(results, runner.RunAll(ctx, rest)...)
	window := fmt.Sprintf("%s to %s", from.UTC().Format(time.DateTime), to.UTC().Format(time.DateTime))
	why := make([]string, len(charts)) // the first explanation of no data
	omitted := make([]map[string]bool, len(charts))
	for i := range omitted {
		omitted[i] = map[string]bool{}
	}
	for i, res := range results {
		c := &charts[jobs[i].chart]
		switch {
		case c.NoData != "":
		case res.Err != nil:
			c.NoData = res.Err.Error()
			warnings = append(warnings, fmt.Sprintf("%s: %v", c.ID, res.Err))
		case res.NoData != nil && why[jobs[i].chart] == "":
			why[jobs[i].chart] = res.NoData.Message
		default:
			for _, s := range res.Series {
				addSeries(c, s, omitted[jobs[i].chart])
			}
		}
		for _, w := range res.Warnings {
			warnings = append(warnings, fmt.Sprintf("%s: prometheus warning: %s", c.ID, w))
		}
	}
	for i := range charts {
		c := &charts[i]
		if c.NoData == "" && len(c.Series) == 0 {
			c.NoData = "no data from " + window + " UTC for the targeted services"
			if why[i] != "" {
				c.NoData += " (" + why[i] + ")"
			}
			c.NoData += ": the data may have aged out of Prometheus's retention, or the services export other metrics (set their pack in the context)"
			if !c.Hidden {
				warnings = append(warnings, c.ID+": no data in the incident window")
			}
		}
	}
	return charts, warnings
}

// unreachable reports whether err means no response at all came back.
func unreachable(err error) bool {
	var se *queries.ServerError
	return errors.As(err, &se) && se.Status == 0
}

func allNoData(charts []journal.Chart, why string) []journal.Chart {
	for i := range charts {
		if charts[i].Title == "" {
			charts[i].Title = charts[i].ID
		}
		charts[i].NoData = why
	}
	return charts
}

func setThresholds(c *journal.Chart, t queries.Threshold) {
	if t.Warn != nil {
		c.Lines = append(c.Lines, journal.ChartLine{Label: "warn", Value: *t.Warn})
	}
	if t.Crit != nil {
		c.Lines = append(c.Lines, journal.ChartLine{Label: "crit", Value: *t.Crit})
		c.Alarm = t.Crit
	} else {
		c.Alarm = t.Warn
	}
	c.Below = t.Direction == queries.Below
}

// maxChartSeries bounds the lines of one chart, so a dependency with many
// callers stays readable (and the file small).
const maxChartSeries = 12

// addSeries adds s unless an earlier scope already returned the same
// series (a dependency's chart includes the edge's own series), or the
// chart is full, which its note says.
func addSeries(c *journal.Chart, s queries.Series, omitted map[string]bool) {
	name := seriesName(s.Labels)
	if omitted[name] || slices.ContainsFunc(c.Series, func(have journal.ChartSeries) bool { return have.Name == name }) {
		return
	}
	if len(c.Series) == maxChartSeries {
		omitted[name] = true
		c.Note = fmt.Sprintf("%d more series not drawn (at most %d per chart): name a service to see them", len(omitted), maxChartSeries)
		return
	}
	pts := make([]journal.ChartPoint, len(s.Points))
	for i, p := range s.Points {
		pts[i] = journal.ChartPoint{T: p.T, V: p.V}
		if math.IsInf(p.V, 0) {
			pts[i].V = math.NaN()
		}
	}
	c.Series = append(c.Series, journal.ChartSeries{Name: name, Points: pts})
}

// verifyCommands are the shell commands that re-check the report's proof.
// Relative --since/--until are written as the times they resolved to, so
// the commands select the same range tomorrow.
func (o *journalExportOptions) verifyCommands(flt journal.Filter) []string {
	src := ""
	if o.src.file != "" {
		src = " --file " + shellQuote(o.src.file)
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
		"stormctl journal verify" + src,
		"stormctl journal export --format jsonl" + src + filter + " | sha256sum",
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
