package queries

import (
	"encoding/json"
	"math"
	"testing"
)

func f64(v float64) *float64 { return &v }

func TestThresholdEvaluate(t *testing.T) {
	above := Threshold{Warn: f64(1.2), Crit: f64(1.3), Direction: Above}
	below := Threshold{Warn: f64(0.5), Crit: f64(0.2), Direction: Below}
	critOnly := Threshold{Crit: f64(0), Direction: Above}
	tests := []struct {
		t    Threshold
		v    float64
		want Status
	}{
		{above, 1.0, OK}, {above, 1.2, OK}, {above, 1.2000001, Warn}, {above, 1.3, Warn},
		{above, 1.31, Crit}, {above, math.Inf(1), Crit}, {above, math.NaN(), OK},
		{below, 0.6, OK}, {below, 0.5, OK}, {below, 0.49, Warn}, {below, 0.2, Warn},
		{below, 0.1, Crit}, {below, math.Inf(-1), Crit},
		{critOnly, 0, OK}, {critOnly, 1e-9, Crit}, {critOnly, -1, OK},
	}
	for _, tt := range tests {
		if got := tt.t.Evaluate(tt.v); got != tt.want {
			t.Errorf("%s: Evaluate(%g) = %s, want %s", tt.t, tt.v, got, tt.want)
		}
	}
}

func TestThresholdValidate(t *testing.T) {
	bad := []Threshold{
		{Crit: f64(1)},
		{Direction: Above},
		{Warn: f64(2), Crit: f64(1), Direction: Above},
		{Warn: f64(0.1), Crit: f64(0.2), Direction: Below},
		{Crit: f64(math.NaN()), Direction: Above},
		{Crit: f64(1), Direction: Above, For: -1},
	}
	for _, th := range bad {
		if th.validate() == nil {
			t.Errorf("%+v validated", th)
		}
	}
	if err := (Threshold{Warn: f64(1), Crit: f64(1), Direction: Above}).validate(); err != nil {
		t.Errorf("warn equal to crit is allowed: %v", err)
	}
}

func TestThresholdString(t *testing.T) {
	th := Threshold{Warn: f64(1.2), Crit: f64(1.3), Direction: Above, For: 60e9}
	if got := th.String(); got != "warn > 1.2, crit > 1.3 for 1m" {
		t.Errorf("String = %q", got)
	}
}

func TestThresholdJSON(t *testing.T) {
	b, err := json.Marshal(Threshold{Crit: f64(0.3), Direction: Above, For: 20e9})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"crit":0.3,"direction":"above","for":"20s"}` {
		t.Errorf("JSON = %s", got)
	}
}

// TestThresholdInfinities: in each direction the bad infinity is crit and
// ranks worst of all, the good one is ok and ranks best of the values, and
// NaN is no data (severity 0, below every value).
func TestThresholdInfinities(t *testing.T) {
	above := Threshold{Warn: f64(1.2), Crit: f64(1.3), Direction: Above}
	below := Threshold{Warn: f64(0.5), Crit: f64(0.2), Direction: Below}
	for _, c := range []struct {
		name        string
		t           Threshold
		worst, best float64
		middle      float64 // a finite crit value
	}{
		{"above", above, math.Inf(1), math.Inf(-1), 7},
		{"below", below, math.Inf(-1), math.Inf(1), 0.01},
	} {
		if got := c.t.Evaluate(c.worst); got != Crit {
			t.Errorf("%s: Evaluate(%g) = %s, want crit", c.name, c.worst, got)
		}
		if got := c.t.Evaluate(c.best); got != OK {
			t.Errorf("%s: Evaluate(%g) = %s, want ok", c.name, c.best, got)
		}
		if !c.t.Worse(c.worst, c.middle) || c.t.Worse(c.middle, c.worst) {
			t.Errorf("%s: %g must rank before %g", c.name, c.worst, c.middle)
		}
		if !c.t.Worse(c.best, math.NaN()) || c.t.Level(math.NaN()) != LevelNaN {
			t.Errorf("%s: NaN must rank after every value, even %g", c.name, c.best)
		}
		ss := []Series{{Value: math.NaN()}, {Value: c.best}, {Value: c.middle}, {Value: c.worst}}
		SortWorst(c.t, ss)
		if ss[0].Value != c.worst || ss[1].Value != c.middle || ss[2].Value != c.best || !math.IsNaN(ss[3].Value) {
			t.Errorf("%s: SortWorst = %v", c.name, ss)
		}
	}
}
