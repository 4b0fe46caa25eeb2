package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lab run -o json carries the incident's timeline: each saved query's
// first firing, the retry signal's lead, the worst edge success and 5xx
// share, attempts per request p99, pods over time and abandoned work; the
// text summary says the same in words.
func TestLabRunReportsTheTimeline(t *testing.T) {
	code, stdout, stderr := run(t, "lab", "run", "--scenario", "gateway-blip", "--until", "6m", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Alerts []struct {
			Query       string   `json:"query"`
			FirstFiring *float64 `json:"first_firing_s"`
		} `json:"alerts"`
		LeadS         *float64                    `json:"lead_s"`
		MinEdge       *float64                    `json:"min_edge_success_rate"`
		Worst5xx      *float64                    `json:"max_edge_5xx_share"`
		P99           *int                        `json:"attempts_per_request_p99"`
		Pods          map[string][]map[string]any `json:"pods"`
		Abandoned     map[string]float64          `json:"peak_abandoned_work_per_s"`
		FirstEdge5xx  *float64                    `json:"first_edge_5xx_over_5pct_s"`
		PoolExhausted *float64                    `json:"first_pool_exhausted_s"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	fired := map[string]bool{}
	for _, a := range sum.Alerts {
		fired[a.Query] = a.FirstFiring != nil
	}
	if !fired["retry_ratio"] || !fired["amplification"] || !fired["edge_error_rate"] {
		t.Errorf("first firings %v", fired)
	}
	if sum.LeadS == nil || *sum.LeadS < 60 || sum.MinEdge == nil || sum.Worst5xx == nil || sum.P99 == nil || *sum.P99 < 4 ||
		len(sum.Pods["checkout"]) == 0 || sum.Abandoned["payment-gateway"] <= 0 || sum.FirstEdge5xx == nil || sum.PoolExhausted == nil {
		t.Errorf("summary lacks the timeline: %s", stdout)
	}

	code, stdout, _ = run(t, "lab", "run", "--scenario", "gateway-blip", "--until", "6m")
	if !regexp.MustCompile(`alert retry_ratio +fires at \d+s +\(warns at \d+s, calm ok\)`).MatchString(stdout) {
		t.Errorf("text summary lacks retry_ratio's firing and warning:\n%s", stdout)
	}
	for _, want := range []string{"edge 5xx above 5% from      ", "retry signal leads edge by  ", "amplification past crit at  "} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("text summary lacks %q:\n%s", want, stdout)
		}
	}
}

// Names in a scenario file reach the terminal escaped.
func TestLabSummaryEscapesScenarioNames(t *testing.T) {
	src, err := os.ReadFile("../../lab/sim/scenarios/payments-slow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hostile := strings.Replace(string(src), "name: payments-slow", `name: "slow\x1b[2J"`, 1)
	for _, field := range []string{"target: ", "name: ", "dependency: "} {
		hostile = strings.ReplaceAll(hostile, field+"payments\n", field+`"pay\x1b]0;pwned\x07"`+"\n")
	}
	file := filepath.Join(t.TempDir(), "hostile.yaml")
	if err := os.WriteFile(file, []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "lab", "run", "--scenario", file, "--until", "3m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.ContainsAny(stdout+stderr, "\x1b\x07") || !strings.Contains(stdout, `pay\u001b]0;pwned\u0007`) {
		t.Errorf("control characters reached the terminal:\n%q", stdout)
	}
}
