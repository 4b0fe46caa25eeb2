package queries

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// startFleetRules is a Prometheus holding what the catalogue's recording
// rules and, over those, its fleet rules for top wrote over the fleet's
// data (promtool, in two stages), and the runner of the raw fleet.
func startFleetRules(t testing.TB, f testenv.Fleet, top int) (cat *Catalog, recorded, raw *Runner) {
	t.Helper()
	cat, raw, p := startFleet(t, f)
	base, err := cat.Rules(DefaultPack, Params{})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := cat.FleetRules(DefaultPack, top)
	if err != nil {
		t.Fatal(err)
	}
	start := f.End.Add(-testenv.FleetStep * (testenv.FleetSamples - 1))
	blocks := p.StagedRuleBlocks(t, []string{string(base), string(fleet)}, start, f.End.Add(testenv.FleetStep), testenv.FleetStep)
	rp := testenv.StartPrometheus(t, testenv.PromOptions{Blocks: blocks})
	c, err := NewClient(config.Prometheus{URL: rp.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cat, NewRunner(c, RunnerOptions{Timeout: 30 * time.Second}), raw
}

// TestFleetRulesAgainstPrometheus reads every query's fleet reduction from
// its recording rules on 1,000 services: the same worst, in the same
// order, with the same values, and the same counts as the unrecorded
// fleet query of the raw metrics; and the answer came from the fleet
// rules themselves, not from the fallback. Asked for another N, it falls
// back to ranking the recorded series, still right.
func TestFleetRulesAgainstPrometheus(t *testing.T) {
	const top = DefaultRulesTop
	cat, recorded, raw := startFleetRules(t, bigFleet(1000), top)
	ctx := context.Background()
	compared := 0
	for _, q := range cat.Queries() {
		want, err := cat.RenderFleet(q.ID, "", Params{}, top)
		if err != nil {
			continue // not in the default pack
		}
		wres := raw.Run(ctx, want.Request(q.ID+"|raw", fleetEnd))
		if wres.Err != nil || wres.NoData != nil {
			continue // the fixture has no data for it
		}
		for _, n := range []int{top, 7} {
			f, err := cat.RenderRecordedFleet(q.ID, "", n)
			if err != nil {
				t.Fatal(err)
			}
			res := recorded.Run(ctx, f.Request(q.ID+"|recorded", fleetEnd))
			if res.Err != nil || res.NoData != nil {
				t.Fatalf("%s top %d: %v %v\n%s", q.ID, n, res.Err, res.NoData, f.Expr)
			}
			got, exp := SplitFleet(f, res.Series), SplitFleet(want, wres.Series)
			if len(exp.Worst) > n {
				exp.Worst = exp.Worst[:n]
			}
			compareFleet(t, q.ID, got, exp)
			from := q.FleetTopName()
			if n != top {
				from = q.RecordName() // no fleet rules for 7: the fallback
			}
			if len(got.Worst) == 0 || got.Worst[0].Labels["__name__"] != from {
				t.Errorf("%s top %d: answered from %v, want %s", q.ID, n, got.Worst, from)
			}
			if _, ok := got.Worst[0].Labels[FleetTopLabel]; ok {
				t.Errorf("%s: the worst keep %s: %v", q.ID, FleetTopLabel, got.Worst[0].Labels)
			}
		}
		compared++
	}
	if compared < 3 {
		t.Fatalf("compared %d queries with data, want amplification, retry_ratio and more", compared)
	}
}

// compareFleet compares two answers of the same fleet. The series tied
// with the last one kept are interchangeable (topk keeps any of them), so
// only their values are compared.
func compareFleet(t *testing.T, id string, got, want FleetResult) {
	t.Helper()
	if got.Total != want.Total || got.Warn != want.Warn || got.Crit != want.Crit {
		t.Errorf("%s: %s, want %s", id, got.Text(id), want.Text(id))
	}
	if len(got.Worst) != len(want.Worst) {
		t.Fatalf("%s: %d worst, want %d", id, len(got.Worst), len(want.Worst))
	}
	same := func(a, b float64) bool { return near(a, b) || a != a && b != b }
	for i := range want.Worst {
		g, w := got.Worst[i], want.Worst[i]
		tied := same(w.Value, want.Worst[len(want.Worst)-1].Value)
		if !tied && seriesKey(g) != seriesKey(w) || !same(g.Value, w.Value) {
			t.Errorf("%s worst[%d] = %s %v, want %s %v", id, i, seriesKey(g), g.Value, seriesKey(w), w.Value)
		}
	}
}

// TestFleetRulesNotLoaded: a server without any rules has no data, and
// says the fleet rules are not loaded and which recorded metric is missing.
func TestFleetRulesNotLoaded(t *testing.T) {
	cat, bare, _ := startFleet(t, testenv.Fleet{Services: 1, End: fleetEnd})
	f, err := cat.RenderRecordedFleet("amplification", "", DefaultRulesTop)
	if err != nil {
		t.Fatal(err)
	}
	res := bare.Run(context.Background(), f.Request("amplification", fleetEnd))
	if res.Err != nil || res.NoData == nil || !contains(res.NoData.Missing, "stormctl:amplification:ratio") ||
		!strings.HasPrefix(res.NoData.Message, "fleet rules not loaded (no stormctl:amplification:fleet_top{stormctl_top=\"20\"}") {
		t.Fatalf("%v %+v", res.Err, res.NoData)
	}
}
