package signals

import (
	"sort"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
)

// Summary is the fleet's count for one query: "amplification: 3 crit,
// 11 warn of 2,940 series".
type Summary struct {
	Query, Pack string
	// Total, Warn (past warn, not crit) and Crit count the series; Warn
	// and Crit are -1 when the threshold has no such level.
	Total, Warn, Crit int
	// State is StateNoData or StateError when there is nothing to count,
	// with Note saying why; otherwise the worst level counted.
	State State
	Note  string
	Stale bool
}

// Summaries are the fleet's counts from one refresh, one per fleet
// target, breached queries first (most critical first), then in focus
// order.
func Summaries(targets []Target, results []queries.Result) []Summary {
	var out []Summary
	i := 0
	for _, t := range targets {
		s := Summary{Query: t.Query.ID, Warn: -1, Crit: -1, State: StateOK}
		if t.Rendered != nil {
			s.Pack = t.Rendered.Pack
		}
		switch {
		case t.Rendered == nil:
			s.State, s.Note = StateError, t.Err.Error()
		case i >= len(results):
			continue
		case t.Fleet == nil:
			i++
			continue
		default:
			res := results[i]
			i++
			f := queries.SplitFleet(t.Fleet, res.Series)
			s.Total, s.Warn, s.Crit, s.Stale = f.Total, f.Warn, f.Crit, res.Stale
			switch {
			case len(res.Series) == 0 && res.Err != nil:
				s.State, s.Note = StateError, res.Err.Error()
			case len(res.Series) == 0:
				s.State = StateNoData
				if res.NoData != nil {
					s.Note = res.NoData.Message
				}
			case f.Crit > 0:
				s.State = StateCrit
			case f.Warn > 0:
				s.State = StateWarn
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if ra, rb := summaryRank(out[a]), summaryRank(out[b]); ra != rb {
			return ra > rb
		}
		return out[a].Crit > out[b].Crit
	})
	return out
}

func summaryRank(s Summary) int {
	switch s.State {
	case StateCrit:
		return 2
	case StateWarn:
		return 1
	}
	return 0
}

// Text is the summary in words: "amplification: 3 crit, 11 warn of 2,940 series".
func (s Summary) Text() string {
	name := s.Query
	if s.Pack != "" && s.Pack != queries.DefaultPack {
		name += " (" + s.Pack + ")"
	}
	switch s.State {
	case StateNoData:
		return name + ": no data: " + sanitize.Mask(s.Note, '\uFFFD')
	case StateError:
		return name + ": error: " + sanitize.Mask(s.Note, '\uFFFD')
	}
	return queries.FleetResult{Total: s.Total, Warn: s.Warn, Crit: s.Crit}.Text(name)
}

// SetFleet switches the section to the fleet view with these counts (nil
// leaves it), or, with drill set, to the panels of that one service.
func (m *Model) SetFleet(fleet bool, sums []Summary, drill string) {
	m.fleet, m.summaries, m.drill = fleet, sums, drill
	m.apply()
}

// Summaries returns the fleet's counts shown.
func (m *Model) Summaries() []Summary { return append([]Summary(nil), m.summaries...) }

// Fleet reports whether the section shows the fleet view.
func (m *Model) Fleet() bool { return m.fleet }

// group is what the fleet view groups a row by: its service (else its
// series), or with byDependency its dependency, "→payments": one slow
// dependency attacked by many callers then reads as one group.
func (m *Model) group(p *Panel) string {
	if dep := p.Labels[queries.ParamDependency]; m.byDependency && dep != "" {
		return "→" + sanitize.Mask(dep, '\uFFFD')
	}
	if p.Service != "" {
		return sanitize.Mask(p.Service, '\uFFFD')
	}
	return p.Series
}

// ToggleGrouping switches the fleet view between grouping by service and
// by dependency.
func (m *Model) ToggleGrouping() {
	m.byDependency = !m.byDependency
	m.apply()
}

// rankVisible orders the fleet's rows worst first, severity then distance
// past the threshold, grouped by service in the order of each service's
// worst row. Rows with nothing to rank (no data, errors) are left to the
// summaries.
func (m *Model) rankVisible() {
	vis := m.visible[:0]
	for _, i := range m.visible {
		if st := m.panels[i].State; st != StateNoData && st != StateError {
			vis = append(vis, i)
		}
	}
	sort.SliceStable(vis, func(a, b int) bool {
		pa, pb := &m.panels[vis[a]], &m.panels[vis[b]]
		return pa.Threshold.WorseThan(pa.Value, pb.Threshold, pb.Value)
	})
	order := map[string]int{}
	for _, i := range vis {
		if g := m.group(&m.panels[i]); order[g] == 0 {
			order[g] = len(order) + 1
		}
	}
	sort.SliceStable(vis, func(a, b int) bool { return order[m.group(&m.panels[vis[a]])] < order[m.group(&m.panels[vis[b]])] })
	m.visible = vis
}

// Reset empties the section until the next SetPanels, for new targets.
func (m *Model) Reset() {
	m.panels, m.visible, m.loaded, m.history = nil, m.visible[:0], false, nil
	m.sel, m.start = 0, 0
}
