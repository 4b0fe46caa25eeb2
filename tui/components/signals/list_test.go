package signals

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/keymap"
	"github.com/stormctl/stormctl/tui/styles"
)

// listModel is an 80-column signals list of n panels in mixed states.
func listModel(t *testing.T, n, height int) *Model {
	t.Helper()
	crit := 1.3
	q := &queries.Query{ID: "amplification", Unit: "ratio"}
	r := &queries.Rendered{Threshold: queries.Threshold{Crit: &crit, Direction: queries.Above}}
	var targets []Target
	var results []queries.Result
	for i := range n {
		targets = append(targets, Target{Query: q, Rendered: r})
		series := queries.Series{Labels: map[string]string{"service": fmt.Sprintf("svc%d", i), "dependency": "db"}, Value: 1 + float64(i), Points: pts(1, 2, 3, 4, 5)}
		switch i % 3 {
		case 0:
			results = append(results, queries.Result{Series: []queries.Series{series}})
		case 1:
			results = append(results, queries.Result{Stale: true, Err: errors.New("503"), Series: []queries.Series{series}})
		default:
			results = append(results, queries.Result{NoData: &queries.NoData{Message: "no series"}})
		}
	}
	m := New(common.Common{Styles: styles.DefaultStyles(), KeyMap: keymap.DefaultKeyMap(false), Now: func() time.Time { return t0.Add(5 * time.Minute) }})
	m.SetSize(78, height)
	m.SetPanels(Build(targets, results), t0.Add(5*time.Minute))
	m.Focused = true
	return m
}

// The sparklines of every row start in one column and have one width: a
// shared time axis, whatever the value text.
func TestListSparklinesShareOneAxis(t *testing.T) {
	m := listModel(t, 3, 5)
	lines := strings.Split(ansi.Strip(m.View()), "\n")
	var start, width []int
	for _, l := range lines[1 : len(lines)-1] {
		runes := []rune(l)
		first, last := -1, -1
		for i, r := range runes {
			if strings.ContainsRune(string(bars), r) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first >= 0 {
			start, width = append(start, first), append(width, last-first)
		}
	}
	if len(start) < 2 {
		t.Fatalf("want two rows with sparklines:\n%s", strings.Join(lines, "\n"))
	}
	for i := range start {
		if start[i] != start[0] || width[i] != width[0] {
			t.Fatalf("sparklines start at %v with widths %v:\n%s", start, width, strings.Join(lines, "\n"))
		}
	}
}

// A list longer than the section says how many panels are out of view,
// and scrolls to them.
func TestListSaysHowManyMoreAndScrolls(t *testing.T) {
	m := listModel(t, 9, 6) // four rows inside the frame
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "↓ 6 more (↓ scrolls)") || !strings.Contains(v, "svc0") || strings.Contains(v, "svc8") {
		t.Fatalf("top of the list:\n%s", v)
	}
	for range 8 {
		m.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	v = ansi.Strip(m.View())
	if !strings.Contains(v, "svc7") || !strings.Contains(v, "↑ 6 more") || strings.Contains(v, "svc0") {
		t.Fatalf("scrolled to the end:\n%s", v)
	}
	if n := strings.Count(v, "\n") + 1; n != 6 {
		t.Fatalf("%d lines, want the section's 6:\n%s", n, v)
	}
}
