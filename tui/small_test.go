package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/actions"
)

// At 80×24 the dialog shows its refusal and its esc hint, and the help
// line keeps `q quit` whatever section has the focus.
func TestEightyByTwentyFour(t *testing.T) {
	w := newWorld()
	w.act.refuse = &actions.RefusedError{Guard: actions.GuardEvidence, Reason: "no evidence supports retries=off on checkout->payment-gateway " +
		"(amplification: prometheus query http://127.0.0.1:9090: connection refused (is Prometheus listening at this address?); " +
		"retry_ratio: prometheus query http://127.0.0.1:9090: connection refused (is Prometheus listening at this address?)); " +
		"it needs amplification or retry_ratio at or past its warn threshold",
		Hint: "act anyway with --force (journaled as forced)"}
	h := w.open(t, Options{}, 80, 24)
	for range 4 {
		lines := strings.Split(h.view(), "\n")
		if last := lines[len(lines)-1]; !strings.Contains(last, "q quit") {
			t.Fatalf("focus %s: the help line lacks q quit: %q", h.m.Focus(), last)
		}
		h.key("tab")
	}
	h.key("a")
	h.typeText("just in case")
	h.key("enter")
	// The whole reason, wrapped, and the way back.
	h.contains("refused by the evidence guard: no evidence supports", "past its warn threshold; act anyway with --force (journaled as forced)",
		"enter/esc: back")
	v := h.view()
	if lines := strings.Split(v, "\n"); !strings.Contains(lines[len(lines)-1], "esc") {
		t.Fatalf("the help line lacks the dialog's esc:\n%s", v)
	}
	checkSize(t, v, 80, 24)
}

// A note step is guidance to read: selected, it shows its text, with the
// run's parameters inserted.
func TestNoteStepShowsText(t *testing.T) {
	w := newWorld()
	deps := w.deps()
	deps.Playbook = playbookWorld(t, w)
	h := newHarness(t, w.c, deps, Options{Actor: "alice"}, 120, 40)
	h.key("tab", "tab")
	for range 10 {
		if s, ok := h.m.playbook.Selected(); ok && s.Title == "Do not restart or scale the caller" {
			break
		}
		h.key("down")
	}
	h.contains("Do not restart checkout and do not add", "replicas: new pods reconnect at once")
	h.lacks("{{ .params")
	checkSize(t, h.view(), 120, 40)
}

// downActions is an action service that cannot reach the control plane.
type downActions struct{ *fakeActions }

func (downActions) Plan(context.Context, actions.Spec) (*actions.Result, error) {
	return nil, errors.New("control plane redis://127.0.0.1:1 unreachable")
}

// Started without Redis, the dashboard still opens the dialog, plans, and
// says why nothing could be done.
func TestDialogWithoutStore(t *testing.T) {
	w := newWorld()
	h := newHarness(t, w.c, Deps{Querier: w.q, Actions: downActions{&fakeActions{now: w.c.Now, store: w.st}}}, Options{Actor: "alice"}, 80, 24)
	h.key("a")
	h.typeText("amplification 4x")
	h.key("enter")
	h.settle()
	h.contains("127.0.0.1:1 unreachable", "esc")
	checkSize(t, h.view(), 80, 24)
}
