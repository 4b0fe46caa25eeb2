package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/lab/sim"
)

// calmExceptions are saved queries whose built-in threshold a scenario's
// normal state passes by design, and why.
var calmExceptions = map[string]string{
	// The built-in dependency_p99 thresholds assume a 1 s timeout; the
	// model provider's normal p99 is 1.1 s (read as ~1.75 s from the
	// client_golang default buckets 1 and 2.5) under a 2.5 s worker timeout.
	"model-provider/dependency_p99": "normal p99 above the 1 s default threshold",
}

// No saved query alarms before a fault starts, in any scenario: a lab that
// raises alarms at rest teaches responders to ignore them.
func TestNoFalseAlarmsInCalm(t *testing.T) {
	all, err := sim.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		t.Run(sc.Name, func(t *testing.T) {
			l := newLab(t, sc.Name, sc.FirstFault())
			if err := l.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			sum, err := l.Summary(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Alerts) < 8 {
				t.Fatalf("only %d saved queries judged: %+v", len(sum.Alerts), sum.Alerts)
			}
			for _, a := range sum.Alerts {
				base := strings.TrimSuffix(sc.Name, "-protected")
				if _, ok := calmExceptions[base+"/"+a.Query]; ok {
					continue
				}
				if a.Calm != "ok" || a.FirstFiring != nil {
					t.Errorf("%s in calm: %s (worst %v, firing at %v, %s)", a.Query, a.Calm, deref(a.CalmWorst), deref(a.FirstFiring), a.Series)
				}
			}
		})
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// The summary reports each saved query's first firing, the retry signal's
// lead over the edge, attempts per request p99, pods over time and the
// work the dependency did for callers that had given up.
func TestSummaryReportsTheStory(t *testing.T) {
	l := newLab(t, "payments-slow", 0)
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum, err := l.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fired := map[string]float64{}
	for _, a := range sum.Alerts {
		if a.FirstFiring != nil {
			fired[a.Query] = *a.FirstFiring
			if a.FirstWarn == nil || *a.FirstWarn > *a.FirstFiring || a.Series == "" {
				t.Errorf("%s fired at %v but warned at %v, series %q", a.Query, *a.FirstFiring, deref(a.FirstWarn), a.Series)
			}
		}
	}
	fault := sum.FaultEnd - 180 // payments slows at 2m for 3m
	for _, id := range []string{"amplification", "retry_ratio", "edge_error_rate"} {
		if at, ok := fired[id]; !ok || at < fault || at > fault+120 {
			t.Errorf("%s fired at %v (ok %v), want within 2m of the fault at %vs", id, at, ok, fault)
		}
	}
	earliest := fired["amplification"]
	for _, id := range retrySignals {
		if at, ok := fired[id]; ok {
			earliest = min(earliest, at)
		}
	}
	if sum.LeadS == nil || *sum.LeadS != fired["edge_error_rate"]-earliest {
		t.Errorf("lead_s = %v, want edge_error_rate %v − earliest retry signal %v", deref(sum.LeadS), fired["edge_error_rate"], earliest)
	}
	// Four lockstep attempts: most intents that meet the slow payments make all four.
	if sum.AttemptsPerRequestP99 != 4 || sum.MaxAttemptsPerRequest != 4 {
		t.Errorf("attempts per request p99 %d, max %d; want 4 and 4", sum.AttemptsPerRequestP99, sum.MaxAttemptsPerRequest)
	}
	if got := sum.Pods["checkout"]; len(got) != 1 || got[0].Pods != 2 {
		t.Errorf("checkout pods over time = %+v, want 2 throughout", got)
	}
	// Payments keeps working on attempts cut at the 1 s timeout: a large
	// share of what it starts serves nobody.
	if ab, peak := sum.PeakAbandonedWorkPerS["payments"], sum.PeakDependencyAttemptsPerS["payments"]; ab < 0.2*peak || ab > peak {
		t.Errorf("abandoned work %v/s against %v attempts/s at the peak", ab, peak)
	}
}

// The demo's clock says when the fault starts, while it lasts, and since
// when it is over.
func TestClockText(t *testing.T) {
	sc, err := sim.Find("gateway-blip")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{40 * time.Second, "lab 0:40 · payment-gateway fault in 1:20"},
		{130*time.Second + 500*time.Millisecond, "lab 2:10 · payment-gateway fault for 0:29 more"},
		{305 * time.Second, "lab 5:05 · payment-gateway fault ended 2:25 ago"},
		{75 * time.Minute, "lab 75:00 · payment-gateway fault ended 72:20 ago"},
	} {
		if got := ClockText(sc, tc.at); got != tc.want {
			t.Errorf("at %s: %q, want %q", tc.at, got, tc.want)
		}
	}
	hostile := &sim.Scenario{Faults: []sim.Fault{{Dependency: "gw\x1b]0;pwned\a", At: sim.Duration(time.Minute)}}}
	if got := ClockText(hostile, 0); got != "lab 0:00 · gw?]0;pwned? fault in 1:00" {
		t.Errorf("hostile name: %q", got)
	}
	if got := ClockText(&sim.Scenario{}, 0); got != "lab 0:00 · no fault" {
		t.Errorf("no faults: %q", got)
	}
}
