package policy

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
)

func load(t testing.TB, files ...string) *Path {
	t.Helper()
	in, err := ReadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(in, LoadOptions{})
	if err != nil {
		t.Fatalf("load %v: %v", files, err)
	}
	return p
}

func ids(a *Analysis, sev Severity) []string {
	var out []string
	for _, f := range a.Findings {
		if f.Severity == sev {
			out = append(out, f.ID+"@"+f.Hop)
		}
	}
	return out
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) <= 0.01*math.Max(1, math.Abs(want))
}

// TestIncidentShapes runs DOMAIN.md's incident shapes through the
// analysis and checks their published arithmetic.
func TestIncidentShapes(t *testing.T) {
	for _, tc := range []struct {
		file                     string
		total                    float64
		byClass                  map[string]float64
		occupancy, demand, satur float64 // 0: not checked
		pool                     int
		crit                     []string
	}{{
		// A 2 s timeout retried 4× at once, 429s included: 4 attempts of 2 s.
		file: "immediate-retries", total: 4, byClass: map[string]float64{"timeout": 4, "429": 4, "5xx": 1},
		occupancy: 8, demand: 2400, pool: 1200, satur: 150,
		crit: []string{"timeout_below_dependency_p99@checkout", "no_backoff@checkout", "retries_throttling@checkout", "pool_saturation@checkout"},
	}, {
		// 200 ms × 4 + 100 + 200 + 400 ms of backoff = 1.5 s; 400 rps × 1.5 s
		// = 600 threads of 200; 200 / 1.5 s = 133 failing rps saturate it; the
		// transport's connect retry doubles the product.
		file: "shared-pool", total: 8, byClass: map[string]float64{"timeout": 4, "connect_error": 2, "5xx": 4},
		occupancy: 1.5, demand: 600, pool: 200, satur: 133.333,
		crit: []string{"multiplied_retries@", "timeout_below_dependency_p99@checkout", "retries_throttling@checkout", "pool_saturation@checkout", "shared_pool@checkout"},
	}, {
		// 4 lockstep attempts each cut at 1 s while payments works 2.6 s.
		file: "lockstep", total: 4, byClass: map[string]float64{"timeout": 4, "5xx": 4},
		occupancy: 4, demand: 800, pool: 2000, satur: 500,
		crit: []string{"timeout_below_dependency_p99@checkout", "no_backoff@checkout"},
	}, {
		// 2 × 3 × 2 = 12 provider attempts per order with fast 503s; 2 × 3 = 6
		// when every attempt times out (the risk agent keeps going after
		// checkout-api gives up at 2.4 s); a retry past the 4 s deadline.
		file: "layers", total: 12, byClass: map[string]float64{"timeout": 6, "5xx": 12, "reset": 12},
		occupancy: 4.8, demand: 1872, pool: 4800,
		crit: []string{"multiplied_retries@", "deadline_conflict@checkout-api", "deadline_conflict@risk-agent", "pool_saturation@risk-agent"},
	}} {
		t.Run(tc.file, func(t *testing.T) {
			a := Analyze(load(t, filepath.Join("testdata/incidents", tc.file+".yaml")))
			if a.WorstCaseAttempts.Total != tc.total {
				t.Errorf("worst_case_attempts.total = %v, want %v", a.WorstCaseAttempts.Total, tc.total)
			}
			for c, want := range tc.byClass {
				if got := a.WorstCaseAttempts.ByClass[c]; got != want {
					t.Errorf("by_class[%s] = %v, want %v", c, got, want)
				}
			}
			if !near(a.OccupancyS, tc.occupancy) || !near(a.DemandedConcurrency, tc.demand) {
				t.Errorf("occupancy %v s, demanded %v; want %v, %v", deref(a.OccupancyS), deref(a.DemandedConcurrency), tc.occupancy, tc.demand)
			}
			if a.PoolSize == nil || *a.PoolSize != tc.pool {
				t.Errorf("pool_size %v, want %d", a.PoolSize, tc.pool)
			}
			if tc.satur > 0 && !near(a.SaturationRPS, tc.satur) {
				t.Errorf("saturation_rps %v, want %v", deref(a.SaturationRPS), tc.satur)
			}
			if want := a.path.Rate * tc.total; !near(a.DependencyRPSWorst, want) {
				t.Errorf("dependency_rps_worst %v, want %v", deref(a.DependencyRPSWorst), want)
			}
			crit := ids(a, Crit)
			for _, id := range tc.crit {
				if !slices.Contains(crit, id) {
					t.Errorf("missing crit %s; crit findings: %v", id, crit)
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

// TestDeadlines checks the walk against deadlines: the entry stops at the
// deadline it knows, a hop that ignores it holds the pool past it, and a
// service that is passed the deadline stops with it.
func TestDeadlines(t *testing.T) {
	// The example: the 4th attempt would start at 1.3 s, after the
	// 1 s deadline, so checkout stops at 1 s with 3 attempts.
	p := load(t, "testdata/incidents/shared-pool.yaml")
	p.Deadline = Duration(1e9)
	a := Analyze(p)
	if !near(a.OccupancyS, 1) || a.WorstCaseAttempts.ByClass["timeout"] != 3 {
		t.Errorf("1 s deadline: occupancy %v, timeout attempts %v; want 1 s, 3", deref(a.OccupancyS), a.WorstCaseAttempts.ByClass["timeout"])
	}
	if !slices.Contains(ids(a, Warn), "deadline_conflict@checkout") {
		t.Errorf("want a warn deadline_conflict on checkout: %v", a.Findings)
	}
	p.Hops[0].IgnoreDeadline = true
	a = Analyze(p)
	if !near(a.OccupancyS, 1.5) || !slices.Contains(ids(a, Crit), "deadline_conflict@checkout") {
		t.Errorf("ignoring the deadline: occupancy %v, crit %v; want 1.5 s and a crit deadline_conflict", deref(a.OccupancyS), ids(a, Crit))
	}

	// With the deadline passed down, the risk agent stops at 4 s: its first
	// request makes attempts at 0 and 2 s (the third would start at 4 s);
	// checkout-api's second call starts at 2.4 s with 1.6 s left, in which
	// the agent's one attempt is cut.
	p = load(t, "testdata/incidents/layers.yaml")
	p.Hops[0].IgnoreDeadline, p.Hops[0].PropagateDeadline = false, true
	a = Analyze(p)
	if got := a.WorstCaseAttempts.ByClass["timeout"]; got != 3 {
		t.Errorf("propagated deadline: timeout attempts %v, want 3 (2 + 1)", got)
	}
	if !near(a.OccupancyS, 4) {
		t.Errorf("propagated deadline: occupancy %v, want 4", deref(a.OccupancyS))
	}
}

// TestNoTimeout: nothing bounds a hung dependency, and the analysis says
// so instead of printing a number.
func TestNoTimeout(t *testing.T) {
	p := load(t, "testdata/incidents/lockstep.yaml")
	p.Hops[0].Timeout = 0
	a := Analyze(p)
	if a.OccupancyS != nil || a.DemandedConcurrency != nil || a.SaturationRPS != nil || len(a.NoData) == 0 {
		t.Fatalf("want no occupancy and a reason, got %v %v", deref(a.OccupancyS), a.NoData)
	}
	if !slices.Contains(ids(a, Crit), "no_timeout@") {
		t.Errorf("want crit no_timeout: %v", a.Findings)
	}
}

// TestWellConfigured: one retry owner with a timeout above p99, full
// jitter, a budget, an idempotency key and its own pool has no warning.
func TestWellConfigured(t *testing.T) {
	in := []Input{{Name: "good.yaml", Data: []byte(`apiVersion: stormctl/v1
kind: CallPath
name: good
rate: 400/s
deadline: 3s
hops:
  - service: checkout
    pool: {name: inventory-bulkhead, size: 1000}
    timeout: 1s
    retry: {attempts: 2, backoff: exponential, base: 100ms, max: 1s, jitter: full,
            on: [timeout, 5xx], budget: 10%, idempotency_key: true}
dependency: {name: inventory, p99: 900ms}
`)}}
	p, err := Load(in, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := Analyze(p)
	if len(a.Findings) != 0 {
		t.Errorf("want no findings, got %+v", a.Findings)
	}
	// 1 s + up to 100 ms + 1 s.
	if !near(a.OccupancyS, 2.1) || !near(a.SaturationRPS, 1000/2.1) {
		t.Errorf("occupancy %v, saturation %v", deref(a.OccupancyS), deref(a.SaturationRPS))
	}
}
