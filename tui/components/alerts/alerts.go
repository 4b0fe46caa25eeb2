// Package alerts is the dashboard's alerts section: what Alertmanager holds
// firing (silenced or not) with the incident each belongs to, and the
// autopilot's state and the actions it took.
package alerts

import (
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/tui/common"
)

// Row is one alert as shown. Text fields must already be safe lines.
type Row struct {
	Name, Target string
	// Key is the alert's labels as the receiver journals them: what
	// SetIncidents looks its incident up by.
	Key        string
	Incident   string // "" when no alert.fired entry read names one
	Since      time.Time
	Silenced   bool
	SilencedBy string // the first silence's id
	Inhibited  bool
}

// Pilot is the autopilot as shown. Text fields must already be safe lines.
type Pilot struct {
	Known   bool
	Paused  bool
	By      string
	Reason  string
	Allowed bool     // the context lets it pull some kind
	Actions []string // one line per action it took, newest first
	Err     string
}

// Model is the section.
type Model struct {
	common.Common
	rows  []Row
	more  int
	read  bool   // an answer arrived
	down  string // "alertmanager unreachable: ADDR (why)", "" when it answers
	pilot Pilot
}

// New returns an empty section.
func New(c common.Common) *Model { return &Model{Common: c} }

// SetAlerts shows one answer; more counts the alerts not kept.
func (m *Model) SetAlerts(rows []Row, more int) {
	m.rows, m.more, m.read, m.down = rows, more, true, ""
}

// SetIncidents names each row's incident from incidents by row key:
// journal entries may arrive after the alerts.
func (m *Model) SetIncidents(incidents map[string]string) {
	for i := range m.rows {
		if inc, ok := incidents[m.rows[i].Key]; ok {
			m.rows[i].Incident = inc
		}
	}
}

// SetDown says Alertmanager did not answer; the alerts last read stay
// listed, marked as such.
func (m *Model) SetDown(addr, why string) {
	m.down = "alertmanager unreachable: " + addr
	if why != "" {
		m.down += " (" + why + ")"
	}
}

// SetPilot shows the autopilot's state.
func (m *Model) SetPilot(p Pilot) { m.pilot = p }

// Lines is what the section needs to show everything: for sizing.
func (m *Model) Lines() int { return len(m.lines()) }

func (m *Model) counts() (firing, silenced int) {
	for _, r := range m.rows {
		if r.Silenced || r.Inhibited {
			silenced++
		} else {
			firing++
		}
	}
	return firing, silenced
}

func (m *Model) title() string {
	f, s := m.counts()
	switch {
	case !m.read && m.down == "":
		return "Alerts"
	case m.read:
		return fmt.Sprintf("Alerts (%d firing, %d silenced)", f, s)
	}
	return "Alerts"
}

// Summary is the section in one line, for layouts with no room for it.
func (m *Model) Summary() string {
	parts := []string{}
	switch {
	case m.down != "":
		parts = append(parts, m.Styles.Crit.Render(m.down))
	case m.read:
		f, s := m.counts()
		parts = append(parts, fmt.Sprintf("alerts: %d firing, %d silenced", f, s))
	}
	if p := m.pilotText(); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(parts, " · ")
}

func (m *Model) pilotText() string {
	p := m.pilot
	switch {
	case p.Err != "":
		return "autopilot: unknown (" + p.Err + ")"
	case !p.Known:
		return ""
	case p.Paused:
		return m.Styles.Warn.Render("autopilot PAUSED by "+p.By) + ": " + p.Reason
	case !p.Allowed:
		return fmt.Sprintf("autopilot: off (no kind allowed), %d actions", len(p.Actions))
	}
	return fmt.Sprintf("autopilot: active, %d actions", len(p.Actions))
}

func (m *Model) lines() []string {
	st := m.Styles
	var out []string
	if m.down != "" {
		out = append(out, st.Crit.Render(m.down))
	}
	if m.read && len(m.rows) == 0 {
		out = append(out, st.Muted.Render("no alerts in Alertmanager"))
	}
	for _, r := range m.rows {
		mark, style := "●", st.Crit
		state := "firing"
		switch {
		case r.Silenced:
			mark, style, state = "◌", st.Muted, "silenced "+r.SilencedBy
		case r.Inhibited:
			mark, style, state = "◌", st.Muted, "inhibited"
		}
		inc := "no incident"
		if r.Incident != "" {
			inc = "incident " + r.Incident
		}
		target := ""
		if r.Target != "" {
			target = " " + r.Target
		}
		out = append(out, style.Render(mark+" "+r.Name)+target+" · "+state+" · "+inc+" · "+common.Ago(m.Now().Sub(r.Since)))
	}
	if m.more > 0 {
		out = append(out, st.Muted.Render(fmt.Sprintf("… and %d more not read", m.more)))
	}
	if p := m.pilotText(); p != "" {
		out = append(out, p)
		for _, a := range m.pilot.Actions {
			out = append(out, "  "+a)
		}
	}
	return out
}

// View draws the section at its size.
func (m *Model) View() string {
	return m.Frame(m.title(), m.lines(), false)
}
