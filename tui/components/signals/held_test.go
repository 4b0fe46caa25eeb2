package signals

import (
	"math"
	"testing"
	"time"

	"github.com/stormctl/stormctl/queries"
)

func TestHeldForNeedsTheWholeWindow(t *testing.T) {
	crit, warn := 1.3, 1.2
	th := queries.Threshold{Warn: &warn, Crit: &crit, Direction: queries.Above, For: time.Minute}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	// pts are one every Step (15 s), the last at 2:00.
	pts := func(vs ...float64) []queries.Point {
		out := make([]queries.Point, len(vs))
		for i, v := range vs {
			out[i] = queries.Point{T: t0.Add(time.Duration(i) * Step), V: v}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		state State
		pts   []queries.Point
		hold  time.Duration
		want  bool
	}{
		{"crit for the last 60s", StateCrit, pts(1, 1, 1, 1.4, 1.5, 1.4, 1.6, 1.5), time.Minute, true},
		{"crit for 45s only", StateCrit, pts(1, 1, 1, 1, 1.5, 1.4, 1.6, 1.5), time.Minute, false},
		{"warn inside the window breaks a crit", StateCrit, pts(1.4, 1.4, 1.4, 1.4, 1.25, 1.4, 1.4, 1.4), time.Minute, false},
		{"warn held while crit came and went", StateWarn, pts(1, 1.25, 1.4, 1.25, 1.4, 1.25), time.Minute, true},
		{"NaN breaks the window", StateCrit, pts(1.4, 1.4, math.NaN(), 1.4, 1.4, 1.4), time.Minute, false},
		{"history shorter than for:", StateCrit, pts(1.4, 1.4, 1.4), time.Minute, false},
		{"no for: means nothing held", StateCrit, pts(1.4, 1.4, 1.4, 1.4, 1.4, 1.4), 0, false},
		{"ok is never held", StateOK, pts(1, 1, 1, 1, 1, 1), time.Minute, false},
	} {
		th.For = c.hold
		if got := heldFor(th, c.state, c.pts); got != c.want {
			t.Errorf("%s: held %v, want %v", c.name, got, c.want)
		}
	}
}

// The list says "CRIT held" once the breach has lasted for:, and "CRIT"
// before, so a breach on screen can be told from an alert that fired.
func TestValueTextSaysHeld(t *testing.T) {
	crit := 1.3
	th := queries.Threshold{Crit: &crit, Direction: queries.Above, For: 30 * time.Second}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	series := func(vs ...float64) queries.Series {
		s := queries.Series{Labels: map[string]string{"service": "checkout"}, Value: vs[len(vs)-1]}
		for i, v := range vs {
			s.Points = append(s.Points, queries.Point{T: t0.Add(time.Duration(i) * Step), V: v})
		}
		return s
	}
	base := Panel{Query: "amplification", Threshold: th, Value: math.NaN()}
	fresh := fromResult(base, queries.Result{Series: []queries.Series{series(1, 1, 1, 1.5)}})[0]
	held := fromResult(base, queries.Result{Series: []queries.Series{series(1, 1.5, 1.5, 1.5)}})[0]
	if fresh.State != StateCrit || fresh.Held || !held.Held {
		t.Fatalf("fresh %v held=%v; held %v held=%v", fresh.State, fresh.Held, held.State, held.Held)
	}
}
