// Package playbook is the dashboard's playbook section: the steps of the
// chosen playbook with their state, the next step marked, and the step
// running now with its progress. Enter runs the selected step.
package playbook

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/tui/common"
)

// Model is the playbook section.
type Model struct {
	common.Common
	Focused bool

	name, title string
	steps       []playbooks.StepState
	next        string
	running     string // the step running now, "" if none
	progress    string
	sel         int
	start       int
	texts       map[string]string // a note step's text, by step id
}

// SetTexts records what each note step says, shown when it is selected.
func (m *Model) SetTexts(texts map[string]string) { m.texts = texts }

// noteLines is how many lines of a selected note's text are shown.
const noteLines = 4

// New returns the section; name is "" when no playbook is loaded.
func New(c common.Common, name, title string) *Model {
	return &Model{Common: c, name: name, title: title}
}

// Loaded says whether a playbook is loaded.
func (m *Model) Loaded() bool { return m.name != "" }

// SetSteps records the steps' states and the next step of a forward run;
// the selection moves to the next step when it was on the previous one.
func (m *Model) SetSteps(steps []playbooks.StepState, next string) {
	follow := m.sel < len(m.steps) && m.steps[m.sel].ID == m.next
	m.steps, m.next = steps, next
	if follow || len(m.steps) == 0 {
		m.SelectNext()
	}
	m.sel = min(m.sel, max(len(m.steps)-1, 0))
}

// SelectNext selects the next step of a forward run.
func (m *Model) SelectNext() {
	for i, s := range m.steps {
		if s.ID == m.next {
			m.sel = i
		}
	}
}

// SetRunning marks step id as running ("" when none is).
func (m *Model) SetRunning(id string) { m.running, m.progress = id, "" }

// Running is the step running now, "" if none.
func (m *Model) Running() string { return m.running }

// SetProgress shows the latest poll of a running wait step.
func (m *Model) SetProgress(p string) { m.progress = p }

// Selected returns the selected step.
func (m *Model) Selected() (playbooks.StepState, bool) {
	if m.sel >= len(m.steps) {
		return playbooks.StepState{}, false
	}
	return m.steps[m.sel], true
}

// Update moves the selection.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	m.sel = m.Move(msg, m.sel, len(m.steps))
	return nil
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.KeyMap.Up, m.KeyMap.Down, m.KeyMap.RunStep}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var icons = map[playbooks.Status]string{playbooks.Pending: "○", playbooks.Passed: "✓", playbooks.Failed: "✗", playbooks.Skipped: "–"}

// View draws the section at its size.
func (m *Model) View() string {
	st := m.Styles
	if !m.Loaded() {
		return m.Frame("Playbook", []string{st.Muted.Render("no playbook: stormctl dash --playbook NAME --param k=v")}, m.Focused)
	}
	rows := m.Height - 2
	detail := m.detail()
	var note []string
	if detail == "" {
		note = m.noteText(min(noteLines, max(rows-3, 0)))
	}
	if detail != "" {
		rows--
	}
	rows -= len(note)
	m.start = common.Window(m.start, m.sel, max(rows, 1), len(m.steps))
	var lines []string
	for i := m.start; i < len(m.steps) && len(lines) < rows; i++ {
		s := m.steps[i]
		icon := icons[s.Status]
		style := st.Muted
		switch {
		case s.ID == m.running:
			icon, style = "…", st.Warn
		case s.Status == playbooks.Passed:
			style = st.OK
		case s.Status == playbooks.Failed:
			style = st.Crit
		}
		mark := "  "
		if s.ID == m.next {
			mark = "▶ "
		}
		title := s.Title
		if title == "" {
			title = s.ID
		}
		text := fmt.Sprintf("%s%s %-6s %s", mark, style.Render(icon), s.Type, title)
		if s.RollbackOf != "" {
			text += st.Muted.Render(" (undoes " + s.RollbackOf + ")")
		}
		if i == m.sel && m.Focused {
			text = common.Select(st, fmt.Sprintf("%s%s %-6s %s", mark, icon, s.Type, title), m.Width-2)
		}
		lines = append(lines, text)
	}
	if detail != "" {
		lines = append(lines, detail)
	}
	lines = append(lines, note...)
	return m.Frame("Playbook "+m.name, lines, m.Focused)
}

// detail is the outcome, error or progress of the selected step.
func (m *Model) detail() string {
	s, ok := m.Selected()
	switch {
	case !ok:
		return ""
	case s.ID == m.running && m.progress != "":
		return m.Styles.Warn.Render("  " + m.progress)
	case s.ID == m.running:
		return m.Styles.Warn.Render("  running…")
	case s.Error != "":
		return m.Styles.Crit.Render("  " + s.Error)
	case s.Outcome != "":
		return m.Styles.Muted.Render("  " + s.Outcome)
	}
	return ""
}

// noteText is the selected note step's text, wrapped to the section and
// cut to at most n lines.
func (m *Model) noteText(n int) []string {
	s, ok := m.Selected()
	text := m.texts[s.ID]
	if !ok || s.Type != playbooks.Note || text == "" || n <= 0 {
		return nil
	}
	w := max(m.Width-4, 10)
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > w {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	lines = append(lines, line)
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = common.Fit(lines[n-1]+" …", w)
	}
	for i, l := range lines {
		lines[i] = m.Styles.Muted.Render("  " + l)
	}
	return lines
}
