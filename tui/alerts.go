package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/internal/alertmanager"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	alertsview "github.com/stormctl/stormctl/tui/components/alerts"
)

// AlertSource is Alertmanager as the dashboard reads it;
// *alertmanager.Client is one (bounded in bytes and count).
type AlertSource interface {
	Alerts(ctx context.Context) (alertmanager.Answer, error)
	Addr() string
}

// AutopilotSource reads the autopilot's state and the actions it took.
type AutopilotSource interface {
	Autopilot(ctx context.Context) (AutopilotStatus, error)
}

// AutopilotStatus is what `stormctl autopilot status` reports.
type AutopilotStatus struct {
	State   alerts.State
	Allowed bool                 // the context's autopilot lists a kind
	Actions []actions.ActionInfo // the actions it took, any state
}

// DefaultAlertsEvery is how often Alertmanager is read while it answers;
// when it does not, the wait doubles (jittered) up to alertsBackoff.
const (
	DefaultAlertsEvery = 10 * time.Second
	alertsBackoff      = time.Minute
)

type (
	alertsMsg struct {
		answer   alertmanager.Answer
		err      error
		pilot    AutopilotStatus
		pilotErr error
		polled   bool // Alertmanager was asked
	}
	alertsTickMsg struct{}
)

// alertsShown reports whether the dashboard has an alerts section.
func (m *Model) alertsShown() bool { return m.deps.Alerts != nil || m.deps.Autopilot != nil }

// readAlerts reads Alertmanager and the autopilot once, one after the
// other: never more than one request in flight to either.
func (m *Model) readAlerts() tea.Cmd {
	am, pilot, ctx := m.deps.Alerts, m.deps.Autopilot, m.Ctx
	return func() tea.Msg {
		var msg alertsMsg
		if am != nil {
			msg.answer, msg.err = am.Alerts(ctx)
			msg.polled = true
		}
		if pilot != nil {
			msg.pilot, msg.pilotErr = pilot.Autopilot(ctx)
		}
		return msg
	}
}

// alertHistoryLen is how far back the journal is read once for the
// incidents of alerts that fired before the dashboard opened.
const alertHistoryLen = 1000

type alertHistoryMsg struct{ entries []journal.Entry }

// readAlertHistory reads the journal's recent alert.fired entries once;
// later ones arrive with the journal's follow.
func (m *Model) readAlertHistory() tea.Cmd {
	j, ctx := m.deps.Journal, m.Ctx
	return func() tea.Msg {
		recs, err := j.Tail(ctx, alertHistoryLen)
		if err != nil {
			return nil // the journal section reports its own errors
		}
		var msg alertHistoryMsg
		for _, r := range recs {
			if e, err := journal.Parse(r.Data); err == nil && e.Event == alerts.AlertFired {
				msg.entries = append(msg.entries, e)
			}
		}
		return msg
	}
}

// alertsRead shows an answer and schedules the next read: the usual
// interval, or a jittered, doubling wait while Alertmanager is down.
func (m *Model) alertsRead(msg alertsMsg) tea.Cmd {
	next := m.opts.AlertsEvery
	switch {
	case msg.polled && msg.err != nil:
		m.alertsRetry = min(max(2*m.alertsRetry, 2*time.Second), alertsBackoff)
		next = m.alertsRetry
		m.alerts.SetDown(sanitize.Line(m.deps.Alerts.Addr()), sanitize.Line(msg.err.Error()))
	case msg.polled:
		m.alertsRetry = 0
		m.alerts.SetAlerts(m.alertRows(msg.answer.Alerts), msg.answer.More)
	}
	if m.deps.Autopilot != nil {
		m.alerts.SetPilot(pilotView(msg.pilot, msg.pilotErr))
	}
	m.layout()
	return m.opts.After(m.jitter(next), func(time.Time) tea.Msg { return alertsTickMsg{} })
}

func (m *Model) alertRows(as []alertmanager.Alert) []alertsview.Row {
	rows := make([]alertsview.Row, 0, len(as))
	for _, a := range as {
		key := labelsText(a.Labels)
		r := alertsview.Row{Name: sanitize.Line(a.Labels["alertname"]), Key: key, Since: a.StartsAt, Silenced: a.Silenced(),
			Inhibited: len(a.Status.InhibitedBy) > 0, Incident: m.alertIncident[key]}
		if r.Silenced {
			r.SilencedBy = sanitize.Line(a.Status.SilencedBy[0])
		}
		switch svc, dep := a.Labels["service"], a.Labels["dependency"]; {
		case svc != "" && dep != "":
			r.Target = sanitize.Line(svc + "→" + dep)
		default:
			r.Target = sanitize.Line(svc + dep)
		}
		rows = append(rows, r)
	}
	return rows
}

func pilotView(st AutopilotStatus, err error) alertsview.Pilot {
	if err != nil {
		return alertsview.Pilot{Err: sanitize.Line(err.Error())}
	}
	p := alertsview.Pilot{Known: true, Paused: st.State.Paused, By: sanitize.Line(st.State.By), Reason: sanitize.Line(st.State.Reason),
		Allowed: st.Allowed}
	acts := slices.Clone(st.Actions)
	slices.SortFunc(acts, func(a, b actions.ActionInfo) int { return b.CreatedAt.Compare(a.CreatedAt) })
	for _, a := range acts {
		p.Actions = append(p.Actions, sanitize.Line(fmt.Sprintf("%s %s %s=%s on %s (%s)", a.ActionID, a.State, a.Kind, a.Value,
			strings.Join(a.Targets, ","), a.CreatedAt.UTC().Format("15:04:05"))))
	}
	return p
}

// noteAlertEntries remembers the incident of every alert the receiver
// journaled (alert.fired), by its labels: the receiver attaches each
// Alertmanager group to one incident and journals the alert's labels.
func (m *Model) noteAlertEntries(es []journal.Entry) {
	for _, e := range es {
		if e.Event != alerts.AlertFired || e.Incident == "" {
			continue
		}
		_, labels, ok := strings.Cut(e.Outcome, "; labels ")
		if !ok {
			continue
		}
		labels, _, _ = strings.Cut(labels, "; playbook ")
		if m.alertIncident == nil {
			m.alertIncident = map[string]string{}
		}
		m.alertIncident[labels] = sanitize.Line(e.Incident)
		m.alerts.SetIncidents(m.alertIncident)
	}
}

// labelsText is an alert's labels as the receiver journals them: sorted
// name=value pairs, one safe line.
func labelsText(ls map[string]string) string {
	pairs := make([]string, 0, len(ls))
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		pairs = append(pairs, k+"="+ls[k])
	}
	return sanitize.Line(strings.Join(pairs, ", "))
}

// alertsHeight is the alerts section's height in the wide layout's left
// column of height h: what it needs, at least 4, at most a third; 0 when
// the section is not shown there.
func (m *Model) alertsHeight(h int) int {
	if !m.alertsShown() || m.alertsInBanner() {
		return 0
	}
	return min(max(m.alerts.Lines()+2, 4), h/3)
}

// leftView is the wide layout's left column: the signals, and under them
// the alerts when they have a section.
func (m *Model) leftView() string {
	if m.alerts.Height == 0 || m.alertsInBanner() {
		return m.signals.View()
	}
	return lipgloss.JoinVertical(lipgloss.Left, m.signals.View(), m.alerts.View())
}

// ServiceAutopilot reads the autopilot's state and its active actions
// through the control plane, as `stormctl autopilot status` does; ended
// ones are in the journal section.
type ServiceAutopilot struct {
	Service *actions.Service
	Allowed bool // the context's autopilot lists a kind
}

// Autopilot implements AutopilotSource.
func (s ServiceAutopilot) Autopilot(ctx context.Context) (AutopilotStatus, error) {
	st, _, err := alerts.ReadState(ctx, s.Service)
	if err != nil {
		return AutopilotStatus{}, err
	}
	active, err := s.Service.List(ctx, false)
	if err != nil {
		return AutopilotStatus{}, err
	}
	out := AutopilotStatus{State: st, Allowed: s.Allowed}
	for _, a := range active {
		if a.Actor == alerts.Actor {
			out.Actions = append(out.Actions, a)
		}
	}
	return out, nil
}
