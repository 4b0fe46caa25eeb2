package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

func run(t testing.TB, name string, opts Options) Summary {
	t.Helper()
	sc, err := Find(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s.Summary()
}

func TestBuiltinsParseAndPair(t *testing.T) {
	all, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range all {
		names[s.Name] = true
	}
	for _, base := range []string{"gateway-blip", "inventory-failover", "payments-slow", "model-provider"} {
		if !names[base] || !names[base+"-protected"] {
			t.Errorf("missing %s or its protected variant", base)
		}
	}
}

// Without intervention the storm outlives the fault: from a minute after it
// starts to the end of the run, attempts per request stay well above 2, the
// edge fails at its worst for at least half its callers and never
// recovers. The protected variant recovers and keeps amplification low.
func TestStormPersistsProtectedRecovers(t *testing.T) {
	for _, name := range []string{"gateway-blip", "inventory-failover", "payments-slow"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bad := run(t, name, Options{Seed: 1})
			if bad.SteadyAmplification < 2.5 || bad.MaxEdge5xxShare < 0.5 || bad.Recovered != nil {
				t.Errorf("storm did not persist: %+v", bad)
			}
			good := run(t, name+"-protected", Options{Seed: 1})
			if good.PeakAmplification > 1.3 || good.Recovered == nil || *good.Recovered > good.FaultEnd+180 {
				t.Errorf("protected variant did not recover within 3m of the fault: %+v", good)
			}
			if good.PeakDependencyAttemptsPerS[depOf(name)] >= bad.PeakDependencyAttemptsPerS[depOf(name)]/2 {
				t.Errorf("protected variant should at least halve the peak attempt rate: %v vs %v",
					good.PeakDependencyAttemptsPerS, bad.PeakDependencyAttemptsPerS)
			}
		})
	}
}

func depOf(name string) string {
	return map[string]string{"gateway-blip": "payment-gateway", "inventory-failover": "inventory", "payments-slow": "payments"}[name]
}

// Layers multiply: every attempt of the edge's layer (2) starts a risk
// agent request whose app layer (3) retries timeouts, each attempt
// doubled by the sidecar (2) on a 503, a reset or its own per-try timeout.
// Attempts per order count only what reaches the provider, including what
// the risk agent sends after the order was answered, and never exceed
// 2×3×2. The storm outlasts the fault and holds itself up (up to 12
// attempts per order against what the recovered provider starts; between
// the breakers' waves the edge fails), and with one retry owner it does
// not happen.
func TestLayeredRetriesMultiply(t *testing.T) {
	t.Parallel()
	bad := run(t, "model-provider", Options{Seed: 1})
	good := run(t, "model-provider-protected", Options{Seed: 1})
	if bad.MaxAttemptsPerRequest <= 2*3 || bad.MaxAttemptsPerRequest > 2*3*2 || good.MaxAttemptsPerRequest > 2 {
		t.Errorf("max attempts per order: unprotected %d (want in (2×3, 2×3×2]), protected %d (want ≤ 2)",
			bad.MaxAttemptsPerRequest, good.MaxAttemptsPerRequest)
	}
	if bad.Recovered != nil || bad.AmplificationAfterFault < 2.5 || bad.EdgeSuccessAfterFault > 0.75 {
		t.Errorf("the layered storm did not hold itself up after the fault: %+v", bad)
	}
	if good.Recovered == nil || *good.Recovered > good.FaultEnd+120 {
		t.Errorf("protected variant did not recover within 2m of the fault: %+v", good)
	}
	if good.MinEdgeSuccessRate <= bad.MinEdgeSuccessRate || good.PeakDependencyAttemptsPerS["model-provider"] >= bad.PeakDependencyAttemptsPerS["model-provider"] {
		t.Errorf("protected variant not better: %+v vs %+v", good, bad)
	}
}

func TestSeeds(t *testing.T) {
	opts := Options{Seed: 7, Until: 5 * time.Minute}
	a, b := run(t, "inventory-failover", opts), run(t, "inventory-failover", opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different summaries:\n%+v\n%+v", a, b)
	}
	opts.Seed = 8
	c := run(t, "inventory-failover", opts)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave identical summaries")
	}
	if math.Abs(a.PeakAmplification-c.PeakAmplification) > 0.2 || math.Abs(a.MinEdgeSuccessRate-c.MinEdgeSuccessRate) > 0.1 {
		t.Errorf("seeds 7 and 8 differ too much:\n%+v\n%+v", a, c)
	}
}

// The playbook's lever, retries off at detection, ends the storm.
func TestRetriesOffLeverEndsStorm(t *testing.T) {
	evs, err := ParseEvents("events.yaml", []byte("- {at: 4m, kind: retries, target: checkout->inventory, value: \"off\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := run(t, "inventory-failover", Options{Seed: 1, Events: evs})
	if s.Recovered == nil || *s.Recovered > s.FaultEnd+120 || s.AmplificationAfterFault > 1.1 {
		t.Errorf("retries off did not end the storm within 2m of the fault: %+v", s)
	}
}

func TestParseErrorsArePositioned(t *testing.T) {
	cases := []struct {
		src  string
		line int
	}{
		{"name: x\nedge: {service: a, rps: 1}\nservices: []\nbogus: 1\n", 4},
		{"name: x\nedge: {service: nope, rps: 1}\n", 2},
		{"name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    pools: [{name: p, size: 1}]\n    endpoints:\n      - name: e\n        pool: p\n        calls:\n          - target: d\n            layers:\n              - {name: app, max_attempts: 2, timeout: 1s, retry_on: [tiemout]}\ndependencies:\n  - {name: d, capacity: 1, latency: {p50: 1ms, p99: 2ms}}\n", 12},
		{"name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    pools: [{name: p, size: 1}]\n    endpoints:\n      - name: e\n        pool: p\n        calls:\n          - target: d\n            breaker: {scope: pod, consecutive_failures: 1, open_for: 1s, failures: [unavailable, 503]}\n            layers: [{name: app, max_attempts: 1, timeout: 1s}]\ndependencies:\n  - {name: d, capacity: 1, latency: {p50: 1ms, p99: 2ms}}\n", 11},
		// Pods and instances are memory: a hostile file cannot ask for millions.
		{"name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    replicas: 99999999\n    pools: [{name: p, size: 1}]\n    endpoints: [{name: e, pool: p}]\n", 5},
		{"name: x\nedge: {service: a, rps: 1}\nservices:\n  - name: a\n    pools: [{name: p, size: 1}]\n    endpoints: [{name: e, pool: p, calls: [{target: d, layers: [{name: app, max_attempts: 1}]}]}]\ndependencies:\n  - {name: d, instances: 50000000, capacity: 1, latency: {p50: 1ms, p99: 2ms}}\n", 8},
	}
	for _, c := range cases {
		_, err := Parse("s.yaml", []byte(c.src))
		var es yamlfile.Errors
		var e *yamlfile.Error
		switch {
		case errors.As(err, &es) && len(es) > 0:
			e = es[0]
		case errors.As(err, &e):
		default:
			t.Fatalf("%q: want a positioned error, got %v", c.src, err)
		}
		if e.Line != c.line {
			t.Errorf("%q: error at line %d (%v), want %d", c.src, e.Line, err, c.line)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"name: x\n", "edge: {rps: -1}\n", "services: [{name: a, endpoints: [{calls: [{layers: []}]}]}]\n",
		"name: x\nservices: ! {0}\n"} {
		f.Add([]byte(seed))
	}
	for _, name := range []string{"gateway-blip", "inventory-failover"} {
		data, _ := builtin.ReadFile("scenarios/" + name + ".yaml")
		f.Add(data)
	}
	data, _ := builtin.ReadFile("scenarios/inventory-failover.yaml")
	f.Add(append(data, "restarts:\n  - {service: checkout, at: 100ms, startup: 200ms}\n  - {service: checkout, at: 300ms}\n"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := Parse("f.yaml", b)
		if err != nil {
			return
		}
		s, err := New(sc, Options{Until: time.Second})
		if err != nil {
			return
		}
		_ = s.Run(context.Background())
	})
}

func FuzzParseEvents(f *testing.F) {
	for _, seed := range []string{
		"- {at: 4m, kind: retries, target: checkout->inventory, value: \"off\", ttl: 5m, reason: r, force: true}\n",
		"- {at: 1s, kind: shed, target: a, value: \"101\"}\n",
		"- {at: -1s, kind: breaker, target: x, value: open}\n- {kind: nope}\n",
		"{}", "- [1, 2]\n", "! {0}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := ParseEvents("events.yaml", b)
		if err != nil {
			return
		}
		for i, e := range evs {
			if e.At < 0 || e.TTL < 0 || e.Target == "" || checkLever(e.Kind, e.Value) != nil {
				t.Fatalf("accepted a bad event %+v", e)
			}
			if i > 0 && evs[i-1].At > e.At {
				t.Fatal("events out of order")
			}
		}
	})
}
