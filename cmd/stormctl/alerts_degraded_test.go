package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/internal/testenv"
)

// A service that names its degraded mode in the context, and that the
// policy lets the autopilot pull degraded for, is served from that mode
// when its retry alert fires, rather than having its retries touched.
func TestAlertsServeEntersDegradedMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	body := "contexts:\n  t:\n    redis: {namespace: dg}\n    services: {checkout: {degraded-mode: defer-payment}}\n" +
		"    autopilot: {retries: [checkout], degraded: [checkout]}\ncurrent-context: t\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORMCTL_CONFIG", cfg)
	t.Setenv("STORMCTL_PROMETHEUS_URL", prom.URL)
	t.Setenv("STORMCTL_REDIS_URL", rs.URL("", ""))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("ALERTS_TOKEN", "token-of-alertmanager-0123")
	srv := startAlertsServe(t)

	m := webhookFixture(t)
	m.Alerts[0].StartsAt = time.Now().Add(-time.Minute).UTC()
	raw, _ := json.Marshal(m)
	req, _ := http.NewRequest(http.MethodPost, "http://"+srv.Addr()+"/alertmanager", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer token-of-alertmanager-0123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("webhook: HTTP %d", resp.StatusCode)
	}
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
