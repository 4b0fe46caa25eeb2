package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// The whole path with real servers: Prometheus evaluates the exported
// alerting rules over the backfilled storm and sends to Alertmanager, which
// routes to the receiver with a bearer token. The receiver opens one
// incident, journals alert.fired once per alert, the autopilot pulls the
// playbook's lever through the guards, a signed notification arrives; when
// Alertmanager resolves the alert, alert.resolved is journaled.
func TestAlertmanagerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server, prometheus and alertmanager")
	}
	testenv.Need(t, testenv.AlertmanagerBin, "prometheus")
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
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
        send_resolved: true
        max_alerts: 100
        http_config:
          authorization:
            type: Bearer
            credentials: %s
`, listen, testToken))
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := cat.AlertRules("stormctl", queries.Params{}, PlaybookFor(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Evaluated every second, so retry_ratio's for: 20s passes in 20 s.
	group := "- name: stormctl-stormctl-alerts\n"
	if !bytes.Contains(rules, []byte(group)) {
		t.Fatalf("no alerts group in\n%s", rules)
	}
	rules = bytes.Replace(rules, []byte(group), []byte(group+"  interval: 1s\n"), 1)
	ruleFile := filepath.Join(t.TempDir(), "stormctl-alerts.yaml")
	if err := os.WriteFile(ruleFile, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	rg := newRig(t, testenv.PromOptions{ExtraConfig: fmt.Sprintf(`rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
`, ruleFile, am.Addr)})
	h := newHooks(t)
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"checkout"}}, hooks: h, listen: listen})
	ctx := context.Background()

	target := "checkout->payments"
	var held *lever.Lever
	waitLong(t, "Prometheus → Alertmanager → receiver → autopilot lever on "+target, func() bool {
		held, _, _, err = s.store.Get(ctx, lever.Retries, target)
		return err == nil && held != nil
	})
	if held.Value != "off" || held.Actor != Actor {
		t.Fatalf("lever %+v", held)
	}
	infos, err := s.svc.List(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	for _, a := range infos {
		listed = listed || a.ActionID == held.ActionID && a.Actor == Actor && a.State == "active"
	}
	if !listed {
		t.Errorf("autopilot's action %s not in the action list %+v", held.ActionID, infos)
	}
	waitLong(t, "a signed action.applied notification", func() bool { return h.count("action.applied") >= 1 })
	if h.bad != 0 {
		t.Errorf("%d notifications failed their HMAC check", h.bad)
	}

	// Resolve it in Alertmanager: stop Prometheus re-sending it, then post
	// the alert with endsAt now to Alertmanager's v2 API.
	rg.prom.Stop()
	resolveAll(t, am.URL, target)
	waitLong(t, "alert.resolved journaled", func() bool {
		for _, e := range s.entries(t) {
			if e.Event == AlertResolved && e.Target == target {
				return true
			}
		}
		return false
	})
	es := s.entries(t)
	fired := 0
	for _, e := range es {
		if e.Event == AlertFired && e.Target == target {
			fired++
			if len(e.Evidence) != 1 || e.Evidence[0].Value <= 0.3 || e.Evidence[0].Query != "retry_ratio" {
				t.Errorf("alert.fired evidence %+v: want retry_ratio's value above 0.3", e.Evidence)
			}
		}
	}
	incs, err := s.svc.Incidents(ctx)
	if err != nil || len(incs) != 1 {
		t.Errorf("incidents %+v, %v: want one for the storm", incs, err)
	}
	if fired != 1 || countEvents(es, journal.IncidentOpened) != 1 {
		t.Errorf("%d alert.fired for %s, %d incident.opened: want 1 each", fired, target, countEvents(es, journal.IncidentOpened))
	}
}

// resolveAll posts every alert Alertmanager holds for target again with
// endsAt now, as Prometheus does when a rule stops firing.
func resolveAll(t *testing.T, amURL, target string) {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	type postable struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	var out []postable
	for _, a := range got {
		if a.Labels["service"]+"->"+a.Labels["dependency"] == target {
			out = append(out, postable{a.Labels, a.Annotations, a.StartsAt, time.Now().UTC(), a.GeneratorURL})
		}
	}
	if len(out) == 0 {
		t.Fatalf("Alertmanager holds no alert for %s", target)
	}
	b, _ := json.Marshal(out)
	resp, err = http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: HTTP %d", resp.StatusCode)
	}
}

func waitLong(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 90s waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
