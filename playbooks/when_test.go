package playbooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRetriesThatStillSaveRequestsAreCapped(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.47), val(1.02)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC3", checkoutPayments)
	if err := r.RunAll(context.Background(), Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if len(w.l.applied) != 1 || w.l.applied[0].Value != "cap:2" || w.l.applied[0].Step != "retries-cap" {
		t.Fatalf("applied %+v, want retries cap:2 only", w.l.applied)
	}
	if off, _ := r.State("retries-off"); off.Status != Skipped || !strings.Contains(off.Outcome, "retries-cap passed, not skipped") {
		t.Fatalf("retries-off %+v", off)
	}
}

// A condition resting on a check that an earlier run recorded evaluates
// it again: the requests succeeded then, they fail now, so the cap is
// skipped and retries go off.
func TestResumedConditionIsEvaluatedAgain(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.5)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01), val(0.4)}})
	pb := builtin(t, "retry-amplification")
	if _, err := newRun(t, pb, w, "INC4", checkoutPayments).RunStep(context.Background(), "retries-still-save-requests", Input{}); err != nil {
		t.Fatal(err)
	}
	later := newRun(t, pb, w, "INC4", checkoutPayments)
	later.Resume(w.j.entries)
	if st, _ := later.State("retries-still-save-requests"); st.Status != Passed || !st.Earlier {
		t.Fatalf("resumed state %+v, want passed earlier", st)
	}
	if st, err := later.RunStep(context.Background(), "retries-cap", Input{Yes: true}); err != nil || st.Status != Skipped {
		t.Fatalf("cap %+v, %v; want skipped on the evidence of now", st, err)
	}
	if _, err := later.RunStep(context.Background(), "retries-off", Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if len(w.l.applied) != 1 || w.l.applied[0].Value != "off" {
		t.Fatalf("applied %+v, want retries off", w.l.applied)
	}
	if w.m.calls["edge_error_rate"] != 2 {
		t.Fatalf("edge_error_rate measured %d times, want twice (once per run)", w.m.calls["edge_error_rate"])
	}
}

// An else-branch follows its step's condition of now, not that an earlier
// run ran that step: the cap applied when the retries saved the requests;
// once they fail, retries off runs on its own, without the cap being
// pulled again, and while they still save them it is skipped. A cap an
// earlier run skipped stays skipped: the resumed run does not go back to
// it, so retries off runs.
func TestElseFollowsTheConditionOfNow(t *testing.T) {
	for _, tc := range []struct {
		then, now float64 // the caller's edge error rate in the earlier run and now
		want      Status
		applied   []string
	}{
		{0.01, 0.4, Passed, []string{"cap:2", "off"}},
		{0.01, 0.01, Skipped, []string{"cap:2"}},
		{0.4, 0.01, Passed, []string{"off"}},
	} {
		w := newWorld(map[string][]*float64{"amplification": {val(1.5)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(tc.then), val(tc.now)}})
		pb := builtin(t, "retry-amplification")
		ctx := context.Background()
		first := newRun(t, pb, w, "INC9", checkoutPayments)
		for _, id := range []string{"confirm-amplification", "throttled-retries", "retries-still-save-requests", "retries-cap"} {
			if _, err := first.RunStep(ctx, id, Input{Yes: true}); err != nil {
				t.Fatal(id, err)
			}
		}
		later := newRun(t, pb, w, "INC9", checkoutPayments)
		later.Resume(w.j.entries)
		if tc.then < 0.05 && later.Skips("retries-off") {
			t.Fatal("resumed: retries-off ruled out on the cap an earlier run applied, before measuring")
		}
		st, err := later.RunStep(ctx, "retries-off", Input{Yes: true})
		if err != nil || st.Status != tc.want {
			t.Fatalf("edge errors %.2f then %.2f: retries-off %+v, %v; want %s", tc.then, tc.now, st, err, tc.want)
		}
		if tc.want == Skipped && !strings.Contains(st.Outcome, "retries-cap would run now") {
			t.Fatalf("skipped for %q, want the cap's condition of now", st.Outcome)
		}
		var values []string
		for _, a := range w.l.applied {
			values = append(values, a.Value)
		}
		equal(t, values, tc.applied)
	}
}

// Within one run too: a check from a minute and more ago is measured
// again before a condition rests on it; a recent one is taken as is.
func TestOldConditionIsMeasuredAgain(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.5)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01), val(0.4)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC6", checkoutPayments)
	ctx := context.Background()
	if _, err := r.RunStep(ctx, "retries-still-save-requests", Input{}); err != nil {
		t.Fatal(err)
	}
	w.clock.now = w.clock.now.Add(30 * time.Second)
	if r.Skips("retries-cap") || !r.Skips("retries-off") {
		t.Fatal("30s after the check: the cap should apply and retries off be ruled out")
	}
	w.clock.now = w.clock.now.Add(time.Minute)
	if r.Skips("retries-cap") {
		t.Fatal("a check over a minute old rules the cap out before it is measured again")
	}
	if st, err := r.RunStep(ctx, "retries-cap", Input{Yes: true}); err != nil || st.Status != Skipped {
		t.Fatalf("cap %+v, %v; want skipped on the check measured again", st, err)
	}
	if w.m.calls["edge_error_rate"] != 2 {
		t.Fatalf("edge_error_rate measured %d times, want twice", w.m.calls["edge_error_rate"])
	}
}

// An action's required check passed minutes ago is measured again before
// the lever is pulled, and the action refused when it no longer holds.
func TestOldRequirementIsMeasuredAgain(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.5), val(1.05)}, "throttle_retries": {val(2)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC8", checkoutPayments)
	ctx := context.Background()
	for _, id := range []string{"confirm-amplification", "throttled-retries", "retries-cap"} {
		if _, err := r.RunStep(ctx, id, Input{Yes: true}); err != nil {
			t.Fatal(id, err)
		}
	}
	w.clock.now = w.clock.now.Add(2 * time.Minute)
	_, err := r.RunStep(ctx, "retries-off", Input{Yes: true})
	var re *RequirementError
	if !errors.As(err, &re) || re.Required != "confirm-amplification" {
		t.Fatalf("retries off on a 2-minute-old check: %v; want refused on confirm-amplification measured again", err)
	}
	if w.m.calls["amplification"] != 2 || len(w.l.applied) != 0 {
		t.Fatalf("amplification measured %d times, levers applied %v; want twice and none", w.m.calls["amplification"], w.l.applied)
	}
}

// A caller with a degraded mode enters it before its retries are touched;
// one without runs the playbook as before, the degraded steps skipped
// because the parameter is not given.
func TestDegradedModeWhenGiven(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.47), val(1.02)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01)}})
	params := map[string]string{"service": "checkout", "dependency": "payments", "mode": "defer-payment"}
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC5", params)
	if err := r.RunAll(context.Background(), Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if len(w.l.applied) != 2 || w.l.applied[0].Kind != "degraded" || w.l.applied[0].Target != "checkout" ||
		w.l.applied[0].Value != "defer-payment" || w.l.applied[1].Value != "cap:2" {
		t.Fatalf("applied %+v, want degraded checkout=defer-payment, then retries cap:2", w.l.applied)
	}
	if st, _ := r.State("edge-served"); st.Status != Passed {
		t.Fatalf("edge-served %+v", st)
	}

	w = newWorld(map[string][]*float64{"amplification": {val(1.47), val(1.02)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01)}})
	r = newRun(t, builtin(t, "retry-amplification"), w, "INC6", checkoutPayments)
	st, err := r.RunStep(context.Background(), "degraded-mode", Input{Yes: true})
	if err != nil || st.Status != Skipped || st.Outcome != "when: parameter mode is not given" || len(w.l.applied) != 0 {
		t.Fatalf("degraded-mode without a mode: %+v, %v, applied %+v", st, err, w.l.applied)
	}
}
