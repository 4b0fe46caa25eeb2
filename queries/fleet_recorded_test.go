package queries

import (
	"context"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
)

// startRecordedFleet is a Prometheus holding only what the catalogue's
// recording rules (stormctl pack) wrote over the fleet's data: promtool
// evaluates them against a server with the raw fleet.
func startRecordedFleet(t testing.TB, f testenv.Fleet) (*Catalog, *Runner) {
	t.Helper()
	cat, _, raw := startFleet(t, f)
	rules, err := cat.Rules(DefaultPack, Params{})
	if err != nil {
		t.Fatal(err)
	}
	start := f.End.Add(-testenv.FleetStep * (testenv.FleetSamples - 1))
	blocks := raw.RuleBlocks(t, string(rules), start, f.End.Add(testenv.FleetStep), testenv.FleetStep)
	raw.Stop()
	p := testenv.StartPrometheus(t, testenv.PromOptions{Blocks: blocks})
	c, err := NewClient(config.Prometheus{URL: p.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cat, NewRunner(c, RunnerOptions{Timeout: 30 * time.Second})
}

// TestRecordedFleetAgainstPrometheus ranks and counts the recorded series
// of 1,000 services: the same worst, in the same order, and the same
// counts as from the raw metrics (TestFleetAgainstPrometheus).
func TestRecordedFleetAgainstPrometheus(t *testing.T) {
	cat, runner := startRecordedFleet(t, bigFleet(1000))
	f, err := cat.RenderRecordedFleet("amplification", "", 5)
	if err != nil {
		t.Fatal(err)
	}
	// No fleet rules here: the fallback ranks the recorded series.
	res := runner.Run(context.Background(), f.Request("", fleetEnd))
	if res.Err != nil || res.NoData != nil {
		t.Fatalf("%v %v\n%s", res.Err, res.NoData, f.Expr)
	}
	got := SplitFleet(f, res.Series)
	want := []string{"svc-0017→payments", "svc-0500→payments", "svc-0998→payments", "svc-0005→ledger", "svc-0042→ledger"}
	for i, w := range want {
		if i >= len(got.Worst) || seriesKey(got.Worst[i]) != w {
			t.Fatalf("worst %v, want %v", got.Worst, want)
		}
	}
	if !near(got.Worst[0].Value, 4) || got.Total != 3000 || got.Crit != 3 || got.Warn != 4 {
		t.Errorf("recorded: %v, %s", got.Worst[0].Value, got.Text("amplification"))
	}
	// Without the rules, "no data" names the recorded metric to load.
	_, bare, _ := startFleet(t, testenv.Fleet{Services: 1, End: fleetEnd})
	res = bare.Run(context.Background(), f.Request("", fleetEnd))
	if res.NoData == nil || !contains(res.NoData.Missing, "stormctl:amplification:ratio") {
		t.Errorf("no rules loaded: %+v", res.NoData)
	}
}
