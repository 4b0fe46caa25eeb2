package signals

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/keymap"
	"github.com/stormctl/stormctl/tui/styles"
)

func fleetModel(w, h int) *Model {
	lipgloss.SetColorProfile(termenv.Ascii)
	m := New(common.Common{Styles: styles.DefaultStyles(), KeyMap: keymap.DefaultKeyMap(false), Now: func() time.Time { return t0 }})
	m.SetSize(w, h)
	m.SetFleet(true, nil, "")
	return m
}

func above(warn, crit float64) queries.Threshold {
	return queries.Threshold{Warn: &warn, Crit: &crit, Direction: queries.Above}
}

func panel(query, svc, dep string, th queries.Threshold, v float64) Panel {
	ls := map[string]string{"service": svc, "dependency": dep}
	return Panel{Query: query, Threshold: th, Labels: ls, Service: svc, Series: seriesName(ls), Value: v, State: evaluate(th, v)}
}

// TestFleetRanking groups rows under their service in the order of each
// service's worst row, severity before distance, and leaves rows with no
// data to the summaries.
func TestFleetRanking(t *testing.T) {
	amp, rr := above(1.2, 1.3), above(0.2, 0.3)
	m := fleetModel(120, 30)
	m.SetPanels([]Panel{
		panel("amplification", "a", "db", amp, 1.25),
		panel("amplification", "b", "db", amp, 1.0),
		panel("retry_ratio", "b", "db", rr, 0.9), // 200% past crit
		panel("amplification", "c", "db", amp, 1.5),
		{Query: "pool_saturation", Series: "-", State: StateNoData},
		panel("retry_ratio", "a", "db", rr, 0.1),
	}, t0)
	var got []string
	for _, p := range m.Panels() {
		got = append(got, p.Service+":"+p.Query)
	}
	want := "b:retry_ratio b:amplification c:amplification a:amplification a:retry_ratio"
	if strings.Join(got, " ") != want {
		t.Errorf("ranked %v\nwant    %s", got, want)
	}
	if m.Rows() != 3+5 {
		t.Errorf("Rows() = %d, want 3 group headers + 5 rows", m.Rows())
	}
}

// TestSummaries orders the fleet's counts breached first and words them.
func TestSummaries(t *testing.T) {
	w, c := 1.2, 1.3
	q := func(id string) *queries.Query { return &queries.Query{ID: id} }
	fl := &queries.Fleet{Rendered: &queries.Rendered{Pack: "stormctl", Threshold: queries.Threshold{Warn: &w, Crit: &c}}}
	counts := func(ok, warn, crit float64) []queries.Series {
		return []queries.Series{
			{Labels: map[string]string{queries.FleetLabel: "0"}, Value: ok},
			{Labels: map[string]string{queries.FleetLabel: "1"}, Value: warn},
			{Labels: map[string]string{queries.FleetLabel: "2"}, Value: crit},
		}
	}
	targets := []Target{
		{Query: q("calm"), Rendered: fl.Rendered, Fleet: fl},
		{Query: q("warm"), Rendered: fl.Rendered, Fleet: fl},
		{Query: q("storm"), Rendered: fl.Rendered, Fleet: fl},
		{Query: q("empty"), Rendered: fl.Rendered, Fleet: fl},
		{Query: q("broken"), Err: errors.New("bad\x1b[2J pack")},
	}
	results := []queries.Result{
		{Series: counts(100, 0, 0)}, {Series: counts(90, 10, 0)}, {Series: counts(2937, 0, 3)},
		{NoData: &queries.NoData{Message: "metric x not found"}},
	}
	var got []string
	for _, s := range Summaries(targets, results) {
		got = append(got, s.Text())
	}
	want := []string{"storm: 3 crit, 0 warn of 2,940 series", "warm: 0 crit, 10 warn of 100 series",
		"calm: 0 crit, 0 warn of 100 series", "empty: no data: metric x not found", "broken: error: bad\uFFFD[2J pack"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summaries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFleetHistoryIsCapped keeps at most MaxHistory points over Span for
// the rows shown, and forgets the series that left the screen.
func TestFleetHistoryIsCapped(t *testing.T) {
	c := 1.3
	th := queries.Threshold{Crit: &c, Direction: queries.Above}
	m := fleetModel(120, 30)
	at := t0
	for i := range 3 * MaxHistory {
		at = t0.Add(time.Duration(i) * 10 * time.Second)
		ps := []Panel{panel("amplification", "a", "db", th, float64(i*i))}
		if i < 5 {
			ps = append(ps, panel("amplification", fmt.Sprint("gone", i), "db", th, 1))
		}
		m.SetPanels(ps, at)
	}
	p := m.Panels()[0]
	if n := len(p.Points); n == 0 || n > MaxHistory || p.Points[0].T.Before(at.Add(-Span)) {
		t.Fatalf("%d points from %s, want at most %d within %s of %s", n, p.Points[0].T, MaxHistory, Span, at)
	}
	if len(m.history) != 1 || p.Trend != 1 {
		t.Errorf("history of %d series (want 1), trend %d (want rising)", len(m.history), p.Trend)
	}
}

// TestFleetViewIsPrintable: a label with an escape sequence reaches the
// screen as U+FFFD, and the view keeps its size.
func TestFleetViewIsPrintable(t *testing.T) {
	c := 1.3
	th := queries.Threshold{Crit: &c, Direction: queries.Above}
	m := fleetModel(100, 12)
	m.SetPanels([]Panel{panel("amplification", "evil\x1b]0;pwned\x07", "db", th, 2)}, t0)
	v := m.View()
	if strings.ContainsAny(v, "\x1b\x07") || !strings.Contains(v, "evil\uFFFD]0;pwned\uFFFD") {
		t.Errorf("raw control characters on screen:\n%q", v)
	}
	for i, l := range strings.Split(v, "\n") {
		if lipgloss.Width(l) != 100 {
			t.Errorf("line %d is %d wide", i, lipgloss.Width(l))
		}
	}
}

// TestFleetGroupByDependency: g regroups the same ranking under each
// dependency, so one dependency attacked by many callers is one group.
func TestFleetGroupByDependency(t *testing.T) {
	amp := above(1.2, 1.3)
	m := fleetModel(120, 20)
	m.SetPanels([]Panel{
		panel("amplification", "svc-1", "payments", amp, 4),
		panel("amplification", "svc-3", "ledger", amp, 1.25),
		panel("amplification", "svc-2", "payments", amp, 3),
		panel("amplification", "svc-4", "payments", amp, 1.21),
	}, t0)
	m.ToggleGrouping()
	var got []string
	for _, p := range m.Panels() {
		got = append(got, p.Series)
	}
	if want := "svc-1→payments svc-2→payments svc-4→payments svc-3→ledger"; strings.Join(got, " ") != want {
		t.Errorf("by dependency: %v, want %s", got, want)
	}
	if v := m.View(); !strings.Contains(v, "→payments") || !strings.Contains(v, "CRIT 3 signals") {
		t.Errorf("no →payments group of 3:\n%s", v)
	}
	m.ToggleGrouping()
	if p := m.Panels(); p[1].Series != "svc-2→payments" || m.Rows() != 4+4 {
		t.Errorf("back by service: %v, %d rows", p[1].Series, m.Rows())
	}
}

// TestFleetScrollsToSelection: with more rows than the screen, the view
// keeps its size and follows the selection down past group headers.
func TestFleetScrollsToSelection(t *testing.T) {
	c := 1.3
	th := queries.Threshold{Crit: &c, Direction: queries.Above}
	m := fleetModel(100, 16)
	var ps []Panel
	for i := range 500 {
		ps = append(ps, panel("amplification", fmt.Sprintf("svc-%04d", i), "db", th, 1000-float64(i)))
	}
	m.SetPanels(ps, t0)
	down := tea.KeyMsg{Type: tea.KeyDown}
	for range 420 {
		m.Update(down)
	}
	v := m.View()
	if p, _ := m.Selected(); p.Service != "svc-0420" || !strings.Contains(v, "svc-0420") {
		t.Errorf("selected %s; the screen:\n%s", p.Service, v)
	}
	if n := len(strings.Split(v, "\n")); n != 16 {
		t.Errorf("%d lines, want 16", n)
	}
}
