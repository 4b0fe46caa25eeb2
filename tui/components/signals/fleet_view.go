package signals

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/tui/common"
)

// fleetView draws the fleet: a summary line per query at the top, then
// the worst rows grouped under their service, scrolled to the selection.
// Only the lines on screen are drawn, however many rows there are.
func (m *Model) fleetView() string {
	inner, rows := m.Width-2, m.Height-2
	head := m.summaryLines(inner, max(rows/3, 1))
	layout, selLine := m.fleetLayout()
	bodyRows := max(rows-len(head), 1)
	m.start = common.Window(m.start, selLine, bodyRows, len(layout))
	lines := head
	for _, ln := range layout[m.start:min(m.start+bodyRows, len(layout))] {
		lines = append(lines, m.fleetLine(ln, inner))
	}
	if len(layout) == 0 {
		msg := "no series to rank"
		if m.filter != "" {
			msg += " for service ~ " + sanitize.Mask(m.filter, '\uFFFD')
		}
		lines = append(lines, m.Styles.Muted.Render(msg))
	}
	return m.Frame(m.title(), lines, m.Focused)
}

// summaryLines are the summaries within budget lines: the breached ones
// first, the rest on one line when they do not fit, and the queries with
// no data named on one line.
func (m *Model) summaryLines(w, budget int) []string {
	var sums []Summary
	var nodata []string
	for _, s := range m.summaries {
		if s.State == StateNoData {
			nodata = append(nodata, s.Query)
		} else {
			sums = append(sums, s)
		}
	}
	if len(nodata) > 0 {
		budget--
	}
	var out []string
	for i, s := range sums {
		if len(out) >= budget-1 && len(sums)-i > 1 {
			rest := make([]string, 0, len(sums)-i)
			for _, r := range sums[i:] {
				rest = append(rest, r.Query)
			}
			out = append(out, m.Styles.Muted.Render(common.Fit("+"+strconv.Itoa(len(rest))+" more: "+strings.Join(rest, ", "), w)))
			break
		}
		text := common.Fit(s.Text(), w)
		if s.Stale {
			text = common.Fit(m.Styles.Stale.Render("STALE")+" "+s.Text(), w)
		}
		switch s.State {
		case StateCrit, StateWarn, StateError:
			text = m.stateStyle(s.State).Render(text)
		default:
			text = m.Styles.Muted.Render(text)
		}
		out = append(out, text)
	}
	if len(nodata) > 0 {
		out = append(out, m.Styles.NoData.Render(common.Fit("no data: "+strings.Join(nodata, ", ")+" (enter a service for why)", w)))
	}
	return out
}

// fleetLine is one line of the fleet's body: a group header (the group's
// worst state and size) or a row (vi is its index in visible).
type fleetLine struct {
	vi     int
	group  string
	header bool
	n      int
	worst  State
}

// fleetLayout lists the body's lines without drawing them; selLine is the
// selected row's line.
func (m *Model) fleetLayout() (lines []fleetLine, selLine int) {
	hdr := -1
	for vi, i := range m.visible {
		p := &m.panels[i]
		if g := m.group(p); hdr < 0 || g != lines[hdr].group {
			hdr = len(lines)
			lines = append(lines, fleetLine{group: g, header: true, worst: p.State})
		}
		lines[hdr].n++
		if vi == m.sel {
			selLine = len(lines)
		}
		lines = append(lines, fleetLine{vi: vi})
	}
	return lines, selLine
}

func (m *Model) fleetLine(ln fleetLine, inner int) string {
	if ln.header {
		word := strings.ToUpper(string(ln.worst))
		if ln.worst == StateOK || ln.worst == StateNaN {
			word = string(ln.worst)
		}
		hdr := m.Styles.Bold.Render(common.Fit(ln.group, min(inner-16, 40))) + " " + m.stateStyle(ln.worst).Render(word) +
			m.Styles.Muted.Render(" "+strconv.Itoa(ln.n)+" signal"+plural(ln.n))
		return common.Fit(hdr, inner)
	}
	p := &m.panels[m.visible[ln.vi]]
	nameW := min(22, inner/4)
	seriesW := min(max(inner-nameW-36, 8), 24)
	series := strings.TrimPrefix(p.Series, sanitize.Mask(p.Service, '\uFFFD'))
	if m.byDependency {
		series = p.Series
	}
	left := "  " + common.Fit(p.Query, nameW) + " " + common.Fit(series, seriesW) + " "
	val := m.valueText(p, inner-nameW-seriesW-4)
	spark := ""
	if w := inner - lipgloss.Width(left) - lipgloss.Width(val) - 1; w >= 8 {
		spark = " " + m.spark(p, min(w, 40))
	}
	if ln.vi == m.sel && m.Focused {
		left = common.Select(m.Styles, left, 0)
	}
	return left + val + spark
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Rows is how many lines the section's content takes, for layouts that
// size it to fit.
func (m *Model) Rows() int {
	if !m.fleet {
		return len(m.visible)
	}
	layout, _ := m.fleetLayout()
	return len(m.summaryLines(80, len(m.summaries)+1)) + len(layout)
}
