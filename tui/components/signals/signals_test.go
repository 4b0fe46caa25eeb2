package signals

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/styles"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func pts(vs ...float64) []queries.Point {
	out := make([]queries.Point, len(vs))
	for i, v := range vs {
		out[i] = queries.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v}
	}
	return out
}

func TestSparkline(t *testing.T) {
	end := t0.Add(4 * time.Minute)
	cases := []struct {
		name string
		pts  []queries.Point
		ceil float64
		want string
	}{
		{"scaled to the threshold", pts(0, 1, 2, 3, 4), 8, "▁▂▃▄▅"},
		{"a breach above it stands tall", pts(1, 1, 1, 1, 4), 1.3, "▃▃▃▃█"},
		{"missing data is blank, not zero", pts(1, math.NaN(), 1, math.Inf(1), 1), 1, "█ █ █"},
		{"no points", nil, 1, "     "},
	}
	for _, c := range cases {
		if got := Sparkline(c.pts, t0, end.Add(time.Minute-1), 5, c.ceil); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// Two samples in one cell: the spike is kept.
	if got := Sparkline(pts(0, 8, 0, 0), t0, t0.Add(4*time.Minute), 2, 8); got != "█▁" {
		t.Errorf("spike: %q", got)
	}
}

func TestBuildStatesAndTrend(t *testing.T) {
	crit := 1.3
	q := &queries.Query{ID: "amplification", Title: "Amplification", Unit: "ratio"}
	r := &queries.Rendered{Threshold: queries.Threshold{Crit: &crit, Direction: queries.Above}}
	rising := make([]queries.Point, 10)
	for i := range rising {
		rising[i] = queries.Point{T: t0.Add(time.Duration(i) * Step), V: 1 + float64(i)*0.3}
	}
	targets := []Target{{Query: q, Rendered: r}, {Query: q, Rendered: r, Service: "ledger"}, {Query: q, Rendered: r}, {Query: q, Err: errors.New("bad pack")}}
	results := []queries.Result{
		{Series: []queries.Series{{Labels: map[string]string{"service": "checkout", "dependency": "pg"}, Value: 3.7, Points: rising}}},
		{NoData: &queries.NoData{Message: "no series of stormctl_attempts_total"}},
		{Stale: true, Err: errors.New("503")},
	}
	ps := Build(targets, results)
	if len(ps) != 4 {
		t.Fatalf("%d panels", len(ps))
	}
	if p := ps[0]; p.State != StateCrit || p.Trend != 1 || p.Series != "checkout→pg" || p.Service != "checkout" {
		t.Errorf("storm panel %+v", p)
	}
	if p := ps[1]; p.State != StateNoData || !math.IsNaN(p.Value) ||
		p.Note != "try stormctl query doctor --service ledger · no series of stormctl_attempts_total" || p.Service != "ledger" {
		t.Errorf("a no-data panel must offer the doctor: %+v", p)
	}
	if p := ps[2]; p.State != StateError || !p.Stale {
		t.Errorf("stale panel without data %+v", p)
	}
	if p := ps[3]; p.State != StateError || p.Note != "bad pack" {
		t.Errorf("unrendered panel %+v", p)
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{{0.25, "seconds", "250ms"}, {4.1, "seconds", "4.10s"}, {3.014, "ratio", "3.01"}, {405, "per_second", "405/s"},
		{math.NaN(), "ratio", "NaN"}, {math.Inf(1), "ratio", "+Inf"}, {12, "percent", "12.0%"}} {
		if got := FormatValue(c.v, c.unit); got != c.want {
			t.Errorf("FormatValue(%v, %s) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

// A list row with no data shows why, starting with the doctor, where the
// sparkline would be.
func TestListViewOffersDoctor(t *testing.T) {
	m := New(common.Common{Styles: styles.DefaultStyles(), Now: func() time.Time { return t0 }})
	m.SetSize(130, 6)
	q := &queries.Query{ID: "amplification", Title: "Amplification", Unit: "ratio"}
	r := &queries.Rendered{Threshold: queries.Threshold{Direction: queries.Above}}
	m.SetPanels(Build([]Target{{Query: q, Rendered: r, Service: "checkout"}},
		[]queries.Result{{NoData: &queries.NoData{Message: "metric \"x\" not found"}}}), t0)
	if v := ansi.Strip(m.View()); !strings.Contains(v, "try stormctl query doctor --service checkout") {
		t.Errorf("list view does not offer the doctor:\n%s", v)
	}
}
