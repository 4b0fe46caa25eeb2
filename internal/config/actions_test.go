package config

import (
	"testing"
	"time"
)

func TestActionSections(t *testing.T) {
	f, err := Load(write(t, `current-context: prod
contexts:
  prod:
    inventory:
      services: [checkout, ledger]
      dependencies: [payments]
      from-prometheus: false
    policy:
      roles: {alice: responder, carol: commander}
      default-role: viewer
      kinds: {responder: [retries, breaker]}
      approval: [autoscaling]
      approvers: [commander]
      max-ttl: {retries: 10m}
      blast-radius: 3
      rate-limit: {window: 30s, per-actor: 2, overall: 5}
    evidence:
      retries: [amplification]
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Resolve(Overrides{}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	inv, p := r.Inventory, r.Policy
	if len(inv.Services) != 2 || inv.Dependencies[0] != "payments" || inv.FromPrometheus == nil || *inv.FromPrometheus {
		t.Fatalf("inventory: %+v", inv)
	}
	if p.Roles["carol"] != "commander" || p.DefaultRole != "viewer" || len(p.Kinds["responder"]) != 2 ||
		p.Approval[0] != "autoscaling" || p.Approvers[0] != "commander" || time.Duration(p.MaxTTL["retries"]) != 10*time.Minute ||
		p.BlastRadius != 3 || time.Duration(p.RateLimit.Window) != 30*time.Second || p.RateLimit.PerActor != 2 || p.RateLimit.Overall != 5 {
		t.Fatalf("policy: %+v", p)
	}
	if r.Evidence["retries"][0] != "amplification" {
		t.Fatalf("evidence: %+v", r.Evidence)
	}
	if _, err := Load(write(t, "contexts:\n  x:\n    policy:\n      blast: 3\n")); err == nil {
		t.Fatal("an unknown policy field must be an error")
	}
}
