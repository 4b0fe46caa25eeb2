package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/testenv"
)

// `stormctl alerts serve` through Main with a real Redis and Prometheus:
// a firing webhook opens an incident and the autopilot's lever shows in
// `autopilot status`; pause is journaled and shown.
func TestAlertsServeAndAutopilotCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	body := "contexts:\n  t:\n    redis: {namespace: al}\n    autopilot: {retries: [checkout]}\n    alerts: {autopilot-ttl: 3m}\ncurrent-context: t\n"
	cfg := serveAndFire(t, body)

	out, _, code := cli(t, "", "autopilot", "status", "-o", "json")
	var st struct {
		Paused  bool                `json:"paused"`
		Allow   map[string][]string `json:"allow"`
		TTL     string              `json:"ttl"`
		Actions []struct {
			Actor, State, Value string
			Targets             []string
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("autopilot status: exit %d, %v\n%s", code, err, out)
	}
	if st.Paused || st.TTL != "3m0s" || len(st.Allow["retries"]) != 1 || len(st.Actions) != 1 ||
		st.Actions[0].Actor != alerts.Actor || st.Actions[0].Value != "off" || st.Actions[0].Targets[0] != "checkout->payments" {
		t.Fatalf("autopilot status %+v", st)
	}
	if out, _, code := cli(t, "alice", "autopilot", "pause", "--reason", "game day"); code != 0 {
		t.Fatalf("autopilot pause: exit %d\n%s", code, out)
	}
	out, _, _ = cli(t, "", "autopilot", "status")
	if !strings.Contains(out, "PAUSED by alice") {
		t.Errorf("status after pause:\n%s", out)
	}
	out, _, _ = cli(t, "", "journal", "export", "--format", "jsonl")
	for _, ev := range []string{`"alert.fired"`, `"autopilot.paused"`, `"incident.opened"`} {
		if !strings.Contains(out, ev) {
			t.Errorf("journal has no %s", ev)
		}
	}
	if _, _, code := cli(t, "", "autopilot", "pause"); code != 2 {
		t.Errorf("pause without --reason: exit %d, want 2", code)
	}
	// A lease shorter than a notice's post could take is refused before
	// anything listens.
	short := strings.Replace(body, "autopilot-ttl: 3m", "autopilot-ttl: 3m, event-lease: 5s", 1)
	if err := os.WriteFile(cfg, []byte(short), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, "", "alerts", "serve", "--listen", "127.0.0.1:0", "--management-addr", "127.0.0.1:0", "--token-env", "ALERTS_TOKEN")
	if code != 2 || !strings.Contains(errOut, "alerts.event-lease: 5s is under the least, 10s") {
		t.Errorf("alerts serve with a 5s lease: exit %d, want 2\n%s", code, errOut)
	}
}

// serveAndFire starts `stormctl alerts serve` with the config file body,
// a real Redis and a Prometheus holding the storm fixture, and posts it
// the firing webhook fixture as Alertmanager would. It returns the config
// file's path.
func serveAndFire(t *testing.T, body string) string {
	t.Helper()
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
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
	return cfg
}

// startAlertsServe runs `stormctl alerts serve` through Main on free
// loopback ports with the token of $ALERTS_TOKEN, in the test's
// environment, until the test ends (then it must exit 0).
func startAlertsServe(t *testing.T) *alerts.Server {
	t.Helper()
	started := make(chan *alerts.Server, 1)
	var cancel context.CancelFunc
	var mu sync.Mutex
	alertsServeStarted = func(s *alerts.Server, c context.CancelFunc) { mu.Lock(); cancel = c; mu.Unlock(); started <- s }
	t.Cleanup(func() { alertsServeStarted = nil })
	done := make(chan int, 1)
	io, _, _, errOut := iostreams.Test()
	go func() {
		done <- Main([]string{"alerts", "serve", "--listen", "127.0.0.1:0", "--management-addr", "127.0.0.1:0", "--token-env", "ALERTS_TOKEN"}, io)
	}()
	var srv *alerts.Server
	select {
	case srv = <-started:
	case code := <-done:
		t.Fatalf("alerts serve exited %d\n%s", code, errOut)
	case <-time.After(20 * time.Second):
		t.Fatal("alerts serve did not start")
	}
	t.Cleanup(func() {
		mu.Lock()
		cancel()
		mu.Unlock()
		if code := <-done; code != 0 {
			t.Errorf("alerts serve exited %d\n%s", code, errOut)
		}
	})
	return srv
}

// webhookFixture is alerts' webhook fixture: one firing retry_ratio alert
// for checkout->payments, as Alertmanager posts it.
func webhookFixture(t *testing.T) alerts.Message {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "alerts", "testdata", "webhook-v4-firing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m alerts.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestQueryExportAlerts(t *testing.T) {
	code, out, errOut := run(t, "query", "export", "--format", "rules", "--alerts", "--pack", "envoy")
	if code != 0 || !strings.Contains(out, "alert: StormctlRetryRatio") || strings.Contains(out, "record:") ||
		!strings.Contains(out, "playbook: retry-amplification") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// cli runs stormctl in-process with the test's config and environment.
func cli(t *testing.T, actor string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("STORMCTL_ACTOR", actor)
	io, _, out, errOut := iostreams.Test()
	code := Main(args, io)
	return out.String(), errOut.String(), code
}
