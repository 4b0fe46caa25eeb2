package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/keymap"
)

// Layout thresholds: below them the sections stack, and only the focused
// one of levers, playbook and journal is shown under the signals.
const (
	wideWidth  = 120
	wideHeight = 20
	minWidth   = 20
	minHeight  = 8
)

// SetSize lays the sections out for a terminal of w×h.
func (m *Model) SetSize(w, h int) {
	m.Common.SetSize(w, h)
	m.header.SetSize(w, 1)
	m.help.Width = w
	m.filter.Width = max(w-4, 1)
	m.layout()
}

func (m *Model) wide() bool { return m.Width >= wideWidth && m.bodyHeight() >= wideHeight }

func (m *Model) bodyHeight() int {
	return max(m.Height-lipgloss.Height(m.header.View())-2-len(m.bannerLines()), 0)
}

func (m *Model) layout() {
	w, h := m.Width, m.bodyHeight()
	if m.wide() {
		left := w * 62 / 100
		right := w - left
		ah := m.alertsHeight(h)
		m.signals.SetSize(left, h-ah)
		m.alerts.SetSize(left, ah)
		lv := max(h*30/100, 5)
		pb := max(h*35/100, 5)
		m.levers.SetSize(right, lv)
		m.playbook.SetSize(right, pb)
		m.journal.SetSize(right, h-lv-pb)
	} else {
		top := min(max(m.signals.Rows()+2, 5), h/2)
		if !m.signalsLoaded() {
			top = min(5, h/2)
		}
		m.signals.SetSize(w, top)
		for _, s := range []interface{ SetSize(int, int) }{m.levers, m.playbook, m.journal} {
			s.SetSize(w, h-top)
		}
	}
	m.sizeDialog()
}

func (m *Model) signalsLoaded() bool { return len(m.signals.Panels()) > 0 }

func (m *Model) sizeDialog() {
	if m.dialog != nil {
		m.dialog.SetSize(min(m.Width-2, 100), m.bodyHeight())
	}
}

// View draws the whole dashboard at its size.
func (m *Model) View() string {
	if m.Width < minWidth || m.Height < minHeight {
		return "stormctl: the terminal is too small (need 80×24)"
	}
	m.layout()
	head := m.header.View()
	var body string
	h := m.bodyHeight()
	switch {
	case m.showHelp:
		body = common.Frame(m.Styles, "Help", m.helpLines(), m.Width, h, true)
	case m.dialog != nil:
		body = lipgloss.Place(m.Width, h, lipgloss.Center, lipgloss.Center, m.dialog.View())
	case m.wide():
		right := lipgloss.JoinVertical(lipgloss.Left, m.levers.View(), m.playbook.View(), m.journal.View())
		body = lipgloss.JoinHorizontal(lipgloss.Top, m.leftView(), right)
	default:
		body = lipgloss.JoinVertical(lipgloss.Left, m.signals.View(), m.lowerView())
	}
	// The last guard: whatever untrusted text reached the frame shows as
	// text; only the frame's own styles act on the terminal.
	parts := append(append([]string{head}, m.bannerLines()...), body, m.statusLine(), m.helpLine())
	return sanitize.Frame(strings.Join(parts, "\n"))
}

func (m *Model) lowerView() string {
	switch m.lower {
	case FocusPlaybook:
		return m.playbook.View()
	case FocusJournal:
		return m.journal.View()
	}
	return m.levers.View()
}

func (m *Model) statusLine() string {
	st := m.Styles
	switch {
	case m.filtering:
		return common.Fit(m.filter.View(), m.Width)
	case m.status != "" && m.statusErr:
		return common.Fit(st.StatusError.Render("✗ "+m.status), m.Width)
	case m.status != "":
		return common.Fit(st.StatusInfo.Render(m.status), m.Width)
	case m.filter.Value() != "":
		return common.Fit(st.Muted.Render("filter: service ~ "+m.filter.Value()+" (/ to change, esc in it to clear)"), m.Width)
	}
	return strings.Repeat(" ", m.Width)
}

// ShortHelp implements help.KeyMap: the focused section's keys, then the
// global ones.
func (m *Model) ShortHelp() []key.Binding {
	if m.dialog != nil {
		return m.dialog.ShortHelp()
	}
	var own []key.Binding
	switch m.focus {
	case FocusSignals:
		own = m.signals.ShortHelp()
	case FocusLevers:
		own = m.levers.ShortHelp()
	case FocusPlaybook:
		own = m.playbook.ShortHelp()
	case FocusJournal:
		own = m.journal.ShortHelp()
	}
	return append(own, m.KeyMap.NextFocus, m.KeyMap.Filter, m.KeyMap.Help, m.KeyMap.Quit)
}

// FullHelp implements help.KeyMap: every binding, by section.
func (m *Model) FullHelp() [][]key.Binding {
	km := m.KeyMap
	return [][]key.Binding{
		km.Global(),
		{km.PrevFocus, km.Up, km.Down, km.Left, km.Right, km.Drill, km.Back, km.Group},
		{km.RunStep, km.Release, km.Extend},
		km.DialogHelp(),
	}
}

// helpLine is the short help, cut to the width by dropping bindings from
// the middle: the last one (quit, or the dialog's esc) always shows.
func (m *Model) helpLine() string {
	bs := m.ShortHelp()
	h := m.help
	h.Width = 0 // measure it whole; bubbles would cut the end off
	for len(bs) > 1 && lipgloss.Width(h.ShortHelpView(bs)) > m.Width {
		bs = append(bs[:len(bs)-2], bs[len(bs)-1])
	}
	return common.Fit(h.ShortHelpView(bs), m.Width)
}

func (m *Model) helpLines() []string {
	full := m.help
	full.ShowAll = true
	lines := strings.Split(full.FullHelpView(m.FullHelp()), "\n")
	lines = append(lines, "", "sections: signals (←↑↓→ select a panel, a pulls a lever for it), levers (r release, e extend),",
		"playbook (enter runs the selected step), journal (↑↓ scroll). Any key closes this help.",
		"fleet view (no --service): each query's worst series, grouped by service, with the fleet's counts;",
		"enter drills into the selected service, esc comes back; / then a full service name and enter opens any service;",
		"g groups the rows by dependency instead (one dependency attacked by many callers), and back.",
		"", keymap.PredictHelp)
	if m.ReadOnly {
		lines = append(lines, "", m.Styles.Warn.Render("read-only: every key that would change a lever or the journal is off."))
	}
	return lines
}
