package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// runSim runs sc to its end and returns the simulation, for the figures
// the summary does not carry, calling look at each of the times given.
func runSim(t *testing.T, sc *Scenario, opts Options, look func(*Sim), at ...time.Duration) *Sim {
	t.Helper()
	s, err := New(sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range at {
		if err := s.RunTo(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		look(s)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// warmth is the share of the order call's cached keys fresh now on
// checkout's ready pods.
func warmth(s *Sim) float64 {
	fresh, n := 0, 0
	for _, p := range s.svcByName["checkout"].pods {
		if !p.ready || p.draining {
			continue
		}
		for _, exp := range p.caches[0] {
			n++
			if exp > s.now {
				fresh++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(fresh) / float64(n)
}

func findScenario(t *testing.T, name string) *Scenario {
	t.Helper()
	sc, err := Find(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// successAt is the edge success rate over the Window ending at t.
func successAt(s *Sim, t time.Duration) float64 {
	return s.stats.success[int(t/s.sc.ScrapeInterval.D())]
}

// inventory-failover tells incident shape 2 (DOMAIN.md) with its own
// figures: 400 rps, a 200-thread pool shared with the ledger, a 200 ms
// timeout under 4 attempts and a transport retry, inventory at a p99 of
// 900 ms that still serves ~60% in time. Each order then holds its thread
// for about 1.5 s: by Little's law checkout demands 500-700 threads of
// 200, the pool empties as the fault starts, the ledger fails with it
// though ledger-db never slows, and the storm outlives the fault. In calm
// no pool is past pool_saturation's warn (0.6).
func TestInventoryFailoverCalibrated(t *testing.T) {
	sc := findScenario(t, "inventory-failover")
	f := sc.Faults[0]
	mu, sigma := lognormal(*f.Latency)
	inTime := 0.5 * (1 + math.Erf((math.Log(0.2)-mu)/(sigma*math.Sqrt2)))
	if f.Latency.P99.D() != 900*time.Millisecond || inTime < 0.55 || inTime > 0.7 {
		t.Errorf("fault: p99 %s, %.2f within 200 ms; want 900ms and ~60%%", f.Latency.P99.D(), inTime)
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			var warm []float64
			look := func(s *Sim) { warm = append(warm, warmth(s)) }
			s := runSim(t, sc, Options{Seed: seed}, look, sc.FirstFault(), 7*time.Minute)
			sum := s.Summary()
			fault, end := sc.FirstFault(), time.Duration(sum.FaultEnd)*time.Second
			if d := sum.PeakDemandedThreads["checkout"]; d < 500 || d > 700 {
				t.Errorf("checkout demanded %.0f threads, want 500-700 (400 rps × ~1.5 s)", d)
			}
			if calm := s.PeakPoolSaturation(0, fault); calm >= 0.6 {
				t.Errorf("a pool was %.2f in use before the fault, want < 0.6 (pool_saturation warn)", calm)
			}
			if at := sum.FirstPoolExhausted; at == nil || *at < fault.Seconds() || *at > fault.Seconds()+30 {
				t.Errorf("pool first exhausted at %v, want within 30 s of the fault at %v", deref(at), fault.Seconds())
			}
			ok := s.MinEndpointSuccess()
			if ok["checkout/ledger"] > 0.5 || sum.PeakOutboundRatio["ledger-db"] > 1.1 {
				t.Errorf("ledger: worst success %.2f (want ≤ 0.5), ledger-db outbound ×%.2f (want ≤ 1.1): it must fail with the pool alone",
					ok["checkout/ledger"], sum.PeakOutboundRatio["ledger-db"])
			}
			if sum.SteadyAmplification < 3.5 || sum.SteadyAmplification > 4.5 || sum.MaxAttemptsPerRequest < 5 || sum.MaxAttemptsPerRequest > 8 {
				t.Errorf("steady amplification %.2f (want 3.5-4.5), max attempts per order %d (want 5-8: 4 × 2 transport)",
					sum.SteadyAmplification, sum.MaxAttemptsPerRequest)
			}
			if sum.Recovered != nil || successAt(s, end+2*time.Minute) > 0.1 {
				t.Errorf("the storm should outlive the fault: recovered at %v, success %.2f 2m after", deref(sum.Recovered), successAt(s, end+2*time.Minute))
			}
			// The cache goes cold in the storm: its keys expire unrefreshed.
			if warm[0] < 0.9 || warm[1] > 0.1 {
				t.Errorf("fresh cached keys: %.2f as the fault starts (want ≥ 0.9), %.2f at 7m (want ≤ 0.1)", warm[0], warm[1])
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Restarting checkout makes the incident worse, as it did in the incident.
// With retries off early in the failover, inventory serves about 60% of
// orders in time (the fault itself) from a warm cache; a restart of checkout
// starts a pod with a cold cache and no connections: every order calls
// inventory again, over new connections, inventory is overloaded until the
// failover ends, and recovery comes later.
func TestRestartOfCheckoutLengthensRecovery(t *testing.T) {
	evs, err := ParseEvents("events.yaml", []byte("- {at: 2m20s, kind: retries, target: checkout->inventory, value: \"off\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			sc := findScenario(t, "inventory-failover")
			var warm []float64
			look := func(s *Sim) { warm = append(warm, warmth(s)) }
			calm := runSim(t, sc, Options{Seed: seed, Events: evs}, look, 5*time.Minute)
			restarted := *sc
			restarted.Restarts = []Restart{{Service: "checkout", At: Duration(3 * time.Minute), Startup: Duration(20 * time.Second)}}
			worse := runSim(t, &restarted, Options{Seed: seed, Events: evs}, look, 5*time.Minute)
			a, b := calm.Summary(), worse.Summary()
			if a.Recovered == nil || b.Recovered == nil || *b.Recovered < *a.Recovered+10 {
				t.Errorf("recovered at %v without the restart, %v with it: want at least 10 s later", deref(a.Recovered), deref(b.Recovered))
			}
			at := 5*time.Minute + 50*time.Second
			if x, y := successAt(calm, at), successAt(worse, at); x < 0.5 || y > 0.2 {
				t.Errorf("edge success over the minute to %s: %.2f without the restart (want ≥ 0.5), %.2f with it (want ≤ 0.2)", at, x, y)
			}
			if warm[0] < 0.5 || warm[1] > 0.1 {
				t.Errorf("fresh cached keys at 5m: %.2f without the restart (want ≥ 0.5), %.2f with it (want ≤ 0.1: cold)", warm[0], warm[1])
			}
		})
	}
}

// A restart replaces every pod: requests in flight fail, none is served
// until the new pod is ready, and the new pod starts with an empty cache.
func TestRestartReplacesEveryPod(t *testing.T) {
	sc := *findScenario(t, "inventory-failover")
	sc.Faults = nil
	sc.Restarts = []Restart{{Service: "checkout", At: Duration(time.Minute), Startup: Duration(20 * time.Second)}}
	var warm []float64
	look := func(s *Sim) { warm = append(warm, warmth(s)) }
	s := runSim(t, &sc, Options{Seed: 1, Until: 3 * time.Minute}, look, 59*time.Second, 81*time.Second, 150*time.Second)
	sum := s.Summary()
	want := []PodCount{{0, 1}, {60, 0}, {80, 1}}
	if got := sum.Pods["checkout"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("checkout pods %v, want %v", got, want)
	}
	if sum.MinEdgeSuccessRate < 0.6 || sum.MinEdgeSuccessRate > 0.7 {
		t.Errorf("worst edge success %.2f, want ~2/3 (20 s of a minute without a ready pod)", sum.MinEdgeSuccessRate)
	}
	// The new pod's cache fills from inventory's answers within a minute.
	if warm[0] < 0.9 || warm[1] > 0.2 || warm[2] < 0.8 {
		t.Errorf("fresh cached keys: %.2f before the restart, %.2f as the new pod starts, %.2f a minute later; want warm, cold, warm", warm[0], warm[1], warm[2])
	}
}

// inventory-failover-protected keeps what reaches inventory within 1.2× the
// order calls (the incident's own gate) and recovers.
func TestInventoryFailoverProtectedCalibrated(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			sum := run(t, "inventory-failover-protected", Options{Seed: seed})
			orders := 400 * 0.95
			if sum.PeakAmplification > 1.2 || sum.PeakDependencyAttemptsPerS["inventory"] > 1.2*orders {
				t.Errorf("amplification %.2f, inventory peak %.0f attempts/s: want ≤ 1.2 and ≤ 1.2 × %.0f orders/s",
					sum.PeakAmplification, sum.PeakDependencyAttemptsPerS["inventory"], orders)
			}
			if sum.Recovered == nil || *sum.Recovered > sum.FaultEnd+120 || sum.FirstPoolExhausted != nil {
				t.Errorf("recovered at %v (want within 2m of the fault's end at %v), a pool exhausted at %v (want never)",
					deref(sum.Recovered), sum.FaultEnd, deref(sum.FirstPoolExhausted))
			}
		})
	}
}

func TestParseRestartsCachesAndConnectCost(t *testing.T) {
	base := "name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    pools: [{name: p, size: 1}]\n    endpoints:\n      - name: e\n        pool: p\n        calls:\n          - target: d\n%s            layers: [{name: app, max_attempts: 1, timeout: 1s}]\ndependencies:\n  - {name: d, capacity: 1, latency: {p50: 1ms, p99: 2ms}%s}\n%s"
	for _, c := range []struct {
		cache, dep, tail string
		line             int
	}{
		{"", "", "restarts:\n  - {service: nope, at: 1m}\n", 15},
		{"", "", "restarts:\n  - {service: a, at: 1m, startup: -1s}\n", 15},
		{"            cache: {hit_share: 1.5, keys: 10, ttl: 1m}\n", "", "", 11},
		{"            cache: {hit_share: 0.5, keys: 0, ttl: 1m}\n", "", "", 11},
		{"", ", connect_cost: -1ms", "", 13},
	} {
		src := fmt.Sprintf(base, c.cache, c.dep, c.tail)
		_, err := Parse("s.yaml", []byte(src))
		var es yamlfile.Errors
		if !errors.As(err, &es) || len(es) == 0 {
			t.Fatalf("%q: want positioned errors, got %v", src, err)
		}
		if es[0].Line != c.line {
			t.Errorf("%q: error at line %d (%v), want %d", src, es[0].Line, err, c.line)
		}
	}
	ok := fmt.Sprintf(base, "            cache: {hit_share: 0.5, keys: 10, ttl: 1m}\n", ", connect_cost: 10ms", "restarts:\n  - {service: a, at: 1s, startup: 1s}\n")
	if _, err := Parse("s.yaml", []byte(ok)); err != nil {
		t.Errorf("valid scenario refused: %v", err)
	}
}
