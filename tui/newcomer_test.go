package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/styles"
)

// A refusal that --force would let through offers it: f plans again with
// force, the plan shows the evidence guard forced, and the apply carries
// Force (the service still waits for the evidence, bounded, and journals
// the action as forced).
func TestRefusalOffersForce(t *testing.T) {
	w := newWorld()
	w.act.refuse = &actions.RefusedError{Guard: actions.GuardEvidence, Reason: "no evidence supports retries=off on checkout->payment-gateway",
		Hint: "act anyway with --force (journaled as forced)"}
	h := w.open(t, Options{}, 120, 40)
	h.key("a")
	h.typeText("just in case")
	h.key("enter")
	h.contains("refused by the evidence guard", "f: plan again with --force")
	h.key("f")
	h.settle()
	h.contains("! evidence", "Type checkout->payment-gateway to confirm")
	h.lacks("f: plan again")
	h.typeText("checkout->payment-gateway")
	h.key("enter")
	h.settle()
	if len(w.act.applied) != 1 || !w.act.applied[0].Force {
		t.Fatalf("applied %+v, want one forced apply", w.act.applied)
	}
	// Back to the form and planning again starts unforced.
	w.act.applied = nil
	h.key("enter", "a")
	h.typeText("again")
	h.key("enter")
	h.contains("f: plan again with --force")
}

// A refusal force cannot overcome (here the policy guard) offers nothing,
// and f does nothing.
func TestRefusalWithoutForceOffersNone(t *testing.T) {
	w := newWorld()
	w.act.refuse = &actions.RefusedError{Guard: actions.GuardPolicy, Reason: "victor is viewer"}
	h := w.open(t, Options{}, 120, 40)
	h.key("a")
	h.typeText("just in case")
	h.key("enter")
	h.contains("refused by the policy guard")
	h.lacks("f: plan again")
	h.key("f")
	h.settle()
	h.contains("refused by the policy guard")
	if len(w.act.applied) != 0 {
		t.Fatal("a refused plan applied")
	}
}

// Under NO_COLOR (the tests' plain profile) reverse video shows nothing:
// the selected row carries a marker, and moves with the selection.
func TestNoColorSelectionMarker(t *testing.T) {
	w := newWorld()
	h := w.open(t, Options{}, 120, 40)
	if !styles.DefaultStyles().NoColor {
		t.Skip("not the plain profile")
	}
	marked := func() string {
		t.Helper()
		var rows []string
		for _, l := range strings.Split(h.view(), "\n") {
			if strings.Contains(l, common.SelectMark) {
				rows = append(rows, l)
			}
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows marked, want 1:\n%s", len(rows), h.view())
		}
		return rows[0]
	}
	first := marked()
	if !strings.Contains(first, common.SelectMark+"amplification  checkout→payment-gateway") {
		t.Fatalf("the first signal is not marked: %q", first)
	}
	h.key("down")
	if second := marked(); second == first || !strings.Contains(second, common.SelectMark+"amplification  search→index") {
		t.Fatalf("after down: %q", second)
	}
	h.key("tab") // the levers
	if l := marked(); !strings.Contains(l, common.SelectMark+"breaker payment-gateway=open") {
		t.Fatalf("levers: %q", l)
	}
}

// unreadableJournal serves two records that do not parse among its entries.
type unreadableJournal struct{ *fakeJournal }

func (j unreadableJournal) Tail(ctx context.Context, n int64) ([]journal.Record, error) {
	recs, err := j.fakeJournal.Tail(ctx, n)
	bad := []journal.Record{{Pos: "0-1", Data: []byte("{not json")}, {Pos: "0-2", Data: []byte(`{"event": 7}`)}}
	return append(bad, recs...), err
}

// The journal panel says how many records it could not show.
func TestJournalSaysUnreadable(t *testing.T) {
	w := newWorld()
	w.j.tail = []journal.Entry{{Event: journal.Note, Actor: "bob", Reason: "looking"}}
	deps := w.deps()
	deps.Journal = unreadableJournal{w.j}
	h := newHarness(t, w.c, deps, Options{Actor: "alice"}, 160, 50)
	h.contains("Journal (2 unreadable", "looking")
	clean := w.open(t, Options{}, 160, 50)
	if strings.Contains(clean.view(), "unreadable") {
		t.Fatal("a readable journal says unreadable")
	}
}
