package signals

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
)

// State is what a panel shows beside its value.
type State string

// Panel states beyond the threshold's ok, warn and crit.
const (
	StateOK           = State(queries.OK)
	StateWarn         = State(queries.Warn)
	StateCrit         = State(queries.Crit)
	StateNoData State = "no data"
	StateNaN    State = "no traffic" // 0/0: nothing to divide
	StateError  State = "error"
)

// Panel is one signal: a query for one series.
type Panel struct {
	Query     string
	Title     string
	Unit      string
	Threshold queries.Threshold
	// Series names the series, e.g. "checkout→payment-gateway".
	Series  string
	Service string
	Labels  map[string]string
	Value   float64 // NaN when there is none
	State   State
	Trend   int // -1 falling, 0 flat, +1 rising
	Points  []queries.Point
	// Stale marks data the runner served without asking Prometheus (after
	// an error, or while it backs off): shown as stale, never as fresh.
	Stale bool
	// Note is the no-data explanation or the error.
	Note string
	// Held says the warn or crit state has lasted the threshold's for:,
	// so an alert on the same rule has fired.
	Held bool
}

// Key identifies a panel across refreshes.
func (p *Panel) Key() string { return p.Query + "|" + p.Series }

// Build turns one refresh into panels, in focus order then by series.
// results[i] answers the i-th target that rendered.
func Build(targets []Target, results []queries.Result) []Panel {
	var out []Panel
	i := 0
	for _, t := range targets {
		base := Panel{Query: t.Query.ID, Title: t.Query.Title, Unit: t.Query.Unit, Threshold: t.Query.Threshold, Value: math.NaN()}
		if t.Rendered == nil {
			base.State, base.Note, base.Series = StateError, t.Err.Error(), "-"
			out = append(out, base)
			continue
		}
		if i >= len(results) {
			break
		}
		res := results[i]
		i++
		base.Threshold = t.Rendered.Threshold
		base.Service = t.Service
		if t.Fleet != nil {
			res.Series = queries.SplitFleet(t.Fleet, res.Series).Worst
		}
		out = append(out, fromResult(base, res)...)
	}
	return out
}

func fromResult(base Panel, res queries.Result) []Panel {
	base.Stale = res.Stale
	switch {
	case len(res.Series) == 0 && res.Err != nil:
		base.State, base.Note, base.Series = StateError, res.Err.Error(), "-"
		return []Panel{base}
	case len(res.Series) == 0:
		base.State, base.Series = StateNoData, "-"
		if res.NoData != nil {
			base.Note = res.NoData.Message
		}
		base.Note = withDoctorHint(base.Note, base.Service)
		return []Panel{base}
	}
	if res.Err != nil {
		base.Note = res.Err.Error()
	}
	out := make([]Panel, 0, len(res.Series))
	for _, s := range res.Series {
		p := base
		p.Labels, p.Series = s.Labels, seriesName(s.Labels)
		if v, ok := s.Labels[queries.ParamService]; ok {
			p.Service = v // else the service it was rendered for: packs name the label otherwise
		}
		p.Points, p.Value = s.Points, s.Value
		p.State, p.Trend = evaluate(p.Threshold, p.Value), trend(s.Points)
		p.Held = heldFor(p.Threshold, p.State, s.Points)
		out = append(out, p)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Series < out[b].Series })
	return out
}

func evaluate(t queries.Threshold, v float64) State {
	if l := t.Level(v); l != queries.LevelNaN {
		return State(l.String())
	}
	return StateNaN
}

// trendBack is how many steps back the trend compares: a minute, about
// one rate window, so one noisy sample does not flip the arrow.
const trendBack = int(time.Minute / Step)

// trend compares the last value with the one a minute before; a change
// under 5% is flat.
func trend(pts []queries.Point) int {
	if len(pts) <= trendBack {
		return 0
	}
	return change(pts[len(pts)-1].V, pts[len(pts)-1-trendBack].V)
}

// change is +1, 0 or -1: now against then, flat under 5%.
func change(now, then float64) int {
	if math.IsNaN(now) || math.IsNaN(then) || math.IsInf(now, 0) || math.IsInf(then, 0) {
		return 0
	}
	ref := math.Max(math.Abs(then), 1e-9)
	switch d := (now - then) / ref; {
	case d > 0.05:
		return 1
	case d < -0.05:
		return -1
	}
	return 0
}

// seriesName is "service→dependency pool" from the labels that matter,
// or every label when none of those is set.
func seriesName(labels map[string]string) string {
	var parts []string
	svc, dep := labels[queries.ParamService], labels[queries.ParamDependency]
	switch {
	case svc != "" && dep != "":
		parts = append(parts, svc+"→"+dep)
	case svc != "":
		parts = append(parts, svc)
	case dep != "":
		parts = append(parts, "→"+dep)
	}
	if pool := labels[queries.ParamPool]; pool != "" {
		parts = append(parts, pool)
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, k+"="+labels[k])
		}
	}
	if len(parts) == 0 {
		return "all"
	}
	return sanitize.Mask(strings.Join(parts, " "), '\uFFFD')
}

// FormatValue writes v in its unit, short enough for a panel.
func FormatValue(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	switch unit {
	case "seconds":
		if math.Abs(v) < 1 {
			return strconv.FormatFloat(v*1000, 'f', 0, 64) + "ms"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + "s"
	case "percent":
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case "per_second":
		return strconv.FormatFloat(v, 'g', 3, 64) + "/s"
	case "count":
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
