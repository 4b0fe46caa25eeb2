package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// fleetFixture is 1,000 services × 3 dependencies: three storms on
// payments (4, 3 and 2 attempts per request) that began 5 minutes ago and
// four warm ledger calls, among 3,000 call paths. The data runs 5 minutes
// past now, so that queries at "now" still find samples in their rate
// windows however slowly a loaded machine gets through a test.
func fleetFixture(services int) testenv.Fleet {
	return testenv.Fleet{Services: services, End: time.Now().Truncate(testenv.FleetStep).Add(5 * time.Minute),
		Storm: map[int]float64{17: 4, services / 2: 3, services - 2: 2},
		Warm:  map[int]float64{5: 1.28, 42: 1.25, 300: 1.24, 700: 1.22}}
}

// TestQueryTopOnAFleet runs `query run --top` and `query check --all --top`
// against a real Prometheus holding 3,000 series per query: the worst N in
// order, the counts of the whole fleet, and the check's exit code.
func TestQueryTopOnAFleet(t *testing.T) {
	fleet := fleetFixture(1000)
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: fleet.OpenMetrics()})
	env := map[string]string{"STORMCTL_PROMETHEUS_URL": p.URL}

	out, errOut, code := runCLI(t, env, "query", "run", "amplification", "--top", "3", "-o", "json")
	if code != 0 {
		t.Fatalf("run --top: exit %d: %s", code, errOut)
	}
	var res resultJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if fl := res.Fleet; fl == nil || fl.Total != 3000 || fl.Crit == nil || *fl.Crit != 3 || fl.Warn == nil || *fl.Warn != 4 || fl.Top != 3 {
		t.Errorf("fleet counts %+v, want 3 crit, 4 warn of 3000", res.Fleet)
	}
	var got []string
	for _, s := range res.Series {
		got = append(got, s.Labels["service"]+"→"+s.Labels["dependency"]+" "+s.Status)
	}
	if want := "svc-0017→payments crit,svc-0500→payments crit,svc-0998→payments crit"; strings.Join(got, ",") != want {
		t.Errorf("worst 3:\n got %v\nwant %s", got, want)
	}

	// In a pipe the rows stay rows; the summary goes to stderr.
	out, errOut, code = runCLI(t, env, "query", "run", "amplification", "--top", "5")
	if rows := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(rows) != 5 || !strings.Contains(rows[3], "svc-0005") {
		t.Errorf("run --top 5: exit %d, rows %q", code, rows)
	}
	if want := "amplification: 3 crit, 4 warn of 3,000 series (worst 5 shown)"; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}

	out, errOut, code = runCLI(t, env, "query", "check", "--all", "--top", "2")
	if code != 4 {
		t.Errorf("check --all --top 2: exit %d, want 4 (breached)\n%s", code, errOut)
	}
	for _, want := range []string{"amplification: 3 crit, 4 warn of 3,000 series (worst 2 shown); held for 1m: 3 crit, 4 warn",
		"retry_ratio: 3 crit, 1 warn of 3,000 series (worst 2 shown); held for 20s: 3 crit, 1 warn"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("check stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := strings.Count(out, "amplification\t"); n != 2 || !strings.Contains(out, "svc-0017") {
		t.Errorf("check stdout: %d amplification rows, want the worst 2:\n%s", n, out)
	}
	// A calm fleet passes.
	if _, errOut, code := runCLI(t, env, "query", "check", "amplification", "--top", "2", "--time", "-15m"); code != 0 {
		t.Errorf("check 15m ago, before the storms: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := runCLI(t, env, "query", "run", "amplification", "--top", "0"); code != 2 || !strings.Contains(errOut, "--top") {
		t.Errorf("--top 0: exit %d %q, want a usage error", code, errOut)
	}
	if _, errOut, code := runCLI(t, env, "query", "run", "amplification", "--top", "3", "--recorded", "--service", "svc-0001"); code != 2 || !strings.Contains(errOut, "--recorded") {
		t.Errorf("--recorded --service: exit %d %q, want a usage error", code, errOut)
	}

	// The same answer from the recorded series of the exported rules, and
	// from their fleet reduction (--top 3): promtool backfills the file
	// without the fleet rules first, then the whole file over that.
	base, _, code := runCLI(t, env, "query", "export", "--format", "rules", "--top", "0")
	if code != 0 {
		t.Fatalf("export rules: exit %d", code)
	}
	withFleet, _, code := runCLI(t, env, "query", "export", "--format", "rules", "--top", "3")
	if code != 0 || !strings.Contains(withFleet, "record: stormctl:amplification:fleet_top") || strings.Contains(base, "fleet_top") {
		t.Fatalf("export rules --top 3: exit %d\n%s", code, withFleet)
	}
	end := fleet.End
	start := end.Add(-20 * time.Minute)
	// from names the series the worst were read from.
	for name, stages := range map[string][]string{"stormctl:amplification:ratio": {base}, "stormctl:amplification:fleet_top": {base, withFleet}} {
		blocks := p.StagedRuleBlocks(t, stages, start, end.Add(testenv.FleetStep), testenv.FleetStep)
		rec := testenv.StartPrometheus(t, testenv.PromOptions{Blocks: blocks})
		out, _, code := runCLI(t, map[string]string{"STORMCTL_PROMETHEUS_URL": rec.URL}, "query", "run", "amplification", "--top", "3", "--recorded", "--time", end.Format(time.RFC3339), "-o", "json")
		if code != 0 || !strings.Contains(out, `"__name__": "`+name+`"`) || !strings.Contains(out, "svc-0017") {
			t.Errorf("run --recorded: exit %d, want the worst from %s:\n%s", code, name, out)
		}
		_, errOut, code = runCLI(t, map[string]string{"STORMCTL_PROMETHEUS_URL": rec.URL}, "query", "check", "amplification", "--top", "3", "--recorded", "--time", end.Format(time.RFC3339))
		if want := "amplification: 3 crit, 4 warn of 3,000 series (worst 3 shown); held for 1m: 3 crit, 4 warn"; code != 4 || !strings.Contains(errOut, want) {
			t.Errorf("%s: check --recorded: exit %d, want 4 and %q:\n%s", name, code, want, errOut)
		}
		rec.Stop()
	}
	if _, errOut, code := runCLI(t, env, "query", "export", "--format", "rules", "--top", "-1"); code != 2 || !strings.Contains(errOut, "--top -1") {
		t.Errorf("export --top -1: exit %d %q, want a usage error", code, errOut)
	}
}
