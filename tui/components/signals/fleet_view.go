package signals

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/tui/common"
)

// fleetView draws the fleet: a summary line per query at the top, then
// the worst rows grouped under their service, scrolled to the selection.
func (m *Model) fleetView() string {
	inner, rows := m.Width-2, m.Height-2
	head := m.summaryLines(inner, max(rows/3, 1))
	body, selLine := m.fleetBody(inner)
	if len(body) == 0 {
		msg := "no series to rank"
		if m.filter != "" {
			msg += " for service ~ " + output.Printable(m.filter)
		}
		body = []string{m.Styles.Muted.Render(msg)}
	}
	bodyRows := max(rows-len(head), 1)
	m.start = common.Window(m.start, selLine, bodyRows, len(body))
	lines := append(head, body[m.start:min(m.start+bodyRows, len(body))]...)
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

// fleetBody is a header line per service, then its rows; selLine is the
// selected row's line.
func (m *Model) fleetBody(inner int) (lines []string, selLine int) {
	type groupInfo struct {
		n     int
		worst State
	}
	groups := map[string]*groupInfo{}
	for _, i := range m.visible {
		p := &m.panels[i]
		g := groups[m.group(p)]
		if g == nil {
			g = &groupInfo{worst: p.State}
			groups[m.group(p)] = g
		}
		g.n++
	}
	nameW := min(22, inner/4)
	seriesW := min(max(inner-nameW-36, 8), 24)
	prev := ""
	for vi, i := range m.visible {
		p := &m.panels[i]
		if g := m.group(p); vi == 0 || g != prev {
			info := groups[g]
			word := strings.ToUpper(string(info.worst))
			if info.worst == StateOK || info.worst == StateNaN {
				word = string(info.worst)
			}
			hdr := m.Styles.Bold.Render(common.Fit(g, min(inner-16, 40))) + " " + m.stateStyle(info.worst).Render(word) +
				m.Styles.Muted.Render(" "+strconv.Itoa(info.n)+" signal"+plural(info.n))
			lines = append(lines, common.Fit(hdr, inner))
			prev = g
		}
		series := strings.TrimPrefix(p.Series, output.Printable(p.Service))
		if m.byDependency {
			series = p.Series
		}
		left := "  " + common.Fit(p.Query, nameW) + " " + common.Fit(series, seriesW) + " "
		val := m.valueText(p, inner-nameW-seriesW-4)
		spark := ""
		if w := inner - lipgloss.Width(left) - lipgloss.Width(val) - 1; w >= 8 {
			spark = " " + m.spark(p, min(w, 40))
		}
		if vi == m.sel {
			selLine = len(lines)
			if m.Focused {
				left = m.Styles.Selected.Render(left)
			}
		}
		lines = append(lines, left+val+spark)
	}
	return lines, selLine
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
	groups := map[string]bool{}
	for _, i := range m.visible {
		groups[m.group(&m.panels[i])] = true
	}
	return len(m.summaryLines(80, len(m.summaries)+1)) + len(groups) + len(m.visible)
}
