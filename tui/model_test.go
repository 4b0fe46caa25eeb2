package tui

import (
	"errors"

	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/tui/components/dialog"
)

// world is a storm with one lever held and a journal, on fakes.
type world struct {
	c   *clock
	q   *fakeQuerier
	st  *fakeStore
	j   *fakeJournal
	act *fakeActions
}

func newWorld() *world {
	c := newClock()
	st := newFakeStore(lever.Lever{Kind: lever.Breaker, Target: "payment-gateway", Value: "open", ActionID: "01HOLD",
		Actor: "bob", Reason: "gateway p99 over timeout", ExpiresAt: t0.Add(90 * time.Second), Version: 3})
	st.seen["breaker:payment-gateway"], st.live = 5, 6
	return &world{c: c, q: stormQuerier(c.Now), st: st,
		j:   &fakeJournal{follow: make(chan journal.Entry, 4)},
		act: &fakeActions{now: c.Now, store: st}}
}

func (w *world) deps() Deps {
	return Deps{Querier: w.q, Store: w.st, Journal: w.j, Actions: w.act}
}

func (w *world) open(t testing.TB, opts Options, width, height int) *harness {
	if opts.Actor == "" {
		opts.Actor = "alice"
	}
	return newHarness(t, w.c, w.deps(), opts, width, height)
}

func TestResize(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 30}, {200, 60}, {100, 40}} {
		w := newWorld()
		h := w.open(t, Options{Context: "prod", Incident: "01INC"}, sz[0], sz[1])
		checkSize(t, h.view(), sz[0], sz[1])
		h.contains("prom ● 12ms", "redis ●", "amplification", "checkout→payment-gateway", "CRIT", "Levers (1)", "incident 01INC")
		h.send(windowSize(sz[1], sz[0])) // a different shape, then back
		checkSize(t, h.view(), sz[1], sz[0])
	}
}

func TestFocusCycling(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 200, 60)
	if h.m.Focus() != FocusSignals {
		t.Fatalf("starts on %s", h.m.Focus())
	}
	// Without a playbook, tab skips its section.
	for _, want := range []Section{FocusLevers, FocusJournal, FocusSignals} {
		h.key("tab")
		if h.m.Focus() != want {
			t.Fatalf("tab → %s, want %s", h.m.Focus(), want)
		}
	}
	h.key("shift+tab")
	if h.m.Focus() != FocusJournal {
		t.Fatalf("shift+tab → %s", h.m.Focus())
	}
	// The footer's help follows the focus.
	h.key("shift+tab")
	h.contains("r release lever", "e extend lever")
}

func TestNarrowShowsFocusedSection(t *testing.T) {
	w := newWorld()
	w.j.tail = []journal.Entry{{Time: t0, Event: journal.Note, Actor: "carol", Reason: "paged"}}
	h := w.open(t, Options{}, 80, 24)
	h.contains("Levers (1)")
	h.key("tab", "tab") // levers, journal
	h.contains("Journal", "note carol")
	h.lacks("Levers (1)")
	checkSize(t, h.view(), 80, 24)
}

func TestActionDialogFlow(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{Incident: "01INC"}, 120, 40)
	h.key("a")
	d := h.m.Dialog()
	if d == nil || d.Stage() != dialog.StageForm {
		t.Fatal("a did not open the form")
	}
	// Seeded from the selected panel: amplification on checkout→payment-gateway.
	h.contains("‹ retries ›", "checkout->payment-gateway", "off", "15m")
	h.typeText("amplification 4x")
	h.key("enter")
	if d.Stage() != dialog.StagePlan {
		t.Fatalf("stage %v after enter, want the plan", d.Stage())
	}
	h.contains("guards", "✓ validation", "evidence", "amplification = 4.01 (crit; crit > 1.3)", "before: absent",
		"after:  retries checkout->payment-gateway=off by alice", "Type checkout->payment-gateway to confirm")
	if len(w.act.applied) != 0 {
		t.Fatal("the plan applied something")
	}
	h.typeText("checkout")
	h.key("enter")
	h.contains("type checkout->payment-gateway exactly")
	if len(w.act.applied) != 0 {
		t.Fatal("a wrong confirmation applied")
	}
	h.typeText("->payment-gateway")
	h.key("enter")
	h.settle()
	if len(w.act.applied) != 1 {
		t.Fatalf("applied %d times", len(w.act.applied))
	}
	got := w.act.applied[0]
	if got.Kind != "retries" || got.Value != "off" || got.TTL != 15*time.Minute || got.Reason != "amplification 4x" ||
		got.Actor != "alice" || got.Incident != "01INC" {
		t.Fatalf("applied %+v", got)
	}
	h.contains("applied retries=off (action A1)")
	h.key("enter")
	if h.m.Dialog() != nil {
		t.Fatal("enter on the result did not close the dialog")
	}
	// The lever arrived through the change feed.
	h.contains("retries checkout->payment-gateway=off", "Levers (2)")
}

func TestDialogKindCycleFitsTarget(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	h.key("a", "tab") // reason → kind
	h.key("right")    // breaker: the edge stays
	h.contains("‹ breaker ›", "open")
	h.key("right") // autoscaling: a service only
	h.contains("‹ autoscaling ›", "frozen")
	h.lacks("checkout->payment-gateway")
	h.key("esc")
	if h.m.Dialog() != nil {
		t.Fatal("esc did not close the form")
	}
}

func TestGuardRefusalShown(t *testing.T) {
	w := newWorld()
	w.act.refuse = &actions.RefusedError{Guard: actions.GuardEvidence, Reason: "amplification is ok (1.02, crit > 1.3)",
		Hint: "pass --force to act without evidence"}
	h := w.open(t, Options{}, 120, 40)
	h.key("a")
	h.typeText("just in case")
	h.key("enter")
	h.contains("✗ evidence", "refused by the evidence guard: amplification is ok (1.02, crit > 1.3)", "enter/esc: back")
	h.lacks("to confirm:")
	h.typeText("checkout->payment-gateway")
	h.key("enter")
	if d := h.m.Dialog(); d == nil || d.Stage() != dialog.StageForm {
		t.Fatal("enter on a refused plan did not go back to the form")
	}
	if len(w.act.applied) != 0 {
		t.Fatal("a refused plan applied")
	}
}

func TestCountdownAndExpiry(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	h.contains("breaker payment-gateway=open  1m30s left", "seen by 5/6 · bob · gateway p99")
	h.fire(tickMsg{}, 30*time.Second)
	h.contains("breaker payment-gateway=open  1m0s left")
	h.fire(tickMsg{}, 61*time.Second)
	h.lacks("breaker payment-gateway")
	h.contains("no levers active: normal operation")
}

func TestStaleAndNoData(t *testing.T) {
	w := newWorld()
	w.q.stale["amplification"] = errors.New("prometheus: 503 Service Unavailable")
	w.q.noData["retry_ratio"] = "no series of stormctl_retries_total"
	h := w.open(t, Options{}, 80, 24)
	h.contains("STALE 4.00 ▲ CRIT", "no data")
	h.lacks("retry_ratio         checkout")
}

func TestRefreshIsOneAtATime(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	calls := w.q.calls
	w.q.gate = make(chan struct{})
	h.fire(refreshTickMsg{}, 10*time.Second)
	h.key("ctrl+r", "ctrl+r", "ctrl+r")
	close(w.q.gate)
	h.settle()
	if got := w.q.calls - calls; got != 1 {
		t.Fatalf("%d refreshes ran, want 1 while one was in flight", got)
	}
	h.contains("refreshed now")
}

func TestReadOnlyHidesActions(t *testing.T) {
	w := newWorld()
	h := newHarness(t, w.c, w.deps(), Options{ReadOnly: true, Actor: "alice"}, 120, 40)
	h.contains("READ-ONLY")
	h.lacks("pull a lever")
	h.key("a")
	if h.m.Dialog() != nil {
		t.Fatal("a opened the dialog in read-only mode")
	}
	h.key("tab") // levers
	h.lacks("release lever", "extend lever")
	h.key("r", "e")
	if h.m.Dialog() != nil {
		t.Fatal("r or e opened a dialog in read-only mode")
	}
	h.key("?")
	h.contains("read-only: every key")
	h.lacks("pull a lever", "release lever", "run selected step")
}

func TestReleaseFromLevers(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	h.key("tab", "r")
	h.contains("Release breaker payment-gateway=open", "releasing restores normal operation")
	h.typeText("gateway recovered")
	h.key("enter")
	h.settle()
	if len(w.act.released) != 1 || w.act.released[0] != "01HOLD gateway recovered" {
		t.Fatalf("released %v", w.act.released)
	}
	h.contains("released action 01HOLD")
}

func TestFilterByService(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 80, 24)
	h.key("/")
	h.typeText("search")
	h.key("enter")
	h.contains("Signals (service ~ search)", "search→index")
	h.lacks("checkout→payment-gateway", "breaker payment-gateway")
	h.key("/", "esc")
	h.contains("checkout→payment-gateway")
}

func TestJournalLive(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 200, 60)
	h.contains("no journal entries yet")
	w.j.follow <- journal.Entry{Time: t0, Event: journal.ActionApplied, Actor: "dave", Kind: "shed", Target: "checkout", Value: "20"}
	h.settle()
	h.contains("action.applied dave shed checkout=20")
}

func TestHelpFromKeymap(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	h.key("?")
	for _, b := range []string{"next section", "filter by service", "pull a lever", "release lever", "extend lever",
		"run selected step", "quit", "predict: stormctl policy analyze"} {
		h.contains(b)
	}
	h.key("x")
	h.lacks("Any key closes this help")
}

func TestQuit(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 80, 24)
	h.key("q")
	if !h.quit {
		t.Fatal("q did not quit")
	}
}

// playbookWorld runs the real retry-amplification playbook on fakes.
func playbookWorld(t *testing.T, w *world) Playbook {
	set, err := playbooks.Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := set.Get("retry-amplification")
	if err != nil {
		t.Fatal(err)
	}
	run, err := playbooks.NewRun(pb, playbooks.RunOptions{Params: map[string]string{"service": "checkout", "dependency": "payment-gateway"},
		Actor: "alice"}, playbooks.Env{Measurer: fakeMeasurer{q: w.q, now: w.c.Now}, Levers: fakeLevers{a: w.act}, Journal: nopJournal{}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestPlaybookSteps(t *testing.T) {
	w := newWorld()
	deps := w.deps()
	deps.Playbook = playbookWorld(t, w)
	h := newHarness(t, w.c, deps, Options{Actor: "alice"}, 120, 40)
	h.key("tab", "tab") // levers, playbook
	if h.m.Focus() != FocusPlaybook {
		t.Fatalf("focus %s", h.m.Focus())
	}
	h.contains("Playbook retry-amplification", "▶ ○ check  Retries are now the load")
	h.key("enter")
	h.settle()
	h.contains("✓ check  Retries are now the load", "step confirm-amplification passed")
	// Go on step by step: checkout names no degraded mode, so its two
	// steps are skipped; the 429s are retried, so the cap is skipped too
	// and the next step is turning retries off, run through the dialog.
	for range 7 {
		h.key("enter")
		h.settle()
	}
	h.contains("step retries-cap skipped", "›▶ ○ action Turn the caller's retries off")
	h.key("enter")
	h.settle()
	h.contains("Playbook step retries-off", "Type checkout->payment-gateway to confirm")
	h.typeText("checkout->payment-gateway")
	h.key("enter")
	h.settle()
	if len(w.act.applied) != 1 || w.act.applied[0].Target != "checkout->payment-gateway" {
		t.Fatalf("applied %+v", w.act.applied)
	}
	h.contains("step retries-off passed: applied retries=off on checkout->payment-gateway")
	h.key("esc")
	h.contains("✓ action Turn the caller's retries off")
}

// An action whose condition rests on a check not measured yet asks to be
// confirmed: the check is measured when it runs, not guessed from nothing.
func TestPlaybookActionBeforeItsCheck(t *testing.T) {
	w := newWorld()
	deps := w.deps()
	deps.Playbook = playbookWorld(t, w)
	h := newHarness(t, w.c, deps, Options{Actor: "alice"}, 120, 40)
	h.key("tab", "tab", "down", "down", "down", "down", "down", "down", "down")
	h.contains("› ○ action Cap the caller's retries at 2")
	h.key("enter")
	h.settle()
	h.contains("Playbook step retries-cap", "Type checkout->payment-gateway to confirm")
}

// With one shared Redis user the header says that roles and approvals are
// advisory; with per-person users it says nothing.
func TestHeaderSaysSharedIdentityIsAdvisory(t *testing.T) {
	w := newWorld()
	h := newHarness(t, w.c, w.deps(), Options{Actor: "alice", Advisory: "single identity: …"}, 160, 40)
	h.contains("shared Redis user: roles/approvals advisory (docs/identity.md)")
	h = newHarness(t, w.c, w.deps(), Options{Actor: "alice"}, 160, 40)
	h.lacks("roles/approvals advisory")
}
