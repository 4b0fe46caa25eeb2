package playbooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

// TestParseErrorPositions checks that every problem of a broken file is
// reported at once, in file order, at the line and column of the node at
// fault, with the fix.
func TestParseErrorPositions(t *testing.T) {
	cases := map[string][]string{
		"syntax.yaml":        {"4:8: sequence end token ']' not found"},
		"unknown-field.yaml": {"8:5: unknown field \"qurey\" (check the spelling"},
		"durations.yaml":     {"11:10: ttl is not a duration (write a duration such as 30s, 5m or 1h)"},
		"ttl-too-long.yaml":  {"11:10: ttl 1h0m0s exceeds the maximum 15m0s for breaker levers (use ttl: 15m0s or less"},
		"many.yaml": {
			`8:11: duplicate parameter "service"`,
			`10:14: invalid pattern: error parsing regexp: missing closing ]: ` + "`[a-z`",
			`14:12: unknown query "amplifcation" (did you mean amplification?)`,
			`16:13: bad expectation: "above 1.3" does not start with a comparison`,
			`17:9: duplicate step id "confirm" (also steps[0]) (rename one of them)`,
			`23:11: unknown lever kind "retry" (use one of retries, breaker, autoscaling, degraded, shed)`,
			`24:13: undefined parameter "svc" (declare it under parameters, or use one of: service, bad)`,
			`28:16: requires names unknown step "nope" (name the id of a step in this playbook: confirm, act, later-only, poll)`,
			`29:15: rollback names unknown step "missing"`,
			`32:11: a template may only insert a parameter, as {{ .params.NAME }}`,
			`33:20: step "confirm" stops the run when it fails, so this step could never run (set on_fail: continue on step "confirm")`,
			`34:7: wait step "poll" needs a timeout of at most 1h (bound the wait, e.g. timeout: 5m)`,
			`36:12: templates are not allowed in query`,
			`38:10: for needs an ordering comparison, not ==`,
		},
		"not-applicable.yaml": {
			`2:7: kind is "Other" (write kind: Playbook)`,
			`3:7: invalid playbook name "Not_A_Name"`,
			`4:8: a playbook needs a title`,
			`11:12: query does not apply to a note step (remove it; it applies to check or wait steps)`,
			`12:10: ttl does not apply to a note step (remove it; it applies to action steps)`,
			`17:14: default "maybe" is not a choice`,
			`22:20: when names step "later", which does not come before this step`,
			`27:7: wait step "wait-forever" needs a timeout`,
			`36:12: value does not apply to a release`,
			`37:15: step "undo" cannot roll itself back`,
			`41:21: step "ask" has no when: condition, so it is never skipped and this step could never run (give step "ask" a when: condition)`,
			`45:11: when needs exactly one of passed, failed, skipped or param`,
			`49:19: when names unknown parameter "mode" (declare it under parameters, or name one of: service)`,
			`53:19: parameter "service" is always given, so this condition always holds`,
		},
	}
	cat := catalog(t)
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", "broken", file)
			_, err := ParseFile(path, cat)
			var errs yamlfile.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want yamlfile.Errors, got %v", err)
			}
			if len(errs) != len(want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
			}
			for i, e := range errs {
				if got := e.Error(); !strings.HasPrefix(got, path+":"+want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s:%s…", i, got, path, want[i])
				}
			}
		})
	}
}

func TestLoadUserOverridesBuiltinAndReportsAllFiles(t *testing.T) {
	cat := catalog(t)
	dir := t.TempDir()
	user := strings.Replace(readBuiltin(t, "1-retry-amplification.yaml"), "value: \"cap:2\"\n    ttl: 30m", "value: \"cap:2\"\n    ttl: 10m", 1)
	write(t, filepath.Join(dir, "mine.yaml"), user)
	set, err := Load(cat, dir)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := set.Get("retry-amplification")
	if err != nil {
		t.Fatal(err)
	}
	if pb.Builtin || pb.Source != filepath.Join(dir, "mine.yaml") || pb.Overrides != "builtin:1-retry-amplification.yaml" {
		t.Fatalf("override not taken: builtin=%v source=%s overrides=%s", pb.Builtin, pb.Source, pb.Overrides)
	}
	if got := pb.Step("retries-cap").TTL.D().String(); got != "10m0s" {
		t.Fatalf("ttl %s, want the user's 10m", got)
	}
	if len(set.List()) != 6 {
		t.Fatalf("%d playbooks, want the 6 built-ins", len(set.List()))
	}

	bad := t.TempDir()
	write(t, filepath.Join(bad, "a.yaml"), "apiVersion: stormctl/v1\nkind: Playbook\nname: a\ntitle: t\nsteps: []\n")
	write(t, filepath.Join(bad, "b.yml"), "name: [\n")
	_, err = Load(cat, bad, filepath.Join(bad, "missing"))
	if exit.Code(err) != exit.Usage {
		t.Fatalf("exit %d, want 2: %v", exit.Code(err), err)
	}
	for _, want := range []string{"a.yaml:5:8: a playbook needs at least one step", "b.yml:1:", "missing: open"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := set.Get("retry-amplificaton"); exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "did you mean retry-amplification") {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestResolveParams(t *testing.T) {
	set, err := Load(catalog(t))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := set.Get("shared-pool-exhaustion")
	got, err := pb.Resolve(map[string]string{"service": "checkout", "dependency": "inventory"})
	if err != nil {
		t.Fatal(err)
	}
	if got["shed_percent"] != "20" || got["pool"] != "" {
		t.Fatalf("defaults not applied: %v", got)
	}
	_, err = pb.Resolve(map[string]string{"service": "check out", "shed_percent": "200", "colour": "red"})
	if exit.Code(err) != exit.Usage {
		t.Fatalf("want exit 2, got %v", err)
	}
	for _, want := range []string{"--param dependency=... is required", `--param service="check out" does not match`,
		`--param shed_percent="200" does not match`, `no parameter "colour"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := ParseParams([]string{"service"}); exit.Code(err) != exit.Usage {
		t.Fatalf("NAME without =: %v", err)
	}
}

func TestExpectations(t *testing.T) {
	cases := []struct {
		src  string
		v    float64
		want bool
	}{
		{"> 1.3", 1.31, true}, {"> 1.3", 1.3, false}, {">= 1.3", 1.3, true}, {"<0.7", 0.69, true},
		{"<= 0.7", 0.71, false}, {"== 0", 0, true}, {"!= 0", 0, false}, {"> 1", nan(), false},
	}
	for _, c := range cases {
		e, err := ParseExpectation(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := e.Holds(c.v); got != c.want {
			t.Errorf("%s holds for %v = %v, want %v", c.src, c.v, got, c.want)
		}
	}
	// For (throughout the window) and within (at some moment of it) pick
	// the window's minimum or maximum by the side the bound is on.
	for _, c := range []struct {
		src              string
		throughout, some string
	}{{"> 1", "min_over_time", "max_over_time"}, {">= 1", "min_over_time", "max_over_time"},
		{"< 1", "max_over_time", "min_over_time"}, {"<= 0", "max_over_time", "min_over_time"}, {"== 0", "", ""}} {
		e, _ := ParseExpectation(c.src)
		if e.overTime(true) != c.throughout || e.overTime(false) != c.some {
			t.Errorf("%s: for %q, within %q", c.src, e.overTime(true), e.overTime(false))
		}
	}
	for _, bad := range []string{"", "1.3", "> ", "> x", "> NaN", "> Inf", "=> 1", "~ 2"} {
		if _, err := ParseExpectation(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func readBuiltin(t *testing.T, name string) string {
	t.Helper()
	data, err := builtinFS.ReadFile("builtin/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
