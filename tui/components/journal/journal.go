// Package journal is the dashboard's journal section: the latest entries,
// followed live from the control plane's stream, newest at the bottom.
package journal

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/tui/common"
)

// Keep is how many entries the section holds.
const Keep = 200

// Model is the journal section.
type Model struct {
	common.Common
	Focused bool

	entries []journal.Entry
	filter  string
	// back is how many rows the view is scrolled up from the newest.
	back int
	// unreadable counts records read that did not parse as entries: they
	// cannot be shown, but the responder must know the panel is missing some.
	unreadable int
}

// New returns an empty journal section.
func New(c common.Common) *Model { return &Model{Common: c} }

// Add appends entries (oldest first), dropping the oldest past Keep.
func (m *Model) Add(es ...journal.Entry) {
	m.entries = append(m.entries, es...)
	if n := len(m.entries) - Keep; n > 0 {
		m.entries = append(m.entries[:0], m.entries[n:]...)
	}
}

// AddUnreadable counts n records that could not be shown.
func (m *Model) AddUnreadable(n int) { m.unreadable += n }

// Entries returns the entries shown after the filter.
func (m *Model) Entries() []journal.Entry {
	var out []journal.Entry
	for _, e := range m.entries {
		if m.filter == "" || strings.Contains(e.Target, m.filter) || strings.Contains(e.Value, m.filter) {
			out = append(out, e)
		}
	}
	return out
}

// SetFilter shows only entries about targets containing f.
func (m *Model) SetFilter(f string) { m.filter, m.back = f, 0 }

// Update scrolls.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(k, m.KeyMap.Up):
			m.back = min(m.back+1, max(len(m.Entries())-1, 0))
		case key.Matches(k, m.KeyMap.Down):
			m.back = max(m.back-1, 0)
		}
	}
	return nil
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding { return []key.Binding{m.KeyMap.Up, m.KeyMap.Down} }

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// View draws the section at its size.
func (m *Model) View() string {
	es := m.Entries()
	rows := max(m.Height-2, 0)
	end := len(es) - m.back
	var lines []string
	for _, e := range es[max(end-rows, 0):end] {
		lines = append(lines, m.line(e))
	}
	if len(lines) == 0 {
		lines = []string{m.Styles.Muted.Render("no journal entries yet")}
	}
	title := "Journal"
	if m.unreadable > 0 {
		title += fmt.Sprintf(" (%d unreadable: stormctl journal verify)", m.unreadable)
	}
	if m.back > 0 {
		title += fmt.Sprintf(" (%d newer below)", m.back)
	}
	return m.Frame(title, lines, m.Focused)
}

func (m *Model) line(e journal.Entry) string {
	st := m.Styles
	ev := string(e.Event)
	style := st.Muted
	switch e.Event {
	case journal.ActionApplied, journal.ActionExtended, journal.PlaybookPassed:
		style = st.OK
	case journal.ActionRefused, journal.PlaybookFailed:
		style = st.Crit
	case journal.ActionRequested, journal.ActionExpired, journal.ActionReleased:
		style = st.Warn
	}
	return fmt.Sprintf("%s %s %s %s", st.Muted.Render(e.Time.Local().Format("15:04:05")), style.Render(ev), e.Actor, Summary(e))
}

// Summary is one line about what an entry records.
func Summary(e journal.Entry) string {
	var parts []string
	if e.Kind != "" {
		lever := e.Kind + " " + e.Target
		if e.Value != "" {
			lever += "=" + e.Value
		}
		parts = append(parts, lever)
	}
	switch {
	case e.Event == journal.IncidentOpened || e.Event == journal.IncidentClosed:
		return "incident " + e.Incident + ": " + e.Reason
	case e.Step != "" && e.Step != journal.AdHoc:
		parts = append(parts, "step "+e.Step)
	case e.Playbook != "":
		parts = append(parts, "playbook "+e.Playbook)
	}
	if e.Kind == "" && e.Value != "" {
		parts = append(parts, e.Value)
	}
	switch {
	case e.Error != "":
		parts = append(parts, "— "+e.Error)
	case e.Outcome != "":
		parts = append(parts, "— "+e.Outcome)
	case e.Reason != "":
		parts = append(parts, "— "+e.Reason)
	}
	return strings.Join(parts, " ")
}
