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

// Every pack's rules, and all packs together, pass the real promtool,
// and again with the fleet rules (RulesWithFleet).
func TestRulesPassPromtool(t *testing.T) {
	testenv.Need(t, "promtool")
	c := mustLoad(t)
	dir := t.TempDir()
	for i, pack := range append(append([]string{""}, builtinPacks...), append([]string{""}, builtinPacks...)...) {
		b, err := c.Rules(pack, Params{})
		if withFleet := i > len(builtinPacks); withFleet {
			b, err = c.RulesWithFleet(pack, Params{}, DefaultRulesTop)
			if err == nil && !strings.Contains(string(b), ":fleet_levels") {
				t.Errorf("%q: no fleet rules\n%s", pack, b)
			}
			pack += "-fleet"
		}
		if err != nil {
			t.Fatalf("%q: %v", pack, err)
		}
		file := filepath.Join(dir, "rules-"+pack+".yaml")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("promtool", "check", "rules", file).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool check rules for pack %q: %v\n%s\n%s", pack, err, out, b)
		}
	}
}

func TestRulesShape(t *testing.T) {
	c := mustLoad(t)
	b, err := c.Rules("resilience4j", Params{Service: "checkout"})
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) != 1 || f.Groups[0].Name != "stormctl-resilience4j" {
		t.Fatalf("groups: %+v", f.Groups)
	}
	byName := map[string]rule{}
	for _, r := range f.Groups[0].Rules {
		byName[r.Record+r.Alert] = r
	}
	rec := byName["stormctl:amplification:ratio"]
	if rec.Labels["pack"] != "resilience4j" || rec.Labels["bound"] != "lower" || !strings.Contains(rec.Expr, `job="checkout"`) {
		t.Errorf("recording rule: %+v", rec)
	}
	crit := byName["StormctlAmplificationCritical"]
	if crit.Expr != `stormctl:amplification:ratio{pack="resilience4j"} > 1.3` || crit.For != "1m" ||
		crit.Labels["severity"] != "critical" || !strings.Contains(crit.Annotations["description"], "lower bound") {
		t.Errorf("critical alert: %+v", crit)
	}
	if w := byName["StormctlAmplificationWarning"]; w.Expr != `stormctl:amplification:ratio{pack="resilience4j"} > 1.2` {
		t.Errorf("warning alert: %+v", w)
	}
	if _, ok := byName["stormctl:replica_churn:count"]; ok {
		t.Error("a pack's group must hold only the queries it answers")
	}
	if _, err := c.Rules("nope", Params{}); err == nil {
		t.Error("an unknown pack must be refused")
	}
	if _, err := c.Rules("", Params{Service: `x"}`}); err == nil {
		t.Error("invalid params must be refused")
	}
}
