package main

import (
	"encoding/json"
	"testing"

	"github.com/stormctl/stormctl/alerts"
)

// A service that names its degraded mode in the context, and that the
// policy lets the autopilot pull degraded for, is served from that mode
// when its retry alert fires, rather than having its retries touched.
func TestAlertsServeEntersDegradedMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	serveAndFire(t, "contexts:\n  t:\n    redis: {namespace: dg}\n    services: {checkout: {degraded-mode: defer-payment}}\n"+
		"    autopilot: {retries: [checkout], degraded: [checkout]}\ncurrent-context: t\n")
	out, _, code := cli(t, "", "autopilot", "status", "-o", "json")
	var st struct {
		Actions []struct {
			Actor, Kind, Value string
			Targets            []string
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("autopilot status: exit %d, %v\n%s", code, err, out)
	}
	if len(st.Actions) != 1 || st.Actions[0].Actor != alerts.Actor || st.Actions[0].Kind != "degraded" ||
		st.Actions[0].Value != "defer-payment" || st.Actions[0].Targets[0] != "checkout" {
		t.Fatalf("autopilot status %s; want degraded checkout=defer-payment only", out)
	}
}
