package queries

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/stormctl/stormctl/internal/testenv"
)

func playbookOf(id string) string {
	if id == "retry_ratio" {
		return "retry-amplification"
	}
	return ""
}

// Every pack's alerting rules, and all packs together, pass the real
// promtool.
func TestAlertRulesPassPromtool(t *testing.T) {
	testenv.Need(t, "promtool")
	c := mustLoad(t)
	dir := t.TempDir()
	for _, pack := range append([]string{""}, builtinPacks...) {
		b, err := c.AlertRules(pack, Params{}, playbookOf)
		if err != nil {
			t.Fatalf("%q: %v", pack, err)
		}
		if !strings.Contains(string(b), "alert: ") {
			t.Errorf("%q: no alerting rules\n%s", pack, b)
		}
		file := filepath.Join(dir, "alerts-"+pack+".yaml")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("promtool", "check", "rules", file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool check rules for pack %q: %v\n%s\n%s", pack, err, out, b)
		}
	}
}

func TestAlertRulesShape(t *testing.T) {
	c := mustLoad(t)
	b, err := c.AlertRules("envoy", Params{}, playbookOf)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) != 1 || f.Groups[0].Name != "stormctl-envoy-alerts" {
		t.Fatalf("groups: %+v", f.Groups)
	}
	byName := map[string]rule{}
	for _, r := range f.Groups[0].Rules {
		if r.Record != "" {
			t.Errorf("recording rule %s in the alerting rules", r.Record)
		}
		byName[r.Alert] = r
	}
	rr, ok := byName["StormctlRetryRatio"]
	if !ok {
		t.Fatalf("no StormctlRetryRatio in %v", f.Groups[0].Rules)
	}
	want := map[string]string{AlertLabelQuery: "retry_ratio", "pack": "envoy", "severity": "critical",
		"service": "{{ $labels.job }}", "dependency": "{{ $labels.envoy_cluster_name }}"}
	for k, v := range want {
		if rr.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, rr.Labels[k], v)
		}
	}
	if rr.For != "20s" || !strings.HasSuffix(rr.Expr, ") > 0.3") || !strings.Contains(rr.Expr, "envoy_cluster_upstream_rq_total") {
		t.Errorf("retry_ratio rule: for %q expr %q", rr.For, rr.Expr)
	}
	if rr.Annotations[AlertAnnotPlaybook] != "retry-amplification" || rr.Annotations[AlertAnnotValue] != "{{ $value }}" ||
		rr.Annotations[AlertAnnotDashboard] != "stormctl dash --playbook retry-amplification --service {{ $labels.job }} -p service={{ $labels.job }} -p dependency={{ $labels.envoy_cluster_name }}" {
		t.Errorf("annotations: %+v", rr.Annotations)
	}
	if amp := byName["StormctlAmplification"]; amp.Annotations[AlertAnnotPlaybook] != "" ||
		amp.Annotations[AlertAnnotDashboard] != "stormctl dash --service {{ $labels.job }}" {
		t.Errorf("a query without a playbook: %+v", amp.Annotations)
	}
	// The user's label names (context packs.<pack>.labels) reach the labels.
	b, err = c.AlertRules("envoy", Params{Labels: map[string]string{"service": "app"}}, nil)
	if err != nil || !strings.Contains(string(b), "service: '{{ $labels.app }}'") && !strings.Contains(string(b), `service: "{{ $labels.app }}"`) {
		t.Errorf("label override: %v\n%s", err, b)
	}
}
