package lab

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/queries"
)

// TestJudgeLevels: a series fires once past crit for the threshold's
// whole for:, warns at its first sample past warn, and its calm level is
// the worst of its trailing mean; NaN is neither.
func TestJudgeLevels(t *testing.T) {
	warn, crit := 1.2, 1.3
	th := queries.Threshold{Warn: &warn, Crit: &crit, Direction: queries.Above, For: 3 * time.Second}
	epoch := time.Unix(1000, 0)
	// One sample a second from 0 s: calm (NaN, then 1) to 4 s, crit for
	// 2 s (too short), warn, then crit from 9 s on.
	vals := []float64{math.NaN(), 1, 1, 1, 1, 4, 4, 1.25, 1.25, 4, 4, 4, 4, 4}
	var pts []promql.FPoint
	for i, v := range vals {
		pts = append(pts, promql.FPoint{T: epoch.Add(time.Duration(i) * time.Second).UnixMilli(), F: v})
	}
	mat := promql.Matrix{{Metric: labels.FromStrings("service", "checkout"), Floats: pts}}
	a := judge("amplification", th, mat, epoch, 0, 4*time.Second)
	if a.FirstWarn == nil || *a.FirstWarn != 5 {
		t.Errorf("first warn %v, want 5 s", a.FirstWarn)
	}
	if a.FirstFiring == nil || *a.FirstFiring != 12 || a.Series != `{service="checkout"}` {
		t.Errorf("first firing %v (%s), want 12 s: crit from 9 s held 3 s", a.FirstFiring, a.Series)
	}
	if a.Calm != "ok" || a.CalmWorst == nil || *a.CalmWorst != 1 {
		t.Errorf("calm %s, worst %v: want ok and 1 (NaN is no value)", a.Calm, a.CalmWorst)
	}
	// Calm over the whole record: the trailing mean reaches warn.
	if a := judge("amplification", th, mat, epoch, 0, 20*time.Second); a.Calm != "crit" || *a.CalmWorst != 4 {
		t.Errorf("calm over the storm: %s, worst %v", a.Calm, a.CalmWorst)
	}
}
