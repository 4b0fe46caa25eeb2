package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/iostreams"
)

// `lab run --autopilot -o json` keeps the summary's keys and adds what the
// autopilot did: gateway-blip's storm has checkout defer the payment (its
// degraded path), as the automation identity's lever reaching the fleet,
// within 30 s of the first retry alert, and the edge stays under 5%. A
// context that lets the autopilot pull only retries gets them capped
// instead, while they still rescue the requests. --events cannot be given
// with it.
func TestLabRunAutopilot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway-blip with the alerting loop")
	}
	stdout, stderr := labAutopilot(t, os.DevNull)
	var out struct {
		Scenario  string   `json:"scenario"`
		Worst5xx  *float64 `json:"max_edge_5xx_share"`
		LeadS     *float64 `json:"lead_s"`
		Autopilot *struct {
			Actions []struct {
				Kind   string  `json:"kind"`
				Target string  `json:"target"`
				Value  string  `json:"value"`
				AtS    float64 `json:"at_s"`
			} `json:"actions"`
			FirstSignalS *float64 `json:"first_signal_s"`
			LeverS       *float64 `json:"lever_s"`
		} `json:"autopilot"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	ap := out.Autopilot
	if out.Scenario != "gateway-blip" || out.Worst5xx == nil || ap == nil || len(ap.Actions) == 0 || ap.LeverS == nil {
		t.Fatalf("summary %s", stdout)
	}
	a := ap.Actions[0]
	if a.Kind != "degraded" || a.Target != "checkout" || a.Value != "defer-payment" || a.AtS != *ap.LeverS || *out.Worst5xx >= 0.05 {
		t.Errorf("first action %+v, lever_s %v, worst minute %v", a, *ap.LeverS, *out.Worst5xx)
	}
	if ap.FirstSignalS != nil && *ap.LeverS-*ap.FirstSignalS > 30 {
		t.Errorf("lever at %.0fs, first retry alert at %.0fs", *ap.LeverS, *ap.FirstSignalS)
	}
	if !strings.Contains(stderr, "autopilot on: 10 alerting rules") {
		t.Errorf("stderr: %s", stderr)
	}

	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  lab:\n    autopilot: {retries: [checkout]}\ncurrent-context: lab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _ = labAutopilot(t, cfg)
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Autopilot.Actions) == 0 {
		t.Fatalf("%v: %s", err, stdout)
	}
	if a := out.Autopilot.Actions[0]; a.Kind != "retries" || a.Target != "checkout->payment-gateway" || a.Value != "cap:2" {
		t.Errorf("retries only: first action %+v", a)
	}

	code, stdout, _ := run(t, "lab", "run", "--scenario", "payments-slow-protected", "--until", "4m", "--autopilot")
	if code != 0 || !strings.Contains(stdout, "first lever at never") {
		t.Errorf("protected variant: exit %d\n%s", code, stdout)
	}
	events := filepath.Join(t.TempDir(), "events.yaml")
	if err := os.WriteFile(events, []byte("- {at: 3m, kind: retries, target: checkout->payment-gateway, value: \"off\", ttl: 10m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "lab", "run", "--scenario", "gateway-blip", "--autopilot", "--events", events); code != 2 ||
		!strings.Contains(stderr, "--autopilot and --events") {
		t.Errorf("--autopilot with --events: exit %d, want 2: %s", code, stderr)
	}
}

// labAutopilot runs gateway-blip's first 5 minutes with the autopilot and
// the config file cfg.
func labAutopilot(t *testing.T, cfg string) (stdout, stderr string) {
	t.Helper()
	t.Setenv("STORMCTL_CONFIG", cfg)
	io, _, out, errOut := iostreams.Test()
	code := Main([]string{"lab", "run", "--scenario", "gateway-blip", "--until", "5m", "--autopilot", "-o", "json"}, io)
	stdout, stderr = out.String(), errOut.String()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return stdout, stderr
}
