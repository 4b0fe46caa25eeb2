package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// chartPlan is one saved query the report asks for.
type chartPlan struct {
	id     string
	scoped bool // by service and dependency; else by service only
	hidden bool // not drawn: asked only to date its first breach
}

// drawn are the saved queries the report draws, in order.
var drawn = []chartPlan{
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
	plans := slices.Clone(drawn)
	for _, q := range cat.Queries() {
		if len(plans) == len(drawn)+maxBreachOnly {
			break
		}
		if !slices.ContainsFunc(drawn, func(p chartPlan) bool { return p.id == q.ID }) {
			plans = append(plans, chartPlan{id: q.ID, scoped: slices.Contains(q.Params, queries.ParamDependency), hidden: true})
		}
	}
	return plans
}

// maxScopes bounds the range queries one report sends per chart, so an
// incident that touched many targets cannot flood a struggling Prometheus.
const maxScopes = 8

// scope is one (service, dependency) selection a chart queries.
type scope struct{ service, dependency string }

// scopes are the services and dependencies the record's actions targeted,
// in order of first appearance: edges and dependencies for the
// by-dependency charts, services for the others.
func scopes(entries []journal.Entry) (edges, services []scope) {
	for _, e := range entries {
		if e.Kind == "" || e.Target == "" {
			continue
		}
		sc := lever.ScopeOf(lever.Kind(e.Kind), e.Target)
		edge := scope{sc.Service, sc.Dependency}
		if !slices.Contains(edges, edge) {
			edges = append(edges, edge)
		}
		if svc := (scope{service: sc.Service}); sc.Service != "" && !slices.Contains(services, svc) {
			services = append(services, svc)
		}
	}
	if len(services) == 0 {
		services = []scope{{}} // every service
	}
	if len(edges) == 0 {
		edges = []scope{{}}
	}
	return edges, services
}

// chartJob is one range query behind a chart.
type chartJob struct {
	chart int
	req   queries.Request
}

// fetchCharts asks Prometheus for every chart over the report's window.
// It never fails: a chart that cannot be drawn says why in its place, and
// the warnings (for stderr) say what was not done. A server that does not
// answer the first query is not sent the others.
func fetchCharts(ctx context.Context, src Sources, rep *journal.Report) ([]journal.Chart, []string) {
	cat, err := src.Catalog()
	if err != nil {
		charts := make([]journal.Chart, len(drawn))
		for i, rc := range drawn {
			charts[i].ID = rc.id
		}
		return allNoData(charts, "the query catalogue did not load: "+err.Error()), []string{"charts not drawn: " + err.Error()}
	}
	from, to := rep.ChartWindow()
	rng := &queries.Range{Start: from, End: to, Step: journal.ChartStep(from, to)}
	charts, jobs, warnings := planCharts(src.PackFor, cat, rep.Entries, rng)
	if len(jobs) == 0 {
		return charts, warnings
	}
	runner, err := src.Runner()
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
	return charts, append(warnings, fillCharts(charts, jobs, results, window)...)
}

// planCharts renders every chart's queries for the targets of entries.
func planCharts(packFor PackFor, cat *queries.Catalog, entries []journal.Entry, rng *queries.Range) ([]journal.Chart, []chartJob, []string) {
	plans := chartPlans(cat)
	charts := make([]journal.Chart, len(plans))
	edges, services := scopes(entries)
	var jobs []chartJob
	var warnings []string
	for i, rc := range plans {
		c := &charts[i]
		c.ID, c.Hidden = rc.id, rc.hidden
		q, err := cat.Query(rc.id)
		if err != nil {
			c.NoData = err.Error()
			continue
		}
		c.Title, c.Unit = q.Title, q.Unit
		setThresholds(c, q.Threshold)
		sel := services
		if rc.scoped {
			sel = edges
		}
		if len(sel) > maxScopes && !rc.hidden {
			warnings = append(warnings, fmt.Sprintf("%s: charting the first %d of %d targets", rc.id, maxScopes, len(sel)))
		}
		for _, s := range sel[:min(len(sel), maxScopes)] {
			pack, labels, err := packFor(s.service)
			var r *queries.Rendered
			if err == nil {
				r, err = cat.Render(rc.id, pack, queries.Params{Service: s.service, Dependency: s.dependency, Labels: labels})
			}
			if err != nil {
				c.NoData = err.Error()
				if !rc.hidden {
					warnings = append(warnings, fmt.Sprintf("%s: %v", rc.id, err))
				}
				break
			}
			jobs = append(jobs, chartJob{chart: i, req: queries.Request{Key: "report|" + rc.id + "|" + pack + "|" + s.service + "->" + s.dependency,
				Expr: r.Expr, Range: rng, Metrics: r.Metrics}})
		}
	}
	return charts, jobs, warnings
}

// fillCharts puts each result's series on its chart, and says in place of
// a chart without any why, naming the missing metrics when it can.
func fillCharts(charts []journal.Chart, jobs []chartJob, results []queries.Result, window string) []string {
	var warnings []string
	why := make([]string, len(charts)) // the first explanation of no data
	omitted := make([]map[string]bool, len(charts))
	for i := range omitted {
		omitted[i] = map[string]bool{}
	}
	for i, res := range results {
		n := jobs[i].chart
		c := &charts[n]
		switch {
		case c.NoData != "":
		case res.Err != nil:
			c.NoData = res.Err.Error()
			warnings = append(warnings, fmt.Sprintf("%s: %v", c.ID, res.Err))
		case res.NoData != nil && why[n] == "":
			why[n] = res.NoData.Message
		default:
			for _, s := range res.Series {
				addSeries(c, s, omitted[n])
			}
		}
		for _, w := range res.Warnings {
			warnings = append(warnings, fmt.Sprintf("%s: prometheus warning: %s", c.ID, w))
		}
	}
	for i := range charts {
		c := &charts[i]
		if c.NoData != "" || len(c.Series) > 0 {
			continue
		}
		c.NoData = "no data from " + window + " UTC for the targeted services"
		if why[i] != "" {
			c.NoData += " (" + why[i] + ")"
		}
		c.NoData += ": the data may have aged out of Prometheus's retention, or the services export other metrics (set their pack in the context)"
		if !c.Hidden {
			warnings = append(warnings, c.ID+": no data in the incident window")
		}
	}
	return warnings
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
	c.Below, c.For = t.Direction == queries.Below, t.For
}

// maxChartSeries bounds the lines of one chart, so a dependency with many
// callers stays readable (and the file small).
const maxChartSeries = 12

// addSeries adds s unless an earlier scope already returned the same
// series (a dependency's chart includes the edge's own series), or the
// chart is full, which its note says.
func addSeries(c *journal.Chart, s queries.Series, omitted map[string]bool) {
	name := s.Key()
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
