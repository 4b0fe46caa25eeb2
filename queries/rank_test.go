package queries

import (
	"math"
	"strings"
	"testing"
)

func TestDistanceAndWorse(t *testing.T) {
	w, c, zero := 1.2, 1.3, 0.0
	above := Threshold{Warn: &w, Crit: &c, Direction: Above}
	below := Threshold{Warn: &c, Crit: &w, Direction: Below}
	for _, tc := range []struct {
		th   Threshold
		v    float64
		want float64
	}{
		{above, 2.6, 1},         // twice crit: 100% past it
		{above, 1.25, 0.25 / 6}, // past warn by 0.05 of 1.2
		{above, 0.6, -0.5},      // ok, half of warn
		{below, 0.6, 0.5},       // half of crit 1.2
		{Threshold{Warn: &zero, Direction: Above}, 3, 3}, // a limit of 0 counts in units
	} {
		if got := tc.th.Distance(tc.v); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Distance(%v) against %s = %v, want %v", tc.v, tc.th, got, tc.want)
		}
	}
	if !math.IsInf(above.Distance(math.NaN()), -1) {
		t.Error("NaN is not the least distance")
	}
	// Severity before distance: just past crit beats far past warn... and
	// a crit far past beats one just past.
	if !above.Worse(1.31, 1.29) || !above.Worse(4, 1.31) || above.Worse(math.NaN(), 0.1) {
		t.Error("Worse orders severity, then distance, NaN last")
	}
	ss := []Series{
		{Labels: map[string]string{"service": "b"}, Value: 1.25},
		{Labels: map[string]string{"service": "z"}, Value: math.NaN()},
		{Labels: map[string]string{"service": "c"}, Value: 4},
		{Labels: map[string]string{"service": "a"}, Value: 1.25},
		{Labels: map[string]string{"service": "d"}, Value: 1},
	}
	SortWorst(above, ss)
	var got []string
	for _, s := range ss {
		got = append(got, s.Labels["service"])
	}
	if strings.Join(got, "") != "cabdz" {
		t.Errorf("SortWorst: %v, want c a b d z (ties by service)", got)
	}
}

func TestFleetResultText(t *testing.T) {
	for _, c := range []struct {
		r    FleetResult
		want string
	}{
		{FleetResult{Total: 2940, Warn: 11, Crit: 3}, "amplification: 3 crit, 11 warn of 2,940 series"},
		{FleetResult{Total: 1234567, Warn: -1, Crit: 0}, "amplification: 0 crit of 1,234,567 series"},
		{FleetResult{Total: 7, Warn: 1, Crit: -1}, "amplification: 1 warn of 7 series"},
	} {
		if got := c.r.Text("amplification"); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// FuzzSplitFleet feeds SplitFleet what a server could answer: any label
// values and numbers. It must not panic, and counts never go negative.
func FuzzSplitFleet(f *testing.F) {
	f.Add("worst", "svc", 4.0, "2", 3.0)
	f.Add("1", "", math.Inf(1), "NaN", math.NaN())
	f.Add("-1", "x\x1b[2J", -5.0, "99999999999999999999", 1e300)
	w, c := 1.2, 1.3
	fl := &Fleet{Rendered: &Rendered{Threshold: Threshold{Warn: &w, Crit: &c, Direction: Above}}, Top: 3}
	f.Fuzz(func(t *testing.T, part1, svc string, v1 float64, part2 string, v2 float64) {
		r := SplitFleet(fl, []Series{
			{Labels: map[string]string{FleetLabel: part1, "service": svc}, Value: v1},
			{Labels: map[string]string{FleetLabel: part2}, Value: v2},
		})
		if r.Warn < 0 || r.Crit < 0 || len(r.Worst) > 2 {
			t.Fatalf("%+v", r)
		}
	})
}

// TestLoadRefusesWhatCannotRankAFleet: a user template whose PromQL is
// valid but not a vector is refused at load, at its file:line:col.
func TestLoadRefusesWhatCannotRankAFleet(t *testing.T) {
	_, err := Load("testdata/broken_fleet")
	want := "testdata/broken_fleet/scalar.yaml:7:15: cannot be reduced for the fleet view (RenderFleet): invalid PromQL:"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "scalar") {
		t.Fatalf("Load: %v\nwant %s… naming the scalar", err, want)
	}
}
