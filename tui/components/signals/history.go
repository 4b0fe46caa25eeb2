package signals

import (
	"time"

	"github.com/stormctl/stormctl/queries"
)

// MaxHistory caps the points kept per series in the fleet view: the
// sparkline's span at its step.
const MaxHistory = int(Span/Step) + 1

// FleetRequests are the requests of one fleet-view refresh ending at now.
// With backfill they are range queries, which bring the history of the
// worst series; without, instant queries, whose values the section
// appends to the history it keeps (KeepHistory): the server then
// evaluates each query at one step, not at every step of the span.
func FleetRequests(targets []Target, now time.Time, backfill bool) []queries.Request {
	reqs := Requests(targets, now)
	if backfill {
		return reqs
	}
	j := 0
	for _, t := range targets {
		if t.Rendered == nil {
			continue
		}
		if t.Fleet != nil {
			reqs[j] = t.Fleet.Request(reqs[j].Key, now)
		}
		j++
	}
	return reqs
}

// NeedsBackfill reports whether the next fleet refresh should bring
// history: there is none yet.
func (m *Model) NeedsBackfill() bool { return len(m.history) == 0 }

// keepHistory gives each fleet row the history kept for its series: the
// points of a range result replace it, an instant value is appended. Only
// the rows shown keep history, at most MaxHistory points over Span each.
func (m *Model) keepHistory(ps []Panel, at time.Time) {
	next := make(map[string][]queries.Point, len(ps))
	for i := range ps {
		p := &ps[i]
		if p.State == StateNoData || p.State == StateError {
			continue
		}
		k := p.Key()
		h := m.history[k]
		switch {
		case len(p.Points) > 0:
			h = append(h[:0:0], p.Points...)
		case !p.Stale:
			if n := len(h); n == 0 || h[n-1].T.Before(at) {
				h = append(h, queries.Point{T: at, V: p.Value})
			}
		}
		cut := 0
		for cut < len(h) && (h[cut].T.Before(at.Add(-Span)) || len(h)-cut > MaxHistory) {
			cut++
		}
		h = h[cut:]
		next[k], p.Points = h, h
		if len(h) > 1 {
			p.Trend = trendOver(h)
		}
	}
	m.history = next
}

// trendOver is trend for points at any spacing: the last value against
// the last one at least a minute older.
func trendOver(pts []queries.Point) int {
	last := pts[len(pts)-1]
	for i := len(pts) - 2; i >= 0; i-- {
		if !pts[i].T.After(last.T.Add(-time.Minute)) {
			return change(last.V, pts[i].V)
		}
	}
	return 0
}
