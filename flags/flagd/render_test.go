package flagd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/open-feature/flagd/core/pkg/logger"
	flagdsync "github.com/open-feature/flagd/core/pkg/sync"

	"github.com/stormctl/stormctl/lever"
)

var t0 = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

func lv(kind lever.Kind, target, value string, version int64) lever.Lever {
	return lever.Lever{Kind: kind, Target: target, Value: value, ActionID: "act-" + target, Actor: "alice",
		Incident: "INC-7", CreatedAt: t0, ExpiresAt: t0.Add(10 * time.Minute), Version: version}
}

func storm() []lever.Lever {
	return []lever.Lever{
		lv(lever.Retries, "checkout", "cap:3", 2),
		lv(lever.Retries, "checkout->payments", "off", 5),
		lv(lever.Breaker, "payments", "open", 1),
		lv(lever.Breaker, "search->index", "open", 1),
		lv(lever.Shed, "search", "30", 4),
		lv(lever.Degraded, "checkout", "rules-only", 1),
	}
}

// evalAll loads raw into flagd's own evaluator and resolves key for ctx.
func evalAll(t *testing.T, raw []byte, key string, ctx map[string]any) (any, string) {
	t.Helper()
	ev, err := newEvaluator(logger.NewLogger(nil, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.SetState(flagdsync.DataSync{FlagData: string(raw), Source: source}); err != nil {
		t.Fatalf("SetState: %v", err)
	}
	r := ev.ResolveAsAnyValue(context.Background(), "t", key, ctx)
	if r.Error != nil {
		t.Fatalf("%s %v: %v", key, ctx, r.Error)
	}
	if n, ok := r.Value.(float64); ok {
		return int64(n), r.Variant
	}
	return r.Value, r.Variant
}

func TestRenderEvaluatesLikeTheNativeProvider(t *testing.T) {
	in := Input{Levers: storm()}
	raw := Render(in, Selector{}).Marshal()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(raw, in, Selector{}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cases := []struct {
		key         string
		svc, dep    string
		want        any
		wantVariant string
	}{
		{lever.RetriesEnabled, "checkout", "payments", false, "off"},
		{lever.RetriesEnabled, "checkout", "ledger", true, "cap:3"},
		{lever.RetriesEnabled, "search", "", true, VariantAbsent},
		{lever.RetriesMaxAttempts, "checkout", "payments", int64(1), "off"},
		{lever.RetriesMaxAttempts, "checkout", "", int64(3), "cap:3"},
		{lever.BreakerForcedOpen, "checkout", "payments", true, "open"},
		{lever.BreakerForcedOpen, "search", "index", true, "open"},
		{lever.BreakerForcedOpen, "checkout", "index", false, VariantAbsent},
		{lever.ShedPercent, "search", "", int64(30), "30"},
		{lever.ShedPercent, "checkout", "", int64(0), VariantAbsent},
		{lever.DegradedMode, "checkout", "", "rules-only", "rules-only"},
		{lever.AutoscalingFrozen, "checkout", "", false, VariantAbsent},
	}
	for _, c := range cases {
		ctx := map[string]any{"service": c.svc}
		if c.dep != "" {
			ctx["dependency"] = c.dep
		}
		got, variant := evalAll(t, raw, c.key, ctx)
		if got != c.want || variant != c.wantVariant {
			t.Errorf("%s for %s->%s = %v (%s), want %v (%s)", c.key, c.svc, c.dep, got, variant, c.want, c.wantVariant)
		}
	}
}

func TestRenderMetadataAndOrder(t *testing.T) {
	cfg := Render(Input{Levers: storm()}, Selector{})
	f := cfg.Flags[lever.RetriesEnabled]
	chain := f.Targeting["if"].([]any)
	// checkout->payments (an edge) comes before the service checkout.
	if got := chain[1]; got != "off" {
		t.Errorf("first rule's variant = %v, want off (the edge): %v", got, chain)
	}
	for k, want := range map[string]any{
		"checkout->payments.action_id":  "act-checkout->payments",
		"checkout->payments.actor":      "alice",
		"checkout->payments.incident":   "INC-7",
		"checkout->payments.version":    int64(5),
		"checkout->payments.expires_at": "2026-12-01T15:10:00Z",
	} {
		if f.Metadata[k] != want {
			t.Errorf("metadata %s = %v, want %v", k, f.Metadata[k], want)
		}
	}
	if cfg.Metadata["version"] != Version(Input{Levers: storm()}) {
		t.Errorf("set version %v", cfg.Metadata["version"])
	}
	if f := cfg.Flags[lever.RetriesMaxAttempts]; f.DefaultVariant != nil {
		t.Errorf("max_attempts has default variant %v; want null (the caller's default)", *f.DefaultVariant)
	}
}

func TestSelectorKeepsOnlyRulesThatCanMatch(t *testing.T) {
	sel, err := ParseSelector("service=checkout")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Levers: storm()}
	raw := Render(in, sel).Marshal()
	if strings.Contains(string(raw), `"search"`) || strings.Contains(string(raw), "search->index") {
		t.Errorf("selector service=checkout kept search's rules: %s", raw)
	}
	if !strings.Contains(string(raw), `"payments"`) {
		t.Errorf("selector service=checkout dropped the dependency-only breaker on payments")
	}
	v, _ := NewValidator()
	if err := v.Validate(raw, in, sel); err != nil {
		t.Fatal(err)
	}
	if got, _ := evalAll(t, raw, lever.RetriesEnabled, map[string]any{"service": "checkout", "dependency": "payments"}); got != false {
		t.Errorf("retries for checkout->payments under its selector = %v", got)
	}
	for _, bad := range []string{"service", "team=a", "service=a b", "flagSetId=other", "source=x"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector(%q) accepted", bad)
		}
	}
	if s, err := ParseSelector("flagSetId=stormctl"); err != nil || s != (Selector{}) {
		t.Errorf("flagSetId=stormctl = %v, %v", s, err)
	}
}

func TestStaleServesFailSafes(t *testing.T) {
	in := Input{Levers: storm(), Stale: true, FailSafe: map[string]any{lever.DegradedMode: "on", lever.RetriesEnabled: false}}
	raw := Render(in, Selector{}).Marshal()
	v, _ := NewValidator()
	if err := v.Validate(raw, in, Selector{}); err != nil {
		t.Fatal(err)
	}
	if got, variant := evalAll(t, raw, lever.DegradedMode, map[string]any{"service": "search"}); got != "on" || variant != VariantFailSafe {
		t.Errorf("degraded mode while stale = %v (%s), want the fail-safe on", got, variant)
	}
	if got, _ := evalAll(t, raw, lever.RetriesEnabled, map[string]any{"service": "search"}); got != false {
		t.Errorf("retries while stale = %v, want the fail-safe false", got)
	}
	if got, _ := evalAll(t, raw, lever.ShedPercent, map[string]any{"service": "search"}); got != int64(30) {
		t.Errorf("shed while stale = %v, want the last snapshot's 30", got)
	}
	if Version(in) == Version(Input{Levers: storm()}) {
		t.Error("a stale snapshot has the live snapshot's version")
	}
}

func TestValidateRefusesWhatClientsWouldReject(t *testing.T) {
	v, _ := NewValidator()
	in := Input{Levers: storm()}
	good := Render(in, Selector{})
	bad := map[string]func(c *Config){
		"unknown default variant": func(c *Config) {
			s := "nope"
			f := c.Flags[lever.ShedPercent]
			f.DefaultVariant = &s
			c.Flags[lever.ShedPercent] = f
		},
		"wrong variant type": func(c *Config) { c.Flags[lever.RetriesEnabled].Variants["off"] = "false" },
		"no variants": func(c *Config) {
			f := c.Flags[lever.AutoscalingFrozen]
			f.Variants = map[string]any{}
			c.Flags[lever.AutoscalingFrozen] = f
		},
		"a rule that lies": func(c *Config) { c.Flags[lever.RetriesEnabled].Variants["off"] = true },
	}
	for name, mutate := range bad {
		var c Config
		if err := json.Unmarshal(good.Marshal(), &c); err != nil {
			t.Fatal(err)
		}
		mutate(&c)
		raw, _ := json.Marshal(&c)
		if err := v.Validate(raw, in, Selector{}); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

func TestRenderSkipsLeversThatDoNotParse(t *testing.T) {
	in := Input{Levers: []lever.Lever{
		lv(lever.Retries, "checkout", "sometimes", 1),
		lv(lever.Shed, "a\"b", "30", 1),
		lv("teleport", "x", "on", 1),
		lv(lever.Degraded, "search", VariantAbsent, 1),
	}}
	cfg := Render(in, Selector{})
	if cfg.Metadata["skipped"] != 3 {
		t.Errorf("skipped = %v, want 3", cfg.Metadata["skipped"])
	}
	raw := cfg.Marshal()
	v, _ := NewValidator()
	if err := v.Validate(raw, in, Selector{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := evalAll(t, raw, lever.DegradedMode, map[string]any{"service": "search"}); got != VariantAbsent {
		t.Errorf("degraded mode named %q = %v", VariantAbsent, got)
	}
}
