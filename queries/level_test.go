package queries

import (
	"math"
	"testing"
)

func TestLevelOrderAndNames(t *testing.T) {
	order := []Level{LevelNoData, LevelNaN, LevelOK, LevelWarn, LevelCrit}
	names := []string{"no_data", "nan", "ok", "warn", "crit"}
	for i, l := range order {
		if l.String() != names[i] {
			t.Errorf("%d: %q, want %q (the JSON contract)", i, l, names[i])
		}
		if p, err := ParseLevel(names[i]); err != nil || p != l {
			t.Errorf("ParseLevel(%q) = %v, %v", names[i], p, err)
		}
		if i > 0 && order[i-1] >= l {
			t.Errorf("%s must rank below %s", order[i-1], l)
		}
	}
	if _, err := ParseLevel("critical"); err == nil {
		t.Error("ParseLevel must refuse an unknown name")
	}
	th := Threshold{Warn: f64(1.2), Crit: f64(1.3), Direction: Above}
	for v, want := range map[float64]Level{math.NaN(): LevelNaN, 1: LevelOK, 1.25: LevelWarn, math.Inf(1): LevelCrit} {
		if got := th.Level(v); got != want {
			t.Errorf("Level(%g) = %s, want %s", v, got, want)
		}
	}
}

// TestEvaluateResultCountsTheHeldLevel: with for:, a series counts at the
// lower of its level now and the level it held over the window.
func TestEvaluateResultCountsTheHeldLevel(t *testing.T) {
	th := Threshold{Warn: f64(1.2), Crit: f64(1.3), Direction: Above}
	series := func(v float64) Series { return Series{Labels: map[string]string{"service": "checkout"}, Value: v} }
	one := func(v float64) Result { return Result{Series: []Series{series(v)}} }
	cases := []struct {
		name   string
		now    float64
		held   *Result
		failOn Level
		want   bool
	}{
		{"crit, no for:", 4, nil, LevelCrit, true},
		{"crit held crit", 4, &Result{Series: []Series{series(4)}}, LevelCrit, true},
		{"crit held warn", 4, &Result{Series: []Series{series(1.25)}}, LevelCrit, false},
		{"crit held warn, fail on warn", 4, &Result{Series: []Series{series(1.25)}}, LevelWarn, true},
		{"crit, not held at all", 4, &Result{}, LevelWarn, false},
		{"crit, the held query failed", 4, &Result{Err: &ServerError{}}, LevelCrit, true},
		{"warn, fail on crit", 1.25, nil, LevelCrit, false},
		{"NaN", math.NaN(), nil, LevelWarn, false},
	}
	for _, c := range cases {
		ev := th.EvaluateResult(one(c.now), c.held)
		if got := ev.Breaches(c.failOn); got != c.want {
			t.Errorf("%s: Breaches(%s) = %v, want %v (%+v)", c.name, c.failOn, got, c.want, ev.Series)
		}
	}
	if ev := th.EvaluateResult(Result{}, nil); ev.Level != LevelNoData || ev.Breaches(LevelWarn) {
		t.Errorf("no series: %+v", ev)
	}
	// The result's level is its worst series'; a range counts its last point.
	res := Result{Series: []Series{series(math.NaN()), {Labels: map[string]string{"service": "cart"}, Value: 1,
		Points: []Point{{V: 9}, {V: 1.25}}}}}
	if ev := th.EvaluateResult(res, nil); ev.Level != LevelWarn || ev.Series[1].Value != 1.25 || ev.Series[0].Level != LevelNaN {
		t.Errorf("worst of NaN and a range ending at warn: %+v", ev)
	}
}

func TestFleetResultBreaches(t *testing.T) {
	for _, c := range []struct {
		r      FleetResult
		failOn Level
		want   bool
	}{
		{FleetResult{Warn: 2, Crit: 0}, LevelCrit, false},
		{FleetResult{Warn: 2, Crit: 0}, LevelWarn, true},
		{FleetResult{Warn: -1, Crit: 1}, LevelCrit, true},
		{FleetResult{Warn: 0, Crit: -1}, LevelWarn, false},
	} {
		if got := c.r.Breaches(c.failOn); got != c.want {
			t.Errorf("%+v at %s: %v", c.r, c.failOn, got)
		}
	}
}
