package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/tui/common"
)

// banner is what the dashboard must say above every section until it is
// no longer true: a journal loss, answers Prometheus sent that were cut.
type banner struct {
	loss string   // the loss, "" when none
	cuts []string // one line per query whose answer was cut
}

// extraMsg handles the messages of the banner's and the alerts' commands;
// false when msg is none of them.
func (m *Model) extraMsg(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case lossMsg:
		return m.lossChecked(msg), true
	case lossTickMsg:
		return m.checkLoss(), true
	case alertsMsg:
		return m.alertsRead(msg), true
	case alertsTickMsg:
		return m.readAlerts(), true
	case alertHistoryMsg:
		m.noteAlertEntries(msg.entries)
		return nil, true
	}
	return nil, false
}

// bannerLines draws the banner at the model's width, at most a quarter of
// the height (one line at least when there is anything to say): the loss
// first, wrapped, since acting on levers that may be gone is the worse
// mistake; then the alerts' line where they have no section; then the
// cuts.
func (m *Model) bannerLines() []string {
	w := m.Width
	var lines []string
	if m.banner.loss != "" {
		lines = append(lines, wrapped(m.Styles.Crit, "JOURNAL LOSS: "+m.banner.loss, w, 4)...)
	}
	if m.alertsInBanner() {
		lines = append(lines, common.Fit(m.alerts.Summary(), w))
	}
	for _, c := range m.banner.cuts {
		lines = append(lines, wrapped(m.Styles.Warn, "✂ "+c, w, 2)...)
	}
	if most := max(m.Height/4, 1); len(lines) > most {
		lines = lines[:most]
	}
	return lines
}

// wrapped is text wrapped at width w in style st, at most n lines, each
// exactly w cells (the last one cut with an ellipsis if more was left).
func wrapped(st lipgloss.Style, text string, w, n int) []string {
	ls := strings.Split(lipgloss.NewStyle().Width(w).Render(text), "\n")
	if len(ls) > n {
		ls[n-1] = strings.TrimRight(ls[n-1], " ") + " " + ls[n]
		ls = ls[:n]
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = common.Fit(st.Render(strings.TrimRight(l, " ")), w)
	}
	return out
}

// alertsInBanner reports whether the alerts show as one banner line rather
// than a section: on terminals where the wide layout has no room for it.
func (m *Model) alertsInBanner() bool {
	return m.alertsShown() && (m.Width < wideWidth || m.Height < wideHeight+alertsRoom)
}

// alertsRoom is the height the wide layout needs beyond wideHeight to give
// the alerts a section of their own.
const alertsRoom = 8
