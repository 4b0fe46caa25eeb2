package queries

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Sides of a pack's metrics, as the doctor looks at them.
const (
	// SideClient metrics are the caller's: they carry the dependency.
	SideClient = "client"
	// SideServer metrics are the service's own, about the requests it
	// received: they carry the service and no dependency or pool.
	SideServer = "server"
	// SidePool metrics are a pool's: they carry the pool.
	SidePool = "pool"
)

// doctorSides is the order in which the doctor looks for a service.
var doctorSides = []string{SideClient, SideServer, SidePool}

// probe values: distinct, so a selector's matchers say which param each
// label carries whatever the pack's naming convention.
const (
	probeService    = "svc-probe"
	probeDependency = "dep-probe"
	probePool       = "pool-probe"
)

// packLayout is which of a pack's metrics sit on which side, read from its
// rendered templates, and which side each of its queries needs.
type packLayout struct {
	metrics  map[string][]string // side → metric names, catalogue order
	service  map[string]string   // side → the label its templates match the service on
	key      map[string]string   // side → the label that side must carry (dependency, pool)
	override map[string]string   // side → the Params.Labels key that renames service there
	needs    map[string]string   // query id → the side it needs: client or pool when it reads one, else server
	order    []string            // query ids, catalogue order
	// statics are the matchers every selector of a metric on a side has
	// besides the params (span_kind="SPAN_KIND_CLIENT", reporter="destination"),
	// so the doctor looks for the service on that side's series only.
	statics map[string][]string // side + "|" + metric → matchers
}

// layout renders every query pk answers with distinct probe values and
// sorts each selector's metrics by the params it matches: the dependency
// makes a selector client-side, then the pool, then the service alone.
func (c *Catalog) layout(pk *Pack) packLayout {
	l := packLayout{metrics: map[string][]string{}, service: map[string]string{}, key: map[string]string{},
		override: map[string]string{}, needs: map[string]string{}, statics: map[string][]string{}}
	p := Params{Service: probeService, Dependency: probeDependency, Pool: probePool}
	seen := map[string]int{} // selectors per side and metric
	for _, q := range c.queries {
		pq := q.packQuery(pk)
		if pq == nil || !slices.Contains(q.answers, pk.Name) {
			continue
		}
		expr, err := pq.render(q, pk, p)
		if err != nil {
			continue // check rendered it when the catalogue loaded
		}
		ast, err := promql.ParseExpr(expr)
		if err != nil {
			continue
		}
		need := SideServer
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			side, svc, key, statics := selectorSide(vs)
			if side == "" {
				return nil
			}
			if side != SideServer && need == SideServer {
				need = side
			}
			for _, m := range selectorMetrics(vs, pq.Metrics) {
				k := side + "|" + m
				seen[k]++
				if !slices.Contains(l.metrics[side], m) {
					l.metrics[side] = append(l.metrics[side], m)
					l.statics[k] = slices.Clone(statics)
					continue
				}
				l.statics[k] = slices.DeleteFunc(l.statics[k], func(s string) bool { return !slices.Contains(statics, s) })
			}
			if svc != "" && l.service[side] == "" {
				l.service[side] = svc
				l.override[side] = ParamService
				if def := firstSet(pk.Labels[ParamService], ParamService); svc != def {
					l.override[side] = svc // an explicit label: "service:destination_workload"
				}
			}
			if key != "" {
				l.key[side] = key
			}
			return nil
		})
		l.needs[q.ID] = need
		l.order = append(l.order, q.ID)
	}
	// A matcher that only one selector has is that query's filter (a 429,
	// a 5xx), not what sets the side apart: the series without it still
	// carry the service.
	for k, n := range seen {
		if n < 2 {
			delete(l.statics, k)
		}
	}
	return l
}

// selectorSide says which side a selector is on, the label it matches the
// service on, the label that makes it that side, and its other matchers.
func selectorSide(vs *parser.VectorSelector) (side, service, key string, statics []string) {
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel {
			continue
		}
		if m.Type != labels.MatchEqual && m.Type != labels.MatchRegexp ||
			!m.Matches(probeDependency) && !m.Matches(probePool) && !m.Matches(probeService) {
			statics = append(statics, m.String())
			continue
		}
		switch {
		case m.Matches(probeDependency):
			side, key = SideClient, m.Name
		case m.Matches(probePool) && side != SideClient:
			side, key = SidePool, m.Name
		case m.Matches(probeService):
			service = m.Name
		}
	}
	if side == "" && service != "" {
		side = SideServer
	}
	return side, service, key, statics
}

// selector is the series selector of a metric (its name as stored) on side.
func (l packLayout) selector(side, metric, stored string) string {
	return "{" + strings.Join(append([]string{model.MetricNameLabel + "=" + strconv.Quote(stored)}, l.statics[side+"|"+metric]...), ",") + "}"
}

// selectorMetrics are the metric names a selector reads: its name, or the
// listed names its pattern matches.
func selectorMetrics(vs *parser.VectorSelector, listed []string) []string {
	for _, m := range vs.LabelMatchers {
		if m.Name != model.MetricNameLabel {
			continue
		}
		if m.Type == labels.MatchEqual {
			return []string{m.Value}
		}
		var out []string
		for _, name := range listed {
			if m.Matches(name) {
				out = append(out, name)
			}
		}
		return out
	}
	return nil
}

// split lists the queries that need side, in catalogue order.
func (l packLayout) split(side string) []string {
	var out []string
	for _, id := range l.order {
		if l.needs[id] == side {
			out = append(out, id)
		}
	}
	return out
}

// notes say what a reader of the diagnosis must not miss: a service seen
// only server-side, and packs the budget did not reach.
func notes(dg *Diagnosis, budget int) []string {
	var out []string
	for _, f := range dg.Packs {
		if !f.Fits() || f.Side != SideServer {
			continue
		}
		n := fmt.Sprintf("pack %s sees %s only server-side (%s=%s): its own metrics answer %s", f.Pack, dg.Service, f.ServiceLabel, f.ServiceValue, strings.Join(f.ServerQueries, ", "))
		if len(f.CallerQueries) > 0 {
			n += fmt.Sprintf("; %s need the caller's side, shown as its callers see it where they export %s's client metrics (query run --dependency %s)", strings.Join(f.CallerQueries, ", "), f.Pack, dg.Service)
		}
		out = append(out, n)
	}
	if len(dg.Unexamined) > 0 {
		verb := "was"
		if len(dg.Unexamined) > 1 {
			verb = "were"
		}
		out = append(out, fmt.Sprintf("the budget of %d probing requests ran out before %s %s examined: run again with --max-requests %d",
			budget, strings.Join(dg.Unexamined, ", "), verb, min(100, budget+6*len(dg.Unexamined))))
	}
	return out
}
