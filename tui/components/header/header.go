// Package header is the dashboard's top line: where it points (context,
// incident, actor), whether Prometheus and Redis answer and how fast, and
// how old the panels are.
package header

import (
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/tui/common"
)

// Health is one server's state as last seen.
type Health struct {
	Configured bool
	Known      bool // answered or failed at least once
	OK         bool
	RTT        time.Duration
	Err        string
}

// Model is the header.
type Model struct {
	common.Common
	Context, Incident, Actor string
	Prom, Redis              Health
	Refreshed                time.Time // end of the last refresh; zero: none yet
	Refreshing               bool
	// Clock, if set, is shown after the incident: a lab's simulated time
	// and where its fault stands.
	Clock func() string
	// Advisory says the actor is a typed name (one shared Redis user), so
	// roles and approvals are advisory.
	Advisory bool
}

// New returns the header.
func New(c common.Common) *Model { return &Model{Common: c} }

func (m *Model) health(name string, h Health) string {
	st := m.Styles
	switch {
	case !h.Configured:
		return st.Muted.Render(name + " not configured")
	case !h.Known:
		return name + " " + st.Muted.Render("○ …")
	case !h.OK:
		return name + " " + st.Down.Render("✗ down")
	}
	return name + " " + st.Healthy.Render("● ") + rtt(h.RTT)
}

func rtt(d time.Duration) string {
	if d < time.Millisecond {
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}

// View draws the header line.
func (m *Model) View() string {
	st := m.Styles
	ctx := m.Context
	if ctx == "" {
		ctx = "(no context)"
	}
	inc := "no incident"
	if m.Incident != "" {
		inc = "incident " + m.Incident
	}
	age := "waiting for data"
	switch {
	case m.Refreshing && !m.Refreshed.IsZero():
		age = "refreshing, last " + common.Ago(m.Now().Sub(m.Refreshed))
	case !m.Refreshed.IsZero():
		age = "refreshed " + common.Ago(m.Now().Sub(m.Refreshed))
	}
	where := []string{st.HeaderLabel.Render("ctx ") + ctx, inc, st.HeaderLabel.Render("actor ") + m.Actor}
	// urgent is what must stay on screen however narrow the terminal: the
	// lab's clock and countdown, read-only mode, advisory roles.
	var urgent []string
	if m.Clock != nil {
		urgent = append(urgent, st.Warn.Render(m.Clock()))
	}
	if m.ReadOnly {
		urgent = append(urgent, st.Warn.Render("READ-ONLY"))
	}
	if m.Advisory {
		urgent = append(urgent, st.Warn.Render("shared Redis user: roles/approvals advisory (docs/identity.md)"))
	}
	name := st.Header.Render("stormctl")
	who := append(append([]string{name}, where...), urgent...)
	state := []string{m.health("prom", m.Prom), m.health("redis", m.Redis), st.Muted.Render(age)}
	line := strings.Join(append(who, state...), "  ")
	if lipgloss.Width(line) <= m.Width {
		return common.Fit(line, m.Width)
	}
	// Too narrow for one line: health and age get a line of their own
	// rather than being cut off, and the urgent parts come before where
	// the dashboard points, so a cut takes the incident id, not the clock.
	if lipgloss.Width(strings.Join(who, "  ")) > m.Width {
		who = append(append([]string{name}, urgent...), where...)
	}
	return common.Fit(strings.Join(who, "  "), m.Width) + "\n" + common.Fit(strings.Join(state, "  "), m.Width)
}
