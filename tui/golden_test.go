package tui

import (
	"bytes"
	"context"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// Golden screens: the dashboard run by a real tea.Program (teatest) on
// fakes with a pinned clock and the ASCII colour profile (set in
// harness_test.go); the final screen is compared with testdata/*.golden.
// Regenerate with: go test ./tui -run TestGolden -update

func goldenModel(t *testing.T) *Model {
	w := newWorld()
	w.j.tail = []journal.Entry{
		{Time: t0.Add(-3 * time.Minute), Event: journal.IncidentOpened, Actor: "alice", Incident: "INC-7", Reason: "checkout 5xx"},
		{Time: t0.Add(-time.Minute), Event: journal.ActionApplied, Actor: "bob", Kind: "breaker", Target: "payment-gateway",
			Value: "open", Reason: "gateway p99 over timeout", Outcome: "applied"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return New(ctx, w.deps(), Options{Context: "prod", Actor: "alice", Incident: "INC-7", Now: w.c.Now,
		Signals: signals.Plan{Catalog: catalog(t)}, Rand: func() float64 { return 0.5 }})
}

func runGolden(t *testing.T, w, h int, drive func(tm *teatest.TestModel)) {
	tm := teatest.NewTestModel(t, goldenModel(t), teatest.WithInitialTermSize(w, h))
	// The panels and the levers arrive from separate commands: wait for
	// both, or the screen may be caught between them.
	waitScreen(t, tm, "refreshed now", "seen by 5/6")
	if drive != nil {
		drive(tm)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	view := fm.View()
	checkSize(t, view, w, h)
	golden.RequireEqual(t, []byte(view))
}

func waitScreen(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range want {
			if !bytes.Contains(b, []byte(w)) {
				return false
			}
		}
		return true
	},
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func TestGoldenStorm80x24(t *testing.T) { runGolden(t, 80, 24, nil) }

func TestGoldenStorm200x60(t *testing.T) { runGolden(t, 200, 60, nil) }

func TestGoldenPlanDialog(t *testing.T) {
	runGolden(t, 120, 40, func(tm *teatest.TestModel) {
		tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a")})
		tm.Type("amplification 4x, pool empty")
		tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
		waitScreen(t, tm, "to confirm")
	})
}
