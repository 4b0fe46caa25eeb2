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
	}
	return nil, false
}

// bannerLines draws the banner at width w, at most a quarter of the
// height (one line at least when there is anything to say): the loss
// first, wrapped, since acting on levers that may be gone is the worse
// mistake; then the cuts.
func (m *Model) bannerLines() []string {
	w := m.Width
	var lines []string
	if m.banner.loss != "" {
		text := "JOURNAL LOSS: " + m.banner.loss
		for _, l := range strings.Split(lipgloss.NewStyle().Width(w).Render(text), "\n") {
			lines = append(lines, common.Fit(m.Styles.Crit.Render(strings.TrimRight(l, " ")), w))
		}
	}
	for _, c := range m.banner.cuts {
		lines = append(lines, common.Fit(m.Styles.Warn.Render("✂ "+c), w))
	}
	if most := max(m.Height/4, 1); len(lines) > most {
		lines = lines[:most]
	}
	return lines
}
