package queries

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// fleetEnd is the end of the fleet fixture's data.
var fleetEnd = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// bigFleet is 1,000 services × 3 dependencies: three storms on payments
// (4, 3 and 2 attempts per request), four call paths warm on ledger, and
// 2,993 calm ones.
func bigFleet(services int) testenv.Fleet {
	return testenv.Fleet{Services: services, End: fleetEnd,
		Storm: map[int]float64{17: 4, services / 2: 3, services - 2: 2},
		Warm:  map[int]float64{5: 1.28, 42 % services: 1.25, services * 3 / 10: 1.24, services * 7 / 10: 1.22}}
}

func startFleet(t testing.TB, f testenv.Fleet) (*Catalog, *Runner, *testenv.Prometheus) {
	t.Helper()
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: f.OpenMetrics()})
	cat, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(config.Prometheus{URL: p.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cat, NewRunner(c, RunnerOptions{Timeout: 30 * time.Second}), p
}

func seriesKey(s Series) string { return s.Labels["service"] + "→" + s.Labels["dependency"] }

// TestFleetAgainstPrometheus reduces the catalogue's queries on a real
// Prometheus holding 3,000 series per query: the worst come back worst
// first with their values, the counts are exact, and a range query brings
// history for the worst series only, over the whole range.
func TestFleetAgainstPrometheus(t *testing.T) {
	cat, runner, _ := startFleet(t, bigFleet(1000))
	ctx := context.Background()
	run := func(f *Fleet, rng *Range) (FleetResult, Result) {
		t.Helper()
		expr := f.Expr
		if rng != nil {
			expr = f.RangeExpr
		}
		res := runner.Run(ctx, Request{Key: f.QueryID + "|fleet", Expr: expr, Time: fleetEnd, Range: rng, Metrics: f.Metrics})
		if res.Err != nil || res.NoData != nil {
			t.Fatalf("%s: %v %v\n%s", f.QueryID, res.Err, res.NoData, f.Expr)
		}
		return SplitFleet(f, res.Series), res
	}
	amp, err := cat.RenderFleet("amplification", "", Params{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, res := run(amp, nil)
	if len(res.Series) != 5+3 {
		t.Errorf("%d series moved, want 5 worst + 3 counts (ok, warn, crit)", len(res.Series))
	}
	want := []struct {
		key string
		v   float64
	}{{"svc-0017→payments", 4}, {"svc-0500→payments", 3}, {"svc-0998→payments", 2}, {"svc-0005→ledger", 1.28}, {"svc-0042→ledger", 1.25}}
	if len(got.Worst) != len(want) {
		t.Fatalf("worst %d series, want %d", len(got.Worst), len(want))
	}
	for i, w := range want {
		s := got.Worst[i]
		if seriesKey(s) != w.key || !near(s.Value, w.v) {
			t.Errorf("worst[%d] = %s %v, want %s %v", i, seriesKey(s), s.Value, w.key, w.v)
		}
		if _, ok := s.Labels[FleetLabel]; ok {
			t.Errorf("worst[%d] keeps the %s label", i, FleetLabel)
		}
	}
	if got.Total != 3000 || got.Crit != 3 || got.Warn != 4 {
		t.Errorf("amplification counts %s", got.Text("amplification"))
	}

	rr, err := cat.RenderFleet("retry_ratio", "", Params{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := run(rr, nil); got.Total != 3000 || got.Crit != 3 || got.Warn != 1 {
		t.Errorf("retry_ratio counts %s, want 3 crit, 1 warn (0.28/1.28), of 3000", got.Text("retry_ratio"))
	}

	// A range: the same three worst series at every step, with history from
	// before their storm, and no other series.
	rng := &Range{Start: fleetEnd.Add(-15 * time.Minute), End: fleetEnd, Step: 15 * time.Second}
	top3, _ := cat.RenderFleet("amplification", "", Params{}, 3)
	got, res = run(top3, rng)
	if len(res.Series) != 3+3 || len(got.Worst) != 3 {
		t.Fatalf("range: %d series (%d worst), want 3 worst + 3 counts", len(res.Series), len(got.Worst))
	}
	for _, s := range got.Worst {
		if len(s.Points) != 61 {
			t.Errorf("%s: %d points, want 61 (15m at 15s)", seriesKey(s), len(s.Points))
		}
		if first := s.Points[0].V; !near(first, 1) {
			t.Errorf("%s: 15m ago %v, want 1 (before the storm)", seriesKey(s), first)
		}
	}
	if got.Crit != 3 || got.Total != 3000 {
		t.Errorf("range counts %s", got.Text("amplification"))
	}
}

// TestFleetExpr checks the shape of fleet expressions: bottomk for a
// "below" threshold, selectors pinned to end() only in the range form, and
// the levels counted with one evaluation.
func TestFleetExpr(t *testing.T) {
	warn, crit := 0.5, 0.2
	e := `sum by (service) (rate(x_total{a="b"}[1m]))`
	th := Threshold{Warn: &warn, Crit: &crit, Direction: Below}
	instant, err := fleetExpr(e, e, th, 7, false)
	if err != nil {
		t.Fatal(err)
	}
	ranged, err := fleetExpr(e, e, th, 7, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		expr  string
		has   []string
		lacks []string
	}{
		{instant, []string{`bottomk(7, ` + e + `)`, `count_values("stormctl_fleet", clamp(ceil((0.5 - (` + e + `)) / 0.3), 0, 2))`}, []string{"@ end()", " and ", "topk"}},
		{ranged, []string{`(` + e + `) and bottomk(7, sum by (service) (rate(x_total{a="b"}[1m] @ end())))`, `[1m] @ end())))) / 0.3), 0, 2))`}, nil},
	} {
		for _, s := range c.has {
			if !strings.Contains(c.expr, s) {
				t.Errorf("fleet expression lacks %q:\n%s", s, c.expr)
			}
		}
		for _, s := range c.lacks {
			if strings.Contains(c.expr, s) {
				t.Errorf("fleet expression has %q:\n%s", s, c.expr)
			}
		}
	}
	only, _ := fleetExpr(e, e, Threshold{Crit: &crit, Direction: Above}, 1, false)
	if !strings.Contains(only, `clamp(ceil((`+e+`) - 0.2), 0, 1)`) {
		t.Errorf("crit-only levels:\n%s", only)
	}
	if _, err := fleetExpr(`sum(`, `sum(`, th, 1, false); err == nil {
		t.Error("invalid PromQL was accepted")
	}
}

// TestFleetLevelsAtTheLimits evaluates the level expression on a real
// Prometheus at and around the limits: the comparisons stay strict, as
// Threshold.Evaluate's, for both directions and a single limit of 0.
func TestFleetLevelsAtTheLimits(t *testing.T) {
	_, runner, _ := startFleet(t, testenv.Fleet{Services: 1, End: fleetEnd})
	w, c, zero := 1.2, 1.3, 0.0
	cases := []struct {
		th   Threshold
		vals []float64
		want []Status
	}{
		{Threshold{Warn: &w, Crit: &c, Direction: Above}, []float64{1.1, 1.2, 1.25, 1.3, 1.31, 100}, []Status{OK, OK, Warn, Warn, Crit, Crit}},
		{Threshold{Warn: &c, Crit: &w, Direction: Below}, []float64{1.4, 1.3, 1.25, 1.2, 1.1, -5}, []Status{OK, OK, Warn, Warn, Crit, Crit}},
		{Threshold{Warn: &zero, Direction: Above}, []float64{0, 0.001, 7}, []Status{OK, Warn, Warn}},
	}
	for _, tc := range cases {
		for i, v := range tc.vals {
			if got := tc.th.Evaluate(v); got != tc.want[i] {
				t.Fatalf("Evaluate(%v) = %s, want %s", v, got, tc.want[i])
			}
			expr := levelExpr("vector("+formatFloat(v)+")", tc.th)
			res := runner.Run(context.Background(), Request{Expr: expr, Time: fleetEnd})
			if res.Err != nil || len(res.Series) != 1 {
				t.Fatalf("%s: %v %v", expr, res.Err, res.Series)
			}
			level := map[Status]float64{OK: 0, Warn: 1, Crit: 2}[tc.want[i]]
			if tc.th.Crit == nil && tc.want[i] == Warn {
				level = 1
			}
			if res.Series[0].Value != level {
				t.Errorf("%v against %s: level %v, want %v (%s)", v, tc.th, res.Series[0].Value, level, tc.want[i])
			}
		}
	}
}
