package lab

import (
	"context"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// loopStep is how far the simulation runs between two looks at the lab.
const loopStep = 5 * time.Second

// closedLoops pairs each scenario with its playbook's lever (retry-amplification,
// and layered-retries' inner-retries-off for model-provider) and the bounds
// the lever must meet: amplification of the lever's call below 1.1 within
// amplBound of the lever, and edge success back to 95% within okBound of the
// later of the lever and the fault's end.
var closedLoops = []struct {
	scenario          string
	target            string
	amplBound         time.Duration
	okBound           time.Duration
	persistingOKBelow float64 // edge success two minutes after the fault, without the lever
}{
	{"gateway-blip", "checkout->payment-gateway", 75 * time.Second, 2 * time.Minute, 0.5},
	{"inventory-failover", "checkout->inventory", 75 * time.Second, 2 * time.Minute, 0.5},
	{"payments-slow", "checkout->payments", 75 * time.Second, 2 * time.Minute, 0.5},
	// model-provider's breakers answer orders on rules alone in waves, and
	// with the lever the provider first works off its backlog of 200,000.
	{"model-provider", "risk-agent->model-provider", 75 * time.Second, 4 * time.Minute, 0.75},
}

// persistingFor replaces the two minutes after the fault at which the
// untouched storm is checked where the calibrated storm runs on another
// clock: gateway-blip's edge fails only once the merchant's rate limit has
// been spent, 140 s after the blip starts.
var persistingFor = map[string]time.Duration{"gateway-blip": 4 * time.Minute}

// TestClosedLoop runs each scenario twice on a real redis-server. Without
// intervention the storm persists past the fault. With the playbook's lever
// pulled at detection, amplification falls below 1.1 and edge success
// recovers within the stated bounds. Detection is the saved amplification
// query's alert condition (crit for its for: period) run through the
// queries runner against the lab's API; the lever goes through
// actions.Service (guards with evidence from the lab, journal) and takes
// effect once the fleet's provider serves it.
func TestClosedLoop(t *testing.T) {
	rd := newRedisAddr(t)
	for _, tc := range closedLoops {
		t.Run(tc.scenario, func(t *testing.T) {
			svc, dep := lever.SplitTarget(tc.target)
			call := queries.Params{Service: svc, Dependency: dep}

			t.Run("untouched", func(t *testing.T) {
				c := startControlLab(t, tc.scenario, rd, nil)
				after := 2 * time.Minute
				if d, ok := persistingFor[tc.scenario]; ok {
					after = d
				}
				c.runTo(t, faultEnd(c)+after)
				ampl, st := c.measure(t, "amplification", call, false)
				if ok := c.edgeSuccess(t); st != queries.Crit || ok > tc.persistingOKBelow {
					t.Errorf("%s after the fault: amplification %.2f (%s), edge success %.2f: the storm did not persist", after, ampl, st, ok)
				}
			})

			t.Run("lever at detection", func(t *testing.T) {
				c := startControlLab(t, tc.scenario, rd, nil)
				detected := c.detect(t)
				res, err := c.svc.Apply(context.Background(), actions.Spec{Kind: string(lever.Retries), Target: tc.target,
					Value: "off", TTL: 30 * time.Minute, Reason: "closed loop: amplification breached", Actor: "rehearsal", Yes: true})
				if err != nil {
					t.Fatalf("apply at %s: %v", detected, err)
				}
				checkApplied(t, res)
				if err := c.Settle(context.Background(), lever.Retries, tc.target, res.Targets[0].Version, true); err != nil {
					t.Fatal(err)
				}
				ampl := c.until(t, detected+tc.amplBound, func() bool {
					v, _ := c.measure(t, "amplification", call, false)
					return v < sim.RecoveredAmplification
				})
				if ampl < 0 {
					t.Errorf("amplification of %s still ≥ 1.1 %s after the lever at %s", tc.target, tc.amplBound, detected)
				}
				okBy := max(detected, faultEnd(c)) + tc.okBound
				if ok := c.until(t, okBy, func() bool { return c.edgeSuccess(t) >= sim.RecoveredSuccess }); ok < 0 {
					t.Errorf("edge success below 95%% at %s (lever at %s, fault ended at %s)", okBy, detected, faultEnd(c))
				} else {
					t.Logf("detected at %s; amplification < 1.1 at %s, edge success ≥ 95%% at %s", detected, ampl, ok)
				}
				c.runTo(t, okBy+2*time.Minute)
				if ok := c.edgeSuccess(t); ok < sim.RecoveredSuccess {
					t.Errorf("edge success fell back to %.2f after recovering", ok)
				}
			})
		})
	}
}

// detect steps the simulation until the saved amplification query's alert
// condition holds, and returns that simulated time.
func (c *controlLab) detect(t *testing.T) time.Duration {
	t.Helper()
	at := c.until(t, faultEnd(c)+5*time.Minute, func() bool {
		_, st := c.measure(t, "amplification", queries.Params{}, true)
		return st == queries.Crit
	})
	if at < 0 {
		t.Fatal("amplification never breached")
	}
	return at
}

// until steps the simulation until cond holds or simulated time deadline
// passes; it returns the time cond first held, or -1.
func (c *controlLab) until(t *testing.T, deadline time.Duration, cond func() bool) time.Duration {
	t.Helper()
	for at := c.Sim.Now(); ; at += loopStep {
		c.runTo(t, at)
		if cond() {
			return at
		}
		if at >= deadline {
			return -1
		}
	}
}

func faultEnd(c *controlLab) time.Duration {
	return c.Sim.Scenario().LastFaultEnd()
}

// checkApplied checks the guards passed on evidence measured in the lab and
// the action was journaled.
func checkApplied(t *testing.T, res *actions.Result) {
	t.Helper()
	for _, g := range res.Guards {
		if g.Guard == actions.GuardEvidence && g.Status != actions.StatusPassed {
			t.Errorf("evidence guard %s: %s", g.Status, g.Detail)
		}
	}
	if len(res.Targets) != 1 || res.Targets[0].JournalEntry == "" || len(res.Targets[0].Evidence) == 0 {
		t.Fatalf("apply result %+v: want one journaled target with evidence", res.Targets)
	}
}
