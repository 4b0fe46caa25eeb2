package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/queries"

	"github.com/stormctl/stormctl/tui/components/signals"
)

// requests are one refresh's: in the fleet view, range queries only to
// bring the history of the worst series once, then instant ones.
func (m *Model) requests(now time.Time) []queries.Request {
	if m.signals.Fleet() {
		return signals.FleetRequests(m.targets, now, m.signals.NeedsBackfill())
	}
	return signals.Requests(m.targets, now)
}

// drillInto opens the selected row's service: every series of every query
// in focus for it, asked for by service rather than reduced.
func (m *Model) drillInto() tea.Cmd {
	p, ok := m.signals.Selected()
	if !ok || p.Service == "" {
		return nil
	}
	return m.setTargets(m.opts.Signals.Drill(p.Service), p.Service)
}

// drillToFiltered opens the service typed in the filter when the fleet's
// worst rows do not show it: any service of the fleet is one / away.
func (m *Model) drillToFiltered() tea.Cmd {
	svc := m.filter.Value()
	if !m.signals.Fleet() || svc == "" || len(m.signals.Panels()) > 0 || queries.ValidateValue(queries.ParamService, svc) != nil {
		return nil
	}
	m.filter.SetValue("")
	m.applyFilter()
	return m.setTargets(m.opts.Signals.Drill(svc), svc)
}

// setTargets switches the panels to plan (the fleet when drill is "") and
// refreshes at once; a refresh in flight for the old targets is dropped
// when it arrives, and asks for the new ones then.
func (m *Model) setTargets(plan signals.Plan, drill string) tea.Cmd {
	m.gen++
	m.drill = drill
	m.targets = plan.Targets()
	m.signals.SetFleet(plan.Fleet(), nil, drill)
	m.signals.Reset()
	if m.refreshing {
		return nil
	}
	m.refreshSeq++ // replaces the scheduled refresh
	return m.refresh()
}
