package signals

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
)

// Layout limits: cards need room, otherwise panels are one line each.
const (
	cardMinWidth = 34
	cardHeight   = 5
	gridMinWidth = 100
	gridMinRows  = 24
)

// Model is the signals section.
type Model struct {
	common.Common
	Focused bool

	panels  []Panel
	visible []int // indexes into panels after the filter
	sel     int   // index into visible
	start   int   // first visible row on screen
	filter  string
	at      time.Time
	loaded  bool

	fleet     bool      // the fleet view: ranked rows grouped by service
	summaries []Summary // the fleet's counts, one per query
	drill     string    // the service drilled into from the fleet
	history   map[string][]queries.Point
	// byDependency groups the fleet's rows by dependency, not service.
	byDependency bool
}

// New returns an empty signals section.
func New(c common.Common) *Model { return &Model{Common: c} }

// SetPanels replaces the panels after a refresh ending at at, keeping the
// selected panel selected.
func (m *Model) SetPanels(ps []Panel, at time.Time) {
	key := ""
	if p, ok := m.Selected(); ok {
		key = p.Key()
	}
	if m.fleet {
		m.keepHistory(ps, at)
	}
	m.panels, m.at, m.loaded = ps, at, true
	m.apply()
	for i, idx := range m.visible {
		if m.panels[idx].Key() == key {
			m.sel = i
		}
	}
}

// SetFilter shows only panels whose service contains f.
func (m *Model) SetFilter(f string) {
	m.filter = f
	m.apply()
}

func (m *Model) apply() {
	m.visible = m.visible[:0]
	for i, p := range m.panels {
		if m.filter == "" || strings.Contains(p.Service, m.filter) || (p.Service == "" && strings.Contains(p.Series, m.filter)) {
			m.visible = append(m.visible, i)
		}
	}
	if m.fleet {
		m.rankVisible()
	}
	m.sel = min(m.sel, max(len(m.visible)-1, 0))
}

// Panels returns the panels shown after the filter.
func (m *Model) Panels() []Panel {
	out := make([]Panel, len(m.visible))
	for i, idx := range m.visible {
		out[i] = m.panels[idx]
	}
	return out
}

// Selected returns the selected panel.
func (m *Model) Selected() (Panel, bool) {
	if m.sel >= len(m.visible) {
		return Panel{}, false
	}
	return m.panels[m.visible[m.sel]], true
}

// grid says whether panels are cards, and how many a row: only when the
// section is wide, and tall enough to show every card or a good many.
func (m *Model) grid() (cols int, ok bool) {
	if m.Width < gridMinWidth || m.fleet {
		return 1, false
	}
	cols = max(1, (m.Width-2)/cardMinWidth)
	rows := (len(m.visible) + cols - 1) / cols
	if m.Height-2 < rows*cardHeight && m.Height < gridMinRows {
		return 1, false
	}
	return cols, true
}

// Update moves the selection.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok || len(m.visible) == 0 {
		return nil
	}
	cols, _ := m.grid()
	km := m.KeyMap
	switch {
	case key.Matches(k, km.Up):
		if m.sel >= cols {
			m.sel -= cols
		}
	case key.Matches(k, km.Down):
		m.sel = min(m.sel+cols, len(m.visible)-1)
	case key.Matches(k, km.Left):
		m.sel = max(m.sel-1, 0)
	case key.Matches(k, km.Right):
		m.sel = min(m.sel+1, len(m.visible)-1)
	}
	return nil
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	keys := []key.Binding{m.KeyMap.Up, m.KeyMap.Down, m.KeyMap.Action}
	switch {
	case m.fleet:
		keys = append(keys, m.KeyMap.Drill, m.KeyMap.Group)
	case m.drill != "":
		keys = append(keys, m.KeyMap.Back)
	}
	return keys
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.KeyMap.Up, m.KeyMap.Down, m.KeyMap.Left, m.KeyMap.Right, m.KeyMap.Action}}
}

func (m *Model) title() string {
	t := "Signals"
	switch {
	case m.fleet:
		t = "Fleet: worst first"
	case m.drill != "":
		t = "Signals: " + sanitize.Mask(m.drill, '\uFFFD') + " (esc: back to the fleet)"
	}
	if m.filter != "" {
		t += " (service ~ " + m.filter + ")"
	}
	return t
}

// View draws the section at its size.
func (m *Model) View() string {
	if m.fleet && m.loaded {
		return m.fleetView()
	}
	if !m.loaded || len(m.visible) == 0 {
		msg := "waiting for the first refresh…"
		if m.loaded {
			msg = "no panels"
			if m.filter != "" {
				msg += " for service ~ " + m.filter
			}
		}
		return m.Frame(m.title(), []string{m.Styles.Muted.Render(msg)}, m.Focused)
	}
	if cols, ok := m.grid(); ok {
		return m.gridView(cols)
	}
	return m.listView()
}

// valueWidth bounds the value column of the list. The column is as wide
// as the widest value shown, so that every row's sparkline starts in the
// same column and has the same width: one time axis for all.
const valueWidth = 18

func (m *Model) listView() string {
	rows := max(m.Height-2, 1)
	more := len(m.visible) > rows
	if more {
		rows = max(rows-1, 1) // the last line says how many more
	}
	m.start = common.Window(m.start, m.sel, rows, len(m.visible))
	inner := m.Width - 2
	nameW := min(20, inner/5)
	seriesW := min(max(inner-nameW-32, 8), 28)
	valW := 1
	for i := m.start; i < len(m.visible) && i < m.start+rows; i++ {
		valW = max(valW, lipgloss.Width(m.valueText(&m.panels[m.visible[i]], valueWidth)))
	}
	valW = min(valW, max(inner-nameW-seriesW-2, 1))
	sparkW := inner - nameW - seriesW - 2 - valW - 1
	lines := make([]string, 0, rows+1)
	for i := m.start; i < len(m.visible) && len(lines) < rows; i++ {
		p := &m.panels[m.visible[i]]
		left := common.Fit(p.Query, nameW) + " " + common.Fit(p.Series, seriesW) + " "
		val := common.Fit(m.valueText(p, valW), valW)
		spark := ""
		if sparkW >= 8 {
			spark = " " + m.spark(p, sparkW)
			if p.State == StateNoData && p.Note != "" {
				// Why there is no data, and the doctor, where the sparkline would be.
				spark = " " + m.Styles.NoData.Render(common.Fit(p.Note, sparkW))
			}
		}
		line := left + val + spark
		if i == m.sel && m.Focused {
			line = common.Select(m.Styles, left, nameW+seriesW+2) + val + spark
		}
		lines = append(lines, line)
	}
	if more {
		above, below := m.start, len(m.visible)-m.start-len(lines)
		lines = append(lines, m.Styles.Muted.Render(moreText(above, below)))
	}
	return m.Frame(m.title(), lines, m.Focused)
}

// moreText says how many panels are out of view, and how to reach them.
func moreText(above, below int) string {
	switch {
	case above > 0 && below > 0:
		return fmt.Sprintf("↑ %d more, ↓ %d more (↑↓ scroll)", above, below)
	case above > 0:
		return fmt.Sprintf("↑ %d more (↑ scrolls)", above)
	}
	return fmt.Sprintf("↓ %d more (↓ scrolls)", below)
}

func (m *Model) gridView(cols int) string {
	inner := m.Width - 2
	rows := max((m.Height-2)/cardHeight, 1)
	total := (len(m.visible) + cols - 1) / cols
	m.start = common.Window(m.start, m.sel/cols, rows, total)
	var lines []string
	for r := m.start; r < total && r < m.start+rows; r++ {
		cards := make([]string, 0, cols)
		for c := 0; c < cols; c++ {
			i := r*cols + c
			cw := inner / cols
			if c < inner%cols {
				cw++
			}
			if i >= len(m.visible) {
				cards = append(cards, strings.Repeat(" ", cw))
				continue
			}
			cards = append(cards, m.card(&m.panels[m.visible[i]], cw, i == m.sel && m.Focused))
		}
		lines = append(lines, strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, cards...), "\n")...)
	}
	return m.Frame(m.title(), lines, m.Focused)
}

func (m *Model) card(p *Panel, w int, selected bool) string {
	in := w - 2
	right := m.valueText(p, in/2)
	l1 := common.Fit(p.Query, in-lipgloss.Width(right)-1) + " " + right
	thr := thresholdText(p.Threshold)
	l2 := m.Styles.Muted.Render(common.Fit(p.Series, in-lipgloss.Width(thr)-1) + " " + thr)
	l3 := m.spark(p, in)
	if p.State == StateNoData || p.State == StateError {
		l3 = m.Styles.NoData.Render(p.Note)
	}
	return common.Frame(m.Styles, "", []string{l1, l2, l3}, w, cardHeight, selected)
}

// valueText is "4.01 ▲ CRIT" ("CRIT held" once it has lasted for:), or "no data", with "stale" in front of data
// the runner could not refresh.
func (m *Model) valueText(p *Panel, w int) string {
	st := m.Styles
	var s string
	switch p.State {
	case StateNoData:
		s = st.NoData.Render("no data")
	case StateError:
		s = st.Crit.Render("error")
	default:
		arrow := [...]string{"▼", "→", "▲"}[p.Trend+1]
		word := strings.ToUpper(string(p.State))
		if p.State == StateOK {
			word = "ok"
		}
		if p.Held {
			word += " held"
		}
		s = FormatValue(p.Value, p.Unit) + " " + arrow + " " + m.stateStyle(p.State).Render(word)
	}
	if p.Stale {
		s = st.Stale.Render("STALE") + " " + s
	}
	if lipgloss.Width(s) > w {
		return common.Fit(s, w)
	}
	return s
}

func (m *Model) stateStyle(s State) lipgloss.Style {
	switch s {
	case StateCrit, StateError:
		return m.Styles.Crit
	case StateWarn:
		return m.Styles.Warn
	case StateOK:
		return m.Styles.OK
	}
	return m.Styles.NoData
}

func (m *Model) spark(p *Panel, w int) string {
	ceil := 0.0
	if p.Threshold.Crit != nil {
		ceil = *p.Threshold.Crit
	}
	s := Sparkline(p.Points, m.at.Add(-Span), m.at, w, ceil)
	if p.Stale {
		return m.Styles.Stale.Render(s)
	}
	return m.stateStyle(p.State).Render(s)
}

// Worst is the most severe state among the panels, for the header.
func Worst(ps []Panel) queries.Status {
	w := queries.OK
	for _, p := range ps {
		switch p.State {
		case StateCrit:
			return queries.Crit
		case StateWarn:
			w = queries.Warn
		}
	}
	return w
}

// thresholdText is the critical threshold, or the warning one when there
// is no critical one: "crit > 1.3".
func thresholdText(t queries.Threshold) string {
	op := ">"
	if t.Direction == queries.Below {
		op = "<"
	}
	switch {
	case t.Crit != nil:
		return "crit " + op + " " + strconv.FormatFloat(*t.Crit, 'g', -1, 64)
	case t.Warn != nil:
		return "warn " + op + " " + strconv.FormatFloat(*t.Warn, 'g', -1, 64)
	}
	return ""
}
