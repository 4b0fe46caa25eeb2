package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// No saved query passes its warn threshold before a fault starts, in any
// scenario, at any second the lab evaluates it: a lab that raises alarms
// at rest teaches responders to ignore them. Where a fleet's own timeouts
// differ from a built-in threshold's assumption, its scenario amends the
// threshold as its catalogue would (model-provider's dependency_p99).
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
				if a.Calm != "ok" || a.FirstWarn != nil || a.FirstFiring != nil {
					t.Errorf("%s in calm: %s, warned at %v, fired at %v (worst %v, %s)", a.Query, a.Calm,
						deref(a.FirstWarn), deref(a.FirstFiring), deref(a.CalmWorst), a.Series)
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

// runSummary runs a built-in scenario to its end with the given seed and
// lever events and returns its summary with the saved queries judged.
func runSummary(t *testing.T, name string, seed uint64, events []sim.LeverEvent) (*Lab, sim.Summary) {
	t.Helper()
	sc, err := sim.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Options{Scenario: sc, Seed: seed, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum, err := l.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l, sum
}

func firing(sum sim.Summary) map[string]float64 {
	out := map[string]float64{}
	for _, a := range sum.Alerts {
		if a.FirstFiring != nil {
			out[a.Query] = *a.FirstFiring
		}
	}
	return out
}

// gateway-blip tells incident 1's story: one gateway instance is slow for
// 40 s; checkout's immediate retries reach the healthy ones, so the retry
// ratio and amplification alerts fire while the edge is still green, at
// least a minute before the edge 5xx alert. The retries spend the
// merchant's rate limit; its 429s, retried, keep the storm up after the
// blip: the connection pool is exhausted and the edge passes 5% 5xx about
// 140 s after the blip starts, with at worst about 60-70% 5xx. Retries off
// at the edge alert brings the 5xx share under 0.5% within 4 minutes.
func TestGatewayBlipTellsItsStory(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		// Not parallel: two labs' PromQL evaluations at once race inside
		// the engine's shared pools under -race.
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			_, sum := runSummary(t, "gateway-blip", seed, nil)
			blip := 120.0
			fired := firing(sum)
			edge, ok := fired["edge_error_rate"]
			if !ok {
				t.Fatalf("the edge 5xx alert never fired: %+v", sum.Alerts)
			}
			for _, id := range []string{"retry_ratio", "amplification"} {
				if at, ok := fired[id]; !ok || edge-at < 60 {
					t.Errorf("%s fired at %v (%v), want at least 60 s before the edge alert at %v", id, at, ok, edge)
				}
			}
			if _, ok := fired["throttle_retries"]; !ok {
				t.Error("no 429 was retried")
			}
			e5 := sum.FirstEdge5xxOver5Pct
			if e5 == nil || *e5-blip < 110 || *e5-blip > 180 {
				t.Errorf("edge 5xx above 5%% at %v, want 110-180 s after the blip at %vs", deref(e5), blip)
			}
			if ex := sum.FirstPoolExhausted; ex == nil || *ex-blip < 80 || e5 == nil || *ex > *e5 {
				t.Errorf("pool exhausted at %v, want 80 s or more after the blip and before the edge fails (%v)", deref(ex), deref(e5))
			}
			if w := sum.MaxEdge5xxShare; w < 0.45 || w > 0.8 {
				t.Errorf("worst 5xx share %v, want about 60%% (0.45-0.8)", w)
			}
			if sum.SteadyAmplification < 2.5 || sum.Recovered != nil {
				t.Errorf("steady amplification %v, recovered at %v: the storm did not outlive the blip", sum.SteadyAmplification, deref(sum.Recovered))
			}
			if r := sum.PeakOutboundRatio["payment-gateway"]; r < 2 {
				t.Errorf("outbound at most %v× calm, want ≥ 2×", r)
			}

			off := []sim.LeverEvent{{At: sim.Duration(time.Duration(edge) * time.Second), Kind: "retries", Target: "checkout->payment-gateway", Value: "off"}}
			l, _ := runSummary(t, "gateway-blip", seed, off)
			at := time.Duration(edge)*time.Second + 4*time.Minute
			if v := edgeErrorRate(t, l, at); v >= 0.005 {
				t.Errorf("retries off at %vs: edge 5xx share %v four minutes later, want < 0.5%%", edge, v)
			}
		})
	}
}

// edgeErrorRate evaluates the saved edge_error_rate query at simulated
// time at.
func edgeErrorRate(t *testing.T, l *Lab, at time.Duration) float64 {
	t.Helper()
	mat := savedQuery(t, l, "edge_error_rate", queries.Params{Service: l.Sim.EdgeService()}, at)
	if len(mat) != 1 || len(mat[0].Floats) == 0 {
		t.Fatalf("edge_error_rate: %v", mat)
	}
	pts := mat[0].Floats
	return pts[len(pts)-1].F
}

// savedQuery evaluates saved query id with params over the lab's sample store from
// time zero to simulated time at.
func savedQuery(t *testing.T, l *Lab, id string, p queries.Params, at time.Duration) promql.Matrix {
	t.Helper()
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cat.Render(id, queries.DefaultPack, p)
	if err != nil {
		t.Fatal(err)
	}
	mat, err := l.rangeQuery(context.Background(), id, r.Expr, at)
	if err != nil {
		t.Fatal(err)
	}
	return mat
}

// inventory-failover's orders hold checkout's shared 200-thread pool for
// over a second and demand some 530 threads (Little's law, the summary).
// The saved demanded_concurrency query sees that demand from the pool's
// own gauges, in use plus waiting: outbound attempt time alone could
// never pass 1, since every attempt holds a thread. Inventory's p99, judged
// against checkout's 200 ms timeout as the scenario's catalogue sets it,
// fires too.
func TestSavedDemandedConcurrencySeesTheSharedPool(t *testing.T) {
	l, sum := runSummary(t, "inventory-failover", 1, nil)
	if at, ok := firing(sum)["dependency_p99"]; !ok || at < l.Sim.Scenario().FirstFault().Seconds() {
		t.Errorf("dependency_p99 fired at %v (%v), want after the fault", at, ok)
	}
	threads := sum.PeakDemandedThreads["checkout"]
	if threads < 400 || threads > 700 {
		t.Fatalf("checkout demanded %v threads at the peak, want ~530 (400-700)", threads)
	}
	mat := savedQuery(t, l, "demanded_concurrency", queries.Params{Service: "checkout", Dependency: "inventory", Pool: "http"},
		time.Duration(sum.FaultEnd)*time.Second)
	if len(mat) != 1 {
		t.Fatalf("demanded_concurrency for checkout's http pool: %v", mat)
	}
	worst, calm := 0.0, 0.0
	for _, p := range mat[0].Floats {
		at := time.UnixMilli(p.T).Sub(l.Epoch)
		if at < l.Sim.Scenario().FirstFault() {
			calm = max(calm, p.F)
		}
		worst = max(worst, p.F)
	}
	// Both read the same demand: the summary from arrivals × the mean hold
	// of those that got a thread, the query from the pool's gauges, where
	// a caller that waits out its wait timeout counts while it waits.
	if calm >= 0.8 || worst < 1.5 || worst*200 < threads*0.7 || worst*200 > threads*1.4 {
		t.Errorf("demanded_concurrency: calm %.2f, worst %.2f (%.0f threads of 200); want calm < 0.8, and ≥ 1.5 near Little's %.0f",
			calm, worst, worst*200, threads)
	}
}

// The summary reports each saved query's first firing, the retry signal's
// lead over the edge, attempts per request p99, pods over time and the
// work the dependency did for callers that had given up. payments-slow is
// incident 3's lockstep: dependency-to-edge ratio ~3.97 while it lasts.
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
	if a := sum.SteadyAmplification; a < 3.9 || a > 4.05 {
		t.Errorf("steady dependency-to-edge ratio %v, want ~3.97 (3.9-4.05)", a)
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

// Every protected variant keeps the attempts reaching its dependency
// within 1.2× the logical requests offered to it (the incident's own gate,
// amplification over the saved query's window) and recovers.
func TestProtectedVariantsKeepTheGate(t *testing.T) {
	all, err := sim.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		if sc.Protects == "" {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			s, err := sim.New(sc, sim.Options{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			sum := s.Summary()
			if sum.PeakAmplification > 1.2 || sum.Recovered == nil {
				t.Errorf("peak amplification %v (want ≤ 1.2), recovered at %v", sum.PeakAmplification, deref(sum.Recovered))
			}
		})
	}
}

// A scenario's thresholds must name saved queries: a misspelt id is an
// error, not a silently unjudged query.
func TestScenarioThresholdsNameSavedQueries(t *testing.T) {
	sc, err := sim.Find("payments-slow")
	if err != nil {
		t.Fatal(err)
	}
	bad := *sc
	crit := 2.0
	bad.Thresholds = map[string]sim.ThresholdSpec{"dependency_p999": {Crit: &crit}}
	l, err := New(Options{Scenario: &bad, Seed: 1, Until: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Summary(context.Background()); err == nil || !strings.Contains(err.Error(), "dependency_p999") {
		t.Fatalf("summary error %v, want one naming dependency_p999", err)
	}
}

// model-provider is incidents 4 and 5 together. While the provider is slow
// the fleet's own signals fire besides the retry signals: the autoscaler
// adds pods, the provider's p99 passes the risk agent's timeout and the
// pods' breakers disagree, in waves each as long as a breaker's open time.
func TestModelProviderFleetSignalsFire(t *testing.T) {
	sc, err := sim.Find("model-provider")
	if err != nil {
		t.Fatal(err)
	}
	end := sc.LastFaultEnd()
	l := newLab(t, sc.Name, end)
	if err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum, err := l.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fired, fault := firing(sum), sc.FirstFault().Seconds()
	for _, id := range []string{"replica_churn", "dependency_p99", "breaker_open_fraction", "retry_ratio", "amplification"} {
		if at, ok := fired[id]; !ok || at < fault {
			t.Errorf("%s fired at %v (%v), want after the fault at %vs and before its end at %v", id, at, ok, fault, end)
		}
	}
	if bf := sum.BreakerOpenFraction["risk-agent->model-provider"]; bf.DisagreeS < 20 {
		t.Errorf("breakers disagreed for %v s, want ≥ 20", bf.DisagreeS)
	}
}
