package playbooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// labRun is one built-in playbook run unattended against a lab scenario
// at simulated time at; levers are "kind target" → the value held after
// the run ("" for released).
type labRun struct {
	playbook string
	at       time.Duration
	params   map[string]string
	levers   map[string]string
	// passed are steps whose evidence the lab must show.
	passed []string
}

// labCases pair each incident shape of DOMAIN.md with the scenario that
// reproduces it; staged recovery follows the fleet response once the
// provider's fault is over.
var labCases = []struct {
	name, scenario string
	runs           []labRun
}{
	{"retry-amplification", "gateway-blip", []labRun{{playbook: "retry-amplification", at: 3*time.Minute + 30*time.Second,
		params: map[string]string{"service": "checkout", "dependency": "payment-gateway"},
		// At 3m30s the retries still rescue checkout's requests: capped, not off.
		levers: map[string]string{"retries checkout->payment-gateway": "cap:2"}}}},
	{"shared-pool-exhaustion", "inventory-failover", []labRun{{playbook: "shared-pool-exhaustion", at: 3 * time.Minute,
		params: map[string]string{"service": "checkout", "dependency": "inventory", "pool": "http"},
		levers: map[string]string{"breaker checkout->inventory": "open"},
		passed: []string{"pool-saturated", "demand-exceeds-pool"}}}},
	{"lockstep-retries", "payments-slow", []labRun{{playbook: "lockstep-retries", at: 3 * time.Minute,
		params: map[string]string{"service": "checkout", "dependency": "payments"},
		levers: map[string]string{"retries checkout->payments": "off"}}}},
	{"layered-retries", "model-provider", []labRun{{playbook: "layered-retries", at: 3 * time.Minute,
		params: map[string]string{"edge": "checkout-api", "layer": "risk-agent", "dependency": "model-provider"},
		levers: map[string]string{"retries risk-agent->model-provider": "off"}}}},
	{"fleet-breaker-amnesia+staged-recovery", "model-provider", []labRun{
		{playbook: "fleet-breaker-amnesia", at: 3*time.Minute + 15*time.Second,
			params: map[string]string{"service": "risk-agent", "dependency": "model-provider"},
			levers: map[string]string{"autoscaling risk-agent": "frozen", "breaker model-provider": "open", "degraded risk-agent": "on"}},
		{playbook: "staged-recovery", at: 9 * time.Minute,
			params: map[string]string{"service": "risk-agent", "dependency": "model-provider"},
			levers: map[string]string{"retries risk-agent->model-provider": "cap:2", "autoscaling risk-agent": "",
				"breaker model-provider": "", "degraded risk-agent": ""}},
	}},
}

// TestBuiltinsAgainstTheLab runs each built-in playbook end to end, with
// every guard and the real journal, against the scenario of its incident
// shape: its levers reach the simulated fleet through the flags provider
// from a real redis-server, and its wait steps observe the recovery in the
// lab's Prometheus API.
func TestBuiltinsAgainstTheLab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the storm lab against redis-server for minutes of simulated time")
	}
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	cat := catalog(t)
	for _, c := range labCases {
		t.Run(c.name, func(t *testing.T) {
			s := startLab(t, rd, cat, c.scenario)
			for _, run := range c.runs {
				s.until(t, run.at)
				s.runBuiltin(t, run)
			}
		})
	}
}

func (s *labStack) runBuiltin(t *testing.T, run labRun) {
	t.Helper()
	ctx := context.Background()
	inc := s.incident(t)
	r, err := NewRun(builtin(t, run.playbook), RunOptions{Params: run.params, Incident: inc, Actor: "alice", Reason: "lab rehearsal"}, s.env)
	if err != nil {
		t.Fatal(err)
	}
	start := s.lab.Sim.Now()
	err = r.RunAll(ctx, Input{Yes: true})
	for _, st := range r.Steps() {
		t.Logf("%s %-7s %-24s %-7s %s %s", run.playbook, st.Type, st.ID, st.Status, st.Outcome, st.Error)
	}
	if err != nil {
		t.Fatalf("%s stopped after %s simulated: %v", run.playbook, s.lab.Sim.Now()-start, err)
	}
	for _, id := range run.passed {
		if st, ok := r.State(id); !ok || st.Status != Passed {
			t.Errorf("step %s: %+v, want passed", id, st)
		}
	}
	t.Logf("%s completed at %s, in %s simulated", run.playbook, s.lab.Sim.Now().Round(time.Second), (s.lab.Sim.Now() - start).Round(time.Second))
	for kt, want := range run.levers {
		kind, target, _ := strings.Cut(kt, " ")
		l, _, _, err := s.store.Get(ctx, lever.Kind(kind), target)
		switch {
		case err != nil:
			t.Fatal(err)
		case want == "" && l != nil:
			t.Errorf("lever %s still held: %+v", kt, l)
		case want != "" && (l == nil || l.Value != want):
			t.Errorf("lever %s: %+v, want %s", kt, l, want)
		}
	}
	md := s.markdown(t, inc)
	if !strings.Contains(md, "## Playbook `"+run.playbook+"`") || strings.Count(md, "## Playbook") != 1 {
		t.Errorf("the timeline does not group the run under one playbook section:\n%s", md)
	}
	es := s.entries(t)
	if last := es[len(es)-1]; last.Event != journal.PlaybookFinished || last.Outcome != "completed" {
		t.Errorf("the journal ends with %+v", last)
	}
}

// The retry-amplification runbook against gateway-blip, the hard way: too
// early the evidence is absent and the cap is refused (exit 3); in the
// storm another responder holds the lever (exit 6); once they hand over,
// the run resumes at the refused step, pulls the lever and sees the storm
// end. The journal stays a verified chain throughout.
func TestRetryAmplificationRefusalsAndResumeInTheLab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the storm lab against redis-server")
	}
	ctx := context.Background()
	s := startLab(t, testenv.StartRedis(t, testenv.RedisOptions{}), catalog(t), "gateway-blip")
	inc := s.incident(t)
	pb := builtin(t, "retry-amplification")
	opts := RunOptions{Params: map[string]string{"service": "checkout", "dependency": "payment-gateway"}, Incident: inc, Actor: "alice"}
	newRun := func() *Run {
		r, err := NewRun(pb, opts, s.env)
		if err != nil {
			t.Fatal(err)
		}
		r.Resume(s.entries(t))
		return r
	}

	s.until(t, time.Minute)
	r := newRun()
	// The cap's condition rests on checks not run yet: they run first.
	_, err := r.RunStep(ctx, "retries-cap", Input{Yes: true})
	if code := exit.Code(err); code != exit.Refused || !strings.Contains(err.Error(), "requires step confirm-amplification") {
		t.Fatalf("before the storm: exit %d, %v", code, err)
	}

	// By 4m30s the retries have spent the gateway's rate limit and its 429s
	// are being retried too.
	s.until(t, 4*time.Minute+30*time.Second)
	bob, err := s.svc.Apply(ctx, actions.Spec{Kind: "retries", Target: "checkout->payment-gateway", Value: "cap:2", TTL: 10 * time.Minute,
		Reason: "bob caps it by hand", Actor: "bob", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	// The checks recorded before the storm no longer tell: the conditions
	// that rest on them evaluate them again.
	err = newRun().RunAll(ctx, Input{Yes: true})
	if code := exit.Code(err); code != exit.Conflict || !strings.Contains(err.Error(), "of bob") {
		t.Fatalf("with bob's lever: exit %d, %v", code, err)
	}
	if l, _, _, _ := s.store.Get(ctx, lever.Retries, "checkout->payment-gateway"); l == nil || l.Actor != "bob" {
		t.Fatalf("the refused run changed the lever: %+v", l)
	}

	if _, err := s.svc.Release(ctx, bob.ActionID, "bob", "the playbook takes over"); err != nil {
		t.Fatal(err)
	}
	r = newRun()
	if next := r.Next(); next == nil || next.ID != "retries-off" {
		t.Fatalf("resumes at %v, want retries-off", next)
	}
	if err := r.RunAll(ctx, Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	wait, _ := r.State("amplification-recovered")
	if wait.Status != Passed || wait.Evidence[0].Value >= 1.1 {
		t.Fatalf("recovery not observed: %+v", wait)
	}
	var events []string
	for _, e := range s.entries(t) {
		if e.Playbook == pb.Name && e.Event != journal.PlaybookStarted && e.Event != journal.PlaybookFinished {
			events = append(events, strings.TrimSpace(string(e.Event)+" "+e.Step))
		}
	}
	equal(t, events, []string{
		"playbook.step.failed throttled-retries", "playbook.step.passed retries-still-save-requests", // too early
		"playbook.step.failed confirm-amplification", "playbook.step.failed retries-cap",
		"playbook.step.passed confirm-amplification", "playbook.step.passed throttled-retries", "playbook.step.passed shedding-note",
		"playbook.step.passed do-not-restart", "playbook.step.skipped degraded-mode", "playbook.step.skipped edge-served",
		"playbook.step.skipped retries-still-save-requests", // the 429s are retried by now
		"playbook.step.skipped retries-cap",
		"action.refused retries-off", "playbook.step.failed retries-off", // bob's lever
		"playbook.step.passed confirm-amplification", "action.applied retries-off", "playbook.step.passed retries-off", // resumed
		"playbook.step.passed amplification-recovered", "playbook.step.passed afterwards",
	})
}
