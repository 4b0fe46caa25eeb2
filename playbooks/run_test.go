package playbooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

var checkoutPayments = map[string]string{"service": "checkout", "dependency": "payments"}

func TestRunAllRetryAmplification(t *testing.T) {
	w := newWorld(map[string][]*float64{
		"amplification":    {val(3.9), val(2.4), val(1.6), val(1.02)}, // check, then three polls
		"throttle_retries": {nil},
		"edge_error_rate":  {val(0.3)}, // the requests fail anyway: retries off
	})
	pb := builtin(t, "retry-amplification")
	r := newRun(t, pb, w, "INC1", checkoutPayments)
	if err := r.RunAll(context.Background(), Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	equal(t, w.j.events(), []string{
		"playbook.started",
		"playbook.step.passed confirm-amplification",
		"playbook.step.failed throttled-retries",
		"playbook.step.skipped shedding-note",
		"playbook.step.passed do-not-restart",
		"playbook.step.skipped degraded-mode", // checkout names no degraded mode
		"playbook.step.skipped edge-served",
		"playbook.step.failed retries-still-save-requests",
		"playbook.step.skipped retries-cap",
		"playbook.step.passed retries-off",
		"playbook.step.passed amplification-recovered",
		"playbook.step.passed afterwards",
		"playbook.finished",
	})
	for _, e := range w.j.entries {
		if e.Playbook != "retry-amplification" || e.PlaybookVersion != pb.Version || e.Incident != "INC1" || e.Actor != "alice" {
			t.Fatalf("entry not attributed to the run: %+v", e)
		}
	}
	if got := w.j.entries[len(w.j.entries)-1].Outcome; got != "completed" {
		t.Fatalf("finished %q", got)
	}
	if len(w.l.applied) != 1 {
		t.Fatalf("applied %d levers, want 1 (the rollback step must not run)", len(w.l.applied))
	}
	a := w.l.applied[0]
	if a.Kind != "retries" || a.Target != "checkout->payments" || a.Value != "off" || a.TTL != 30*time.Minute || !a.Yes ||
		a.IdempotencyKey != "playbook/INC1/retry-amplification/retries-off/retries/checkout->payments/off" ||
		a.Step != "retries-off" || a.Playbook != "retry-amplification" || !strings.Contains(a.Reason, "checkout sends several attempts per request to payments") {
		t.Fatalf("lever request %+v", a)
	}
	check := w.j.entries[1]
	if len(check.Evidence) != 1 || check.Evidence[0].Value != 3.9 || check.Evidence[0].Threshold != "> 1.3" || check.Evidence[0].Status != EvidenceMet {
		t.Fatalf("check evidence %+v", check.Evidence)
	}
	if got := w.j.entries[2].Outcome; got != OutcomeContinued {
		t.Fatalf("throttled-retries outcome %q", got)
	}
	wait, _ := r.State("amplification-recovered")
	if !strings.Contains(wait.Outcome, "amplification = 1.02, expected < 1.1: met (after ") {
		t.Fatalf("wait outcome %q", wait.Outcome)
	}
	if len(w.clock.sleeps) != 2 {
		t.Fatalf("slept %d times, want 2 (three polls)", len(w.clock.sleeps))
	}
	for _, d := range w.clock.sleeps {
		if d < 7500*time.Millisecond || d > 22500*time.Millisecond {
			t.Fatalf("sleep %s outside every 15s ± 50%%", d)
		}
	}
	if r.Next() != nil {
		t.Fatalf("next step %s after a completed run", r.Next().ID)
	}
}

// Retries that still save the caller's requests are capped, not turned
// off: off would turn every attempt they rescue into an error.
func TestCheckFailedStopsWithExit4(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.05)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC1", checkoutPayments)
	err := r.RunAll(context.Background(), Input{Yes: true})
	wantCode(t, err, exit.CheckFailed)
	var se *StepError
	if !errors.As(err, &se) || se.Step != "confirm-amplification" {
		t.Fatalf("error %v", err)
	}
	equal(t, w.j.events(), []string{"playbook.started", "playbook.step.failed confirm-amplification", "playbook.finished"})
	fin := w.j.entries[2]
	if fin.Outcome != "stopped" || !strings.Contains(fin.Error, "amplification = 1.05, expected > 1.3: unmet") {
		t.Fatalf("finished %+v", fin)
	}
	if len(w.l.applied) != 0 {
		t.Fatal("a lever was pulled after a failed check")
	}
}

// A refused action stops the run with the guard's exit code; a resumed run
// for the incident starts at the refused step, checks its evidence again
// and applies; re-running the step is then a no-op.
func TestRefusalThenResume(t *testing.T) {
	for _, code := range []int{exit.Refused, exit.Conflict} {
		w := newWorld(map[string][]*float64{"amplification": {val(3.9), val(3.5), val(1.0)}, "throttle_retries": {val(2)}, "edge_error_rate": {val(0.3)}})
		pb := builtin(t, "retry-amplification")
		w.l.refuse = refusal{code}
		r := newRun(t, pb, w, "INC7", checkoutPayments)
		err := r.RunAll(context.Background(), Input{Yes: true})
		wantCode(t, err, code)
		st, _ := r.State("retries-off")
		if st.Status != Failed || st.Outcome != OutcomeStopped {
			t.Fatalf("state %+v", st)
		}
		if n := len(w.j.entries); w.j.entries[n-1].Event != journal.PlaybookFinished || w.j.entries[n-2].Event != journal.PlaybookFailed {
			t.Fatalf("journal does not end with the failed step and the finish: %v", w.j.events())
		}

		history := append([]journal.Entry(nil), w.j.entries...)
		w.j.entries = nil
		again := newRun(t, pb, w, "INC7", checkoutPayments)
		again.Resume(history)
		if next := again.Next(); next == nil || next.ID != "retries-off" {
			t.Fatalf("resume starts at %v, want retries-off", next)
		}
		if err := again.RunAll(context.Background(), Input{Yes: true}); err != nil {
			t.Fatal(err)
		}
		equal(t, w.j.events(), []string{
			"playbook.started",
			"playbook.step.passed confirm-amplification", // evaluated again: the evidence must be fresh
			"playbook.step.passed retries-off",
			"playbook.step.passed amplification-recovered",
			"playbook.step.passed afterwards",
			"playbook.finished",
		})

		w.j.entries = nil
		w.m.values["amplification"] = []*float64{val(1.0)} // the storm is over: the re-run must still be a no-op
		st, err = again.RunStep(context.Background(), "retries-off", Input{Yes: true})
		if err != nil || !strings.Contains(st.Outcome, "already applied by this step for incident INC7") {
			t.Fatalf("re-run: %v %q", err, st.Outcome)
		}
		equal(t, w.j.events(), []string{"playbook.started", "playbook.step.passed retries-off"})
		if len(w.l.applied) != 1 {
			t.Fatalf("applied %d times, want once", len(w.l.applied))
		}
	}
}

func TestRequirementRefusedWhenEvidenceGone(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(1.0)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.01)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC1", checkoutPayments)
	_, err := r.RunStep(context.Background(), "retries-cap", Input{Yes: true})
	wantCode(t, err, exit.Refused)
	var re *RequirementError
	if !errors.As(err, &re) || re.Required != "confirm-amplification" {
		t.Fatalf("error %v", err)
	}
	if len(w.l.applied) != 0 {
		t.Fatal("applied without evidence")
	}
	equal(t, w.j.events(), []string{"playbook.started", "playbook.step.failed throttled-retries", "playbook.step.passed retries-still-save-requests",
		"playbook.step.failed confirm-amplification", "playbook.step.failed retries-cap"})
}

// The pool does not drain within the wait, so the when: failed branch sheds.
func TestWaitTimeoutContinuesIntoConditionalStep(t *testing.T) {
	pool := append([]*float64{val(0.98)}, repeat(0.95, 30)...)
	w := newWorld(map[string][]*float64{"pool_saturation": append(pool, val(0.3)), "demanded_concurrency": {val(2.5)}})
	pb := builtin(t, "shared-pool-exhaustion")
	r := newRun(t, pb, w, "INC2", map[string]string{"service": "checkout", "dependency": "inventory"})
	start := w.clock.now
	if err := r.RunAll(context.Background(), Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	drain, _ := r.State("pool-draining")
	if drain.Status != Failed || drain.Outcome != OutcomeContinued || !strings.Contains(drain.Error, "did not reach < 0.7 within 2m0s") {
		t.Fatalf("pool-draining %+v", drain)
	}
	if len(w.l.applied) != 2 || w.l.applied[1].Kind != "shed" || w.l.applied[1].Value != "20" || w.l.applied[1].Target != "checkout" {
		t.Fatalf("applied %+v", w.l.applied)
	}
	var waited time.Duration
	for _, d := range w.clock.sleeps {
		waited += d
	}
	if drainEnd := start.Add(2 * time.Minute); waited < 2*time.Minute || w.clock.now.Before(drainEnd) {
		t.Fatalf("waited %s", waited)
	}
	if rec, _ := r.State("pool-recovered"); rec.Status != Passed {
		t.Fatalf("pool-recovered %+v", rec)
	}
}

func TestWaitTimeoutStopsWithExit4(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(3.9)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.3)}})
	r := newRun(t, builtin(t, "retry-amplification"), w, "", checkoutPayments)
	err := r.RunAll(context.Background(), Input{Yes: true})
	wantCode(t, err, exit.CheckFailed)
	if !strings.Contains(err.Error(), "amplification did not reach < 1.1 within 5m0s; last: amplification = 3.9") {
		t.Fatalf("error %v", err)
	}
	var total time.Duration
	for _, d := range w.clock.sleeps {
		total += d
	}
	if total != 5*time.Minute {
		t.Fatalf("polled for %s, want exactly the 5m bound", total)
	}
	if w.l.applied[0].IdempotencyKey != "" {
		t.Fatal("a run without an incident must not claim an idempotency key")
	}
}

// A wait's for: window must lie after the wait began: calm in the minute
// before a lever was pulled proves nothing about after it.
func TestWaitForWindowStartsWithTheWait(t *testing.T) {
	src := `apiVersion: stormctl/v1
kind: Playbook
name: hold
title: t
steps:
  - id: holds
    type: wait
    query: amplification
    expect: "< 1.3"
    for: 1m
    timeout: 3m
    every: 10s
`
	pb, err := Parse("hold.yaml", []byte(src), catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(map[string][]*float64{"amplification": {val(1.0)}})
	r := newRun(t, pb, w, "", nil)
	start := w.clock.now
	st, err := r.RunStep(context.Background(), "holds", Input{})
	if err != nil || st.Status != Passed {
		t.Fatalf("%+v %v", st, err)
	}
	if waited := w.clock.now.Sub(start); waited < time.Minute {
		t.Fatalf("passed after %s, before its 1m window had passed", waited)
	}
	if w.m.reqs[0].Over != "max_over_time" || w.m.reqs[0].Window != time.Minute {
		t.Fatalf("request %+v", w.m.reqs[0])
	}
	bad := strings.Replace(src, "timeout: 3m", "timeout: 30s", 1)
	if _, err := Parse("hold.yaml", []byte(bad), catalog(t)); err == nil || !strings.Contains(err.Error(), "hold.yaml:11:14: timeout 30s is shorter than for 1m0s") {
		t.Fatalf("timeout shorter than for: %v", err)
	}
}

// An interrupt during a wait stops the run and still journals the step
// and the run as stopped, so the record says where it ended.
func TestInterruptedWaitIsJournaled(t *testing.T) {
	w := newWorld(map[string][]*float64{"amplification": {val(3.9)}, "throttle_retries": {val(0)}, "edge_error_rate": {val(0.3)}})
	ctx, cancel := context.WithCancel(context.Background())
	env := w.env()
	env.Progress = func(step string, _ Measurement, _ bool, _ error) { cancel() }
	r, err := NewRun(builtin(t, "retry-amplification"), RunOptions{Params: checkoutPayments, Incident: "INC9", Actor: "alice"}, env)
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunAll(ctx, Input{Yes: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	n := len(w.j.entries)
	if e := w.j.entries[n-2]; e.Event != journal.PlaybookFailed || e.Step != "amplification-recovered" || e.Outcome != OutcomeStopped {
		t.Fatalf("step entry %+v", e)
	}
	if e := w.j.entries[n-1]; e.Event != journal.PlaybookFinished || e.Outcome != "stopped" {
		t.Fatalf("finish entry %+v", e)
	}
}

func TestMeasurementErrorExits1(t *testing.T) {
	w := newWorld(nil)
	r := newRun(t, builtin(t, "retry-amplification"), w, "INC1", checkoutPayments)
	err := r.RunAll(context.Background(), Input{Yes: true})
	wantCode(t, err, exit.Error)
	if !strings.Contains(err.Error(), "could not evaluate amplification: prometheus unreachable") {
		t.Fatalf("error %v", err)
	}
}

func TestAskAndRelease(t *testing.T) {
	w := newWorld(nil)
	pb := builtin(t, "lockstep-retries")
	r := newRun(t, pb, w, "INC3", checkoutPayments)
	if _, err := r.RunStep(context.Background(), "idempotent", Input{Answer: "maybe"}); exit.Code(err) != exit.Usage || len(w.j.entries) != 0 {
		t.Fatalf("answer outside the choices: %v, journaled %v", err, w.j.events())
	}
	st, err := r.RunStep(context.Background(), "idempotent", Input{})
	if err != nil || st.Answer != "unknown" || w.j.entries[len(w.j.entries)-1].Value != "unknown" {
		t.Fatalf("default answer: %+v %v", st, err)
	}
	st, err = r.RunStep(context.Background(), "retries-restore", Input{})
	if err != nil || !strings.HasPrefix(st.Outcome, "nothing to release") {
		t.Fatalf("release with nothing held: %+v %v", st, err)
	}
	if st.RollbackOf != "retries-cap, retries-off" {
		t.Fatalf("rollback of %q", st.RollbackOf)
	}
}

// A step's window reaches the measurer with the function that makes the
// expectation hold throughout it (for) or at some moment of it (within).
func TestWindowsReachTheMeasurer(t *testing.T) {
	w := newWorld(map[string][]*float64{"breaker_open_fraction": {val(0.4)}, "replica_churn": {val(0)}})
	r := newRun(t, builtin(t, "fleet-breaker-amnesia"), w, "INC5", map[string]string{"service": "risk-agent", "dependency": "model-provider"})
	for _, id := range []string{"breakers-disagree", "fleet-agrees"} {
		if _, err := r.RunStep(context.Background(), id, Input{}); err != nil && id == "breakers-disagree" {
			t.Fatal(err)
		}
	}
	got := []string{}
	for _, m := range w.m.reqs {
		got = append(got, m.Query+" "+m.Over+" "+m.Window.String()+" "+m.Params["service"])
	}
	equal(t, got[:2], []string{"breaker_open_fraction max_over_time 2m0s risk-agent", "breaker_open_fraction max_over_time 1m0s risk-agent"})
	st, _ := r.State("breakers-disagree")
	if st.Outcome != "breaker_open_fraction = 0.4, expected > 0 within 2m0s: met" {
		t.Fatalf("outcome %q", st.Outcome)
	}
}

func TestJudgeMatchAndNoData(t *testing.T) {
	mk := func(match, noData, expect string) *Step {
		s := &Step{Query: "pool_saturation", Match: match, NoData: noData}
		s.expect, _ = ParseExpectation(expect)
		return s
	}
	two := Measurement{Series: []SeriesValue{{Labels: map[string]string{"pool": "a"}, Value: 0.9}, {Labels: map[string]string{"pool": "b"}, Value: 0.2}}}
	cases := []struct {
		step *Step
		m    Measurement
		want bool
	}{
		{mk("", "", "> 0.7"), two, false},
		{mk("any", "", "> 0.7"), two, true},
		{mk("", "", "< 0.95"), two, true},
		{mk("", "", "< 1"), Measurement{}, false},
		{mk("", "pass", "< 1"), Measurement{}, true},
		{mk("any", "", "> 0"), Measurement{Series: []SeriesValue{{Value: nan()}}}, false},
		{mk("", "pass", "< 1"), Measurement{Series: []SeriesValue{{Value: nan()}}}, true},
		{mk("", "", "< 0.95"), Measurement{Series: append(two.Series, SeriesValue{Labels: map[string]string{"pool": "c"}, Value: nan()})}, true},
	}
	for i, c := range cases {
		met, ev, summary := judge(c.step, c.m)
		if met != c.want {
			t.Errorf("case %d: met %v, want %v (%s)", i, met, c.want, summary)
		}
		for _, e := range ev {
			if _, err := (journal.Entry{Evidence: []journal.Evidence{e}}).Canonical(); err != nil {
				t.Errorf("case %d: evidence cannot be journaled: %v", i, err)
			}
		}
	}
	_, ev, _ := judge(mk("any", "", "> 0.7"), two)
	if ev[0].Query != `pool_saturation{pool="a"}` || ev[0].Status != EvidenceMet {
		t.Fatalf("deciding series not first: %+v", ev)
	}
}
