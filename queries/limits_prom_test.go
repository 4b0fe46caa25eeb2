package queries

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// TestLimitsAgainstPrometheus: a real Prometheus holding more series than
// the default cap answers a query, a range query and a label values call
// that are each cut at the cap, with the warning that says so.
func TestLimitsAgainstPrometheus(t *testing.T) {
	const n = DefaultMaxSeries + 500
	now := time.Now().Truncate(time.Minute)
	om := testenv.NewOpenMetrics()
	for i := range n {
		om.Gauge("stormctl_replicas", map[string]string{"service": fmt.Sprintf("svc-%05d", i)}, now.Add(-4*time.Minute), time.Minute, []float64{3, 3, 4, 4})
	}
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: om.String()})
	c, err := NewClient(config.Prometheus{URL: p.URL}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(c, RunnerOptions{Timeout: 20 * time.Second})
	ctx := context.Background()
	cut := func(what string, got int, warns []string) {
		t.Helper()
		if got != DefaultMaxSeries || len(warns) != 1 || !strings.HasPrefix(warns[0], CutPrefix) || !strings.Contains(warns[0], p.URL) {
			t.Fatalf("%s: %d of %d series, warnings %q; want %d and a cut warning", what, got, n, warns, DefaultMaxSeries)
		}
	}

	res := r.Run(ctx, Request{Expr: "stormctl_replicas", Time: now})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	cut("query", len(res.Series), res.Warnings)

	res = r.Run(ctx, Request{Expr: "stormctl_replicas", Range: &Range{Start: now.Add(-3 * time.Minute), End: now, Step: time.Minute}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	cut("query_range", len(res.Series), res.Warnings)
	if len(res.Series[0].Points) != 4 {
		t.Fatalf("a kept series has %d points, want 4", len(res.Series[0].Points))
	}

	vs, warns, _, err := c.API.LabelValues(ctx, "service", nil, now.Add(-time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	cut("label values", len(vs), warns)

	// A narrower selector is answered whole.
	res = r.Run(ctx, Request{Expr: `stormctl_replicas{service=~"svc-0000.*"}`, Time: now})
	if res.Err != nil || len(res.Series) != 10 || len(res.Warnings) != 0 {
		t.Fatalf("narrow: %d series, %q, %v", len(res.Series), res.Warnings, res.Err)
	}
}
