package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/alertmanager"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// amConfig routes every alert to a receiver that sends nothing: the test
// reads Alertmanager's API, it does not need the webhook.
const amConfig = `route:
  receiver: none
  group_by: [alertname, service, dependency]
receivers:
  - name: none
`

// postJSON posts v to Alertmanager's API v2 and decodes its answer into out
// (nil: none).
func postJSON(t *testing.T, url string, v, out any) {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d", url, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAlertsFromAlertmanager: a real Alertmanager holds two alerts, one
// silenced; the real receiver journaled the other into an incident on a
// real redis-server; the autopilot is paused and holds a lever. The
// dashboard lists both alerts with the silence and the incident, the
// autopilot's state and action; at 80×24 one line says it all and the
// layout fits; when Alertmanager stops, the section says it is
// unreachable, by address, and the reads back off.
func TestAlertsFromAlertmanager(t *testing.T) {
	ctx := context.Background()
	am := testenv.StartAlertmanager(t, amConfig)
	_, store := realStore(t)
	svc := &actions.Service{Store: actions.FromStore(store), Journal: journal.NewWriter(store, filepath.Join(t.TempDir(), "pending.jsonl")),
		Clock: actions.SystemClock{}}

	start := time.Now().Add(-3 * time.Minute).UTC().Truncate(time.Second)
	retry := map[string]string{"alertname": "RetryStorm", "service": "checkout", "dependency": "payments", "severity": "critical"}
	load := map[string]string{"alertname": "DependencyLoad", "service": "ledger", "severity": "warning"}
	var posted []map[string]any
	for _, ls := range []map[string]string{retry, load} {
		posted = append(posted, map[string]any{"labels": ls, "startsAt": start, "endsAt": time.Now().Add(time.Hour)})
	}
	postJSON(t, am.URL+"/api/v2/alerts", posted, nil)
	var silence struct {
		SilenceID string `json:"silenceID"`
	}
	postJSON(t, am.URL+"/api/v2/silences", map[string]any{
		"matchers": []map[string]any{{"name": "alertname", "value": "DependencyLoad", "isRegex": false, "isEqual": true}},
		"startsAt": time.Now().UTC(), "endsAt": time.Now().Add(time.Hour).UTC(), "createdBy": "test", "comment": "known"}, &silence)

	rcv := &alerts.Receiver{Claims: store, Actions: svc}
	out, err := rcv.Handle(ctx, &alerts.Message{Version: "4", GroupKey: `{}:{alertname="RetryStorm", dependency="payments", service="checkout"}`,
		Status: alerts.Firing, Alerts: []alerts.Alert{{Status: alerts.Firing, Labels: retry, StartsAt: start, Fingerprint: "f1"}}})
	if err != nil || out.Incident == "" {
		t.Fatalf("receiver: %+v %v", out, err)
	}
	// More entries than the journal section's first read: the incident is
	// found further back.
	for range tailLen + 10 {
		if _, err := store.Append(ctx, journal.Entry{Event: journal.Note, Actor: "bob", Reason: "watching"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alerts.SetPaused(ctx, svc, true, "carol", "game day"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := store.Apply(ctx, controlplane.ApplyRequest{Lever: lever.Lever{Kind: lever.Retries, Target: "checkout->payments", Value: "off",
		ActionID: "act-pilot", Actor: alerts.Actor, Reason: "RetryStorm fired", CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}

	c := newClock()
	c.t = time.Now()
	deps := Deps{Store: store, Journal: store.Journal(), Alerts: &alertmanager.Client{URL: am.URL},
		Autopilot: ServiceAutopilot{Service: svc, Allowed: true}}
	h := newHarness(t, c, deps, Options{Actor: "alice"}, 200, 60)
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(h.view(), "1 silenced") && time.Now().Before(deadline); {
		h.fire(alertsTickMsg{}, 10*time.Second)
		time.Sleep(200 * time.Millisecond)
	}
	h.contains("Alerts (1 firing, 1 silenced)",
		"● RetryStorm checkout→payments · firing · incident "+out.Incident,
		"◌ DependencyLoad ledger · silenced "+silence.SilenceID+" · no incident",
		"autopilot PAUSED by carol: game day", "act-pilot active retries=off on checkout->payments")
	checkSize(t, h.view(), 200, 60)

	h.send(windowSize(80, 24))
	h.contains("alerts: 1 firing, 1 silenced · autopilot PAUSED by carol: game day")
	checkSize(t, h.view(), 80, 24)

	h.send(windowSize(200, 60))
	am.Stop()
	var waits []time.Duration
	for range 3 {
		h.fire(alertsTickMsg{}, time.Minute)
		for _, tm := range h.timers {
			if reflect.TypeOf(tm.msg) == reflect.TypeOf(alertsTickMsg{}) {
				waits = append(waits, tm.d)
			}
		}
	}
	h.contains("alertmanager unreachable: "+am.URL, "RetryStorm") // the last alerts read stay listed
	// Rand is pinned at 0.5: the jitter's middle, so the doubling shows.
	if want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}; !reflect.DeepEqual(waits, want) {
		t.Fatalf("waits while Alertmanager is down: %v, want %v", waits, want)
	}
	checkSize(t, h.view(), 200, 60)
}
