package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const incidents = "../../policy/testdata/incidents/"

// TestPolicyAnalyze runs `stormctl policy analyze` as a CI gate would: the
// JSON keys, the exit codes of --fail-on, and file:line:col errors.
func TestPolicyAnalyze(t *testing.T) {
	code, out, errOut := run(t, "policy", "analyze", incidents+"shared-pool.yaml", "-o", "json")
	if code != 4 || !strings.Contains(errOut, "finding(s) at crit or above") {
		t.Fatalf("exit %d, stderr %q; want 4", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"deadline_s", "demanded_concurrency", "dependency", "dependency_p99_s", "dependency_rps_worst", "dependency_success", "entry", "files", "findings", "hops",
		"name", "occupancy_class", "occupancy_s", "pool", "pool_size", "rate_rps", "saturation_rps", "worst_case_attempts"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v,\nwant %v", keys, want)
	}
	wca := got["worst_case_attempts"].(map[string]any)
	if wca["total"] != 8.0 || wca["by_class"].(map[string]any)["timeout"] != 4.0 || got["occupancy_s"] != 1.5 ||
		got["demanded_concurrency"] != 600.0 || got["pool_size"] != 200.0 || got["saturation_rps"] != 133.333 || got["dependency_rps_worst"] != 3200.0 {
		t.Errorf("figures: %s", out)
	}
	f0 := got["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "severity", "hop", "message", "fix"} {
		if _, ok := f0[k]; !ok {
			t.Errorf("finding without %s: %v", k, f0)
		}
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, `apiVersion: stormctl/v1
kind: CallPath
name: good
rate: 100/s
hops:
  - service: checkout
    pool: {name: bulkhead, size: 500}
    timeout: 1s
    retry: {attempts: 2, base: 100ms, jitter: full, on: [timeout], budget: 10%, idempotency_key: true}
  - service: client
    retry: {attempts: 2, on: [connect_error]}
`)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{good}, 0, "multiplied_retries"}, // warnings only, gate at crit
		{[]string{good, "--fail-on", "warn"}, 4, "transport_retry_stacked"},
		{[]string{good, "--rate", "2000/s"}, 4, "pool_saturation"},
		{[]string{good, "--fail-on", "info"}, 2, ""},
		{[]string{good, "--rate", "fast"}, 2, ""},
		{[]string{good, "--lab-class", "sometimes", "--lab"}, 2, ""},
		{[]string{filepath.Join(dir, "missing.yaml")}, 2, ""},
		{nil, 2, ""},
	} {
		code, out, errOut := run(t, append([]string{"policy", "analyze"}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("%v: exit %d (want %d)\n%s%s", c.args, code, c.code, out, errOut)
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "apiVersion: stormctl/v1\nkind: CallPath\nhops:\n  - service: a\n    timeout: soon\n")
	if code, _, errOut := run(t, "policy", "analyze", bad); code != 2 || !strings.Contains(errOut, "bad.yaml:5:14: timeout \"soon\"") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	// --path files come first, then the arguments, outermost first.
	code, out, _ = run(t, "policy", "analyze", "--path", incidents+"shared-pool.yaml", "../../policy/testdata/import/envoy-routes.yaml", "-o", "json")
	if code != 4 || !strings.Contains(out, `"service": "envoy:inventory->inventory"`) || !strings.Contains(out, `"total": 32`) {
		t.Errorf("--path: exit %d\n%s", code, out)
	}
}

// TestPolicyLab rehearses a path in the lab through the CLI and runs the
// scenario it wrote with `stormctl lab run`.
func TestPolicyLab(t *testing.T) {
	file := filepath.Join(t.TempDir(), "storm.yaml")
	code, out, errOut := run(t, "policy", "analyze", incidents+"lockstep.yaml", "--rate", "100/s", "--lab", "--lab-out", file, "-o", "json")
	if code != 4 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rep struct {
		Lab struct {
			Class string `json:"class"`
			Agree bool   `json:"agree"`
			Rows  []struct {
				Metric               string
				Predicted, Simulated *float64
			} `json:"rows"`
		} `json:"lab"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Lab.Class != "timeout" || !rep.Lab.Agree || len(rep.Lab.Rows) != 5 || *rep.Lab.Rows[0].Predicted != 4 {
		t.Errorf("lab: %+v\n%s", rep.Lab, out)
	}
	code, out, errOut = run(t, "lab", "run", "--scenario", file, "-o", "json")
	if code != 0 || !strings.Contains(out, `"max_attempts_per_request": 4`) {
		t.Errorf("lab run of the written scenario: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "policy", "analyze", incidents+"lockstep.yaml", "--rate", "100/s", "--lab")
	if code != 4 || !strings.Contains(out, "lab rehearsal: scenario checkout-payments-timeout") || !strings.Contains(out, "amplification\t4\t") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	// A rehearsal that cannot agree says so on stderr; the exit code stays
	// the findings' (none at crit here).
	hang := filepath.Join(t.TempDir(), "hang.yaml")
	writeFile(t, hang, "apiVersion: stormctl/v1\nkind: CallPath\nrate: 5/s\nhops:\n  - {service: batch, pool: {size: 2000}, timeout: 200s}\n")
	code, out, errOut = run(t, "policy", "analyze", hang, "--lab")
	if code != 0 || !strings.Contains(errOut, "the lab does not agree with the prediction within ±10%") || !strings.Contains(out, "lab note: a request holds the entry 200s") {
		t.Errorf("disagreement: exit %d\n%s\n%s", code, out, errOut)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
