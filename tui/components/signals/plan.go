// Package signals is the dashboard's signal panels: one per saved query in
// focus and per series it returns (service, dependency, pool), with the
// current value against its threshold, a trend and a 15-minute sparkline
// from one query_range per query.
package signals

import (
	"errors"
	"time"

	"github.com/stormctl/stormctl/queries"
)

// Span and Step are the sparkline's range and resolution.
const (
	Span = 15 * time.Minute
	Step = 15 * time.Second
)

// Plan says which queries are in focus and how to ask for them.
type Plan struct {
	Catalog *queries.Catalog
	// Queries are the query ids in focus; empty means every query of the
	// catalogue.
	Queries []string
	// Service narrows every query to one service; "" asks for all of them.
	Service string
	// Services are the services configured with their own pack; each gets
	// its own request when Service is "" and its pack is not the default.
	Services []string
	// PackFor picks a service's pack and label overrides.
	PackFor func(service string) (pack string, labels map[string]string, err error)
	// Top > 0 with no Service is the fleet view: each query is reduced on
	// the server to its Top worst series and the fleet's counts, one
	// request per query and pack (see FleetTargets).
	Top int
	// Recorded ranks the fleet from the catalogue's recording rules
	// (queries.Catalog.RenderRecordedFleet) instead of the raw metrics.
	Recorded bool
}

// Target is one request the panels are refreshed from: a rendered query,
// or why it could not be rendered.
type Target struct {
	Query    *queries.Query
	Rendered *queries.Rendered
	Key      string
	Err      error
	Service  string // the service it was rendered for; "" for every service
	// Fleet is set in the fleet view: the request is its expression.
	Fleet *queries.Fleet
}

// Targets renders every query in focus once. A pack that cannot answer a
// query is left out: the dashboard shows what can be known.
func (p Plan) Targets() []Target {
	if p.Fleet() {
		return p.fleetTargets()
	}
	ids := p.ids()
	services := []string{p.Service}
	if p.Service == "" {
		services = append(services, p.Services...)
	}
	var out []Target
	for _, id := range ids {
		q, err := p.Catalog.Query(id)
		if err != nil {
			out = append(out, Target{Query: &queries.Query{ID: id, Title: id}, Key: id, Err: err})
			continue
		}
		for i, svc := range services {
			pack, labels := queries.DefaultPack, map[string]string(nil)
			if svc != "" && p.PackFor != nil {
				if pack, labels, err = p.PackFor(svc); err != nil {
					out = append(out, Target{Query: q, Key: id + "|" + svc, Err: err})
					continue
				}
				if i > 0 && pack == queries.DefaultPack && len(labels) == 0 {
					continue // the request for every service already covers it
				}
			}
			r, err := p.Catalog.Render(id, pack, queries.Params{Service: svc, Labels: labels})
			var unsupported *queries.UnsupportedError
			if errors.As(err, &unsupported) {
				continue
			}
			out = append(out, Target{Query: q, Rendered: r, Key: "dash|" + id + "|" + pack + "|" + svc, Err: err, Service: svc})
		}
	}
	return out
}

// Requests are the range queries of one refresh ending at now, one per
// target that rendered; index i of the result belongs to Rendered(i).
func Requests(targets []Target, now time.Time) []queries.Request {
	rng := &queries.Range{Start: now.Add(-Span), End: now, Step: Step}
	var out []queries.Request
	for _, t := range targets {
		if t.Rendered == nil {
			continue
		}
		expr := t.Rendered.Expr
		if t.Fleet != nil {
			expr = t.Fleet.RangeExpr
		}
		out = append(out, queries.Request{Key: t.Key, Expr: expr, Range: rng, Metrics: t.Rendered.Metrics})
	}
	return out
}
