package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// TestAlertsServeKilledMidEvent: real Alertmanager routes a firing alert to
// a real `alerts serve` process, which is SIGKILLed while its autopilot
// waits on a Prometheus that never answers, after it journaled alert.fired.
// Its replacement on the same address (a restarted pod, or the Service's
// other replica) acts on Alertmanager's retry once the dead one's lease
// runs out: the autopilot's lever is pulled once, into the one incident.
// Before the lease, the event stayed claimed by the dead process for 48 h
// and every retry was answered "duplicate": the alert was lost.
func TestAlertsServeKilledMidEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds stormctl; starts redis-server, prometheus and alertmanager")
	}
	testenv.Need(t, testenv.AlertmanagerBin, "prometheus")
	const token = "token-of-alertmanager-0123"
	listen := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	am := testenv.StartAlertmanager(t, fmt.Sprintf(`route:
  receiver: stormctl
  group_by: [alertname, service, dependency]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: stormctl
    webhook_configs:
      - url: http://%s/alertmanager
        http_config: {authorization: {type: Bearer, credentials: %s}}
`, listen, token))
	prom := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	rs := testenv.StartRedis(t, testenv.RedisOptions{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("contexts:\n  t:\n    redis: {namespace: kill}\n    autopilot: {retries: [checkout]}\n"+
		"    alerts: {event-lease: 8s}\ncurrent-context: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	serve := func(name, promURL string) *exec.Cmd {
		cmd := exec.Command(bin, "alerts", "serve", "--listen", listen, "--management-addr", "127.0.0.1:0", "--token-env", "ALERTS_TOKEN")
		cmd.Env = append(os.Environ(), "STORMCTL_CONFIG="+cfg, "STORMCTL_PROMETHEUS_URL="+promURL, "STORMCTL_REDIS_URL="+rs.URL("", ""),
			"XDG_STATE_HOME="+filepath.Join(dir, name), "ALERTS_TOKEN="+token)
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("%s's log:\n%s", name, b)
			}
		})
		waitUntil(t, name+" listening on "+listen, 30*time.Second, func() bool {
			c, err := net.Dial("tcp", listen)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return cmd
	}

	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer c.Close()
	store, err := controlplane.NewStore(ctx, c, "kill")
	if err != nil {
		t.Fatal(err)
	}
	entries := func() []journal.Entry {
		var out []journal.Entry
		for e, err := range journal.Entries(store.Journal().Range(ctx, "-", "+")) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	count := func(es []journal.Entry, ev journal.Event) (n int) {
		for _, e := range es {
			if e.Event == ev {
				n++
			}
		}
		return n
	}

	a := serve("first", hangingServer(t))
	postAlert(t, am.URL)
	waitUntil(t, "the first receiver's alert.fired", 60*time.Second, func() bool { return count(entries(), alerts.AlertFired) > 0 })
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = a.Wait()
	if l, _, _, err := store.Get(ctx, lever.Retries, "checkout->payments"); err != nil || l != nil {
		t.Fatalf("lever %+v, %v before the second receiver: the first was to be killed before its autopilot acted", l, err)
	}

	serve("second", prom.URL)
	var l *lever.Lever
	waitUntil(t, "the autopilot's lever, pulled by the second receiver", 90*time.Second, func() bool {
		l, _, _, err = store.Get(ctx, lever.Retries, "checkout->payments")
		return err == nil && l != nil
	})
	t.Logf("lever pulled %s after the first receiver was killed", time.Since(killed).Round(100*time.Millisecond))
	if l.Value != "off" || l.Actor != alerts.Actor {
		t.Fatalf("lever %+v: want off by %s", l, alerts.Actor)
	}
	if _, err := store.VerifyJournal(ctx); err != nil {
		t.Fatalf("journal verify: %v", err)
	}
	time.Sleep(2 * time.Second) // a second action or incident would have landed by now
	es := entries()
	if n := count(es, journal.IncidentOpened); n != 1 {
		t.Errorf("%d incident.opened, want 1", n)
	}
	if n := count(es, journal.ActionApplied); n != 1 {
		t.Errorf("%d action.applied, want 1", n)
	}
	for _, e := range es {
		if (e.Event == alerts.AlertFired || e.Event == journal.ActionApplied) && e.Incident != l.Incident {
			t.Errorf("%s into incident %q, want the lever's %q", e.Event, e.Incident, l.Incident)
		}
	}
}

// hangingServer accepts connections and never answers them: a Prometheus
// that stopped responding. It returns its URL.
func hangingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// postAlert posts the webhook fixture's alert to Alertmanager's v2 API, as
// Prometheus does when the exported rule fires.
func postAlert(t *testing.T, amURL string) {
	t.Helper()
	a := webhookFixture(t).Alerts[0]
	body, _ := json.Marshal([]map[string]any{{"labels": a.Labels, "annotations": a.Annotations,
		"startsAt": time.Now().Add(-time.Minute).UTC(), "endsAt": time.Now().Add(time.Hour).UTC()}})
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: HTTP %d", resp.StatusCode)
	}
}

func waitUntil(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
