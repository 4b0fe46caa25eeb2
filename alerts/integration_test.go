package alerts

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

func TestReceiver(t *testing.T) {
	rg := newRig(t, testenvOptions())
	t.Run("TwoReplicasActOnce", rg.twoReplicasActOnce)
	t.Run("DeadHolderLeaseRunsOut", rg.deadHolderLeaseRunsOut)
	t.Run("SignedRetryAfter503", rg.signedRetryAfter503)
	t.Run("Hostile", rg.hostile)
	t.Run("AutopilotRefuses", rg.autopilotRefuses)
	t.Run("AutopilotCapsRetriesThatStillRescue", rg.autopilotCaps)
}

// The playbook's check decides between its two lever steps: search's
// retries still rescue every request, so the autopilot caps them rather
// than turning them off, and the check it ran is on the record.
func (rg *rig) autopilotCaps(t *testing.T) {
	ctx := context.Background()
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"search"}}})
	if c := s.post(t, fixture(t, retarget("search", "index")), testToken, nil); c != 200 {
		t.Fatalf("HTTP %d", c)
	}
	l, _, _, err := s.store.Get(ctx, lever.Retries, "search->index")
	if err != nil || l == nil || l.Value != "cap:2" || l.Actor != Actor {
		for _, e := range s.entries(t) {
			t.Logf("%s %s %s %s %v", e.Event, e.Step, e.Outcome, e.Error, e.Evidence)
		}
		t.Fatalf("lever %+v, %v; want cap:2 by %s", l, err, Actor)
	}
	var checked, skipped bool
	for _, e := range s.entries(t) {
		switch {
		case e.Event == journal.PlaybookPassed && e.Step == "retries-still-save-requests":
			checked = len(e.Evidence) == 1 && e.Evidence[0].Query == "edge_error_rate" && e.Evidence[0].Value == 0
		case e.Event == journal.PlaybookSkipped && e.Step == "retries-off":
			t.Errorf("retries-off journaled as skipped: the autopilot runs only the step it chose")
		case e.Event == journal.ActionApplied:
			skipped = e.Value == "cap:2"
		}
	}
	if !checked || !skipped {
		t.Errorf("journal lacks the passed check with its evidence (%v) or the applied cap (%v)", checked, skipped)
	}
}

// The same webhook, delivered to two receivers on one Redis at once and
// then again (Alertmanager's retry), opens one incident, journals one
// alert.fired, pulls one lever and sends one notification of each.
func (rg *rig) twoReplicasActOnce(t *testing.T) {
	h := newHooks(t)
	o := stackOptions{allow: map[string][]string{"retries": {"checkout"}}, hooks: h}
	a, b := rg.stack(t, t.Name(), o), rg.stack(t, t.Name(), o)
	body := fixture(t, nil)
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i, s := range []*stack{a, b, a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = s.post(t, body, testToken, nil) }()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("delivery %d: HTTP %d", i, c)
		}
	}
	ctx := context.Background()
	incs, err := a.svc.Incidents(ctx)
	if err != nil || len(incs) != 1 || incs[0].OpenedBy != Actor {
		t.Fatalf("incidents %+v, %v; want one opened by %s", incs, err, Actor)
	}
	l, _, _, err := a.store.Get(ctx, lever.Retries, "checkout->payments")
	if err != nil || l == nil || l.Value != "off" || l.Actor != Actor || l.Incident != incs[0].ID {
		t.Fatalf("lever %+v, %v", l, err)
	}
	if ttl := l.ExpiresAt.Sub(l.CreatedAt); ttl > 5*time.Minute {
		t.Errorf("autopilot lever TTL %s, want at most the autopilot's 5m", ttl)
	}
	es := a.entries(t)
	if n := countEvents(es, AlertFired); n != 1 {
		t.Errorf("%d alert.fired entries, want 1", n)
	}
	if n := countEvents(es, journal.ActionApplied); n != 1 {
		t.Errorf("%d action.applied entries, want 1", n)
	}
	for _, e := range es {
		if e.Event == AlertFired {
			if e.Incident != incs[0].ID || e.Playbook != "retry-amplification" || len(e.Evidence) != 1 ||
				e.Evidence[0].Value != 0.75 || e.Evidence[0].Query != "retry_ratio" || !strings.Contains(e.Outcome, "service=checkout") {
				t.Errorf("alert.fired entry: %+v", e)
			}
		}
	}
	// Notifications are sent in the background: poll.
	waitFor(t, "one alert.fired and one action.applied notification", func() bool {
		return h.count(string(AlertFired)) == 1 && h.count("action.applied") == 1
	})
	time.Sleep(200 * time.Millisecond) // a duplicate would have arrived by now
	if h.count(string(AlertFired)) != 1 || h.count("action.applied") != 1 || h.bad != 0 {
		t.Errorf("notifications %+v, %d badly signed", h.got, h.bad)
	}
	for _, n := range h.got {
		if n.Event == "action.applied" && (!strings.HasPrefix(n.Undo, "stormctl action release "+l.ActionID) || n.Until.IsZero() || n.Actor != Actor) {
			t.Errorf("lever notice %+v: want the undo command, the expiry and the actor", n)
		}
	}
	dups := a.metric(t, `stormctl_alerts_events_total{outcome="duplicate",status="firing"}`) + "+" +
		b.metric(t, `stormctl_alerts_events_total{outcome="duplicate",status="firing"}`)
	if dups != "3+0" && dups != "2+1" && dups != "1+2" && dups != "0+3" {
		t.Errorf("duplicates counted %s, want 3 in all", dups)
	}

	// Resolved (the same startsAt): journaled once, the incident stays open.
	resolved := fixture(t, func(m *Message) {
		m.Status, m.Alerts[0].Status, m.Alerts[0].EndsAt = Resolved, Resolved, time.Now().UTC()
	})
	for _, s := range []*stack{a, b} {
		if c := s.post(t, resolved, testToken, nil); c != 200 {
			t.Fatalf("resolved: HTTP %d", c)
		}
	}
	if n := countEvents(a.entries(t), AlertResolved); n != 1 {
		t.Errorf("%d alert.resolved entries, want 1", n)
	}
	waitFor(t, "one alert.resolved notification", func() bool { return h.count(string(AlertResolved)) == 1 })
}

// Every hostile webhook is refused before anything is acted on, and
// counted under its reason.
func (rg *rig) hostile(t *testing.T) {
	key := []byte("webhook-hmac-key-0123456789abcdef")
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"*"}}, hmacKey: string(key)})
	good := fixture(t, nil)
	huge := make([]byte, 10<<20)
	copy(huge, good)
	// 10,000 small alerts in one group: under the body limit, over the alerts limit.
	small := `{"status":"firing","startsAt":"2026-12-02T09:00:00Z","fingerprint":"f"}`
	many := []byte(`{"version":"4","groupKey":"{}:{}","status":"firing","alerts":[` +
		strings.Repeat(small+",", 9999) + small + `]}`)
	for _, c := range []struct {
		name   string
		body   []byte
		token  string
		key    []byte
		status int
		metric string
	}{
		{"wrong token", good, "not-the-token", key, 401, "unauthorized"},
		{"no token", good, "", key, 401, "unauthorized"},
		{"bad HMAC", good, testToken, []byte("another-key-0123456789abcdef"), 401, "bad_signature"},
		{"no signature", good, testToken, nil, 401, "bad_signature"},
		{"10 MB body", huge, testToken, key, 413, "too_large"}, // or the connection closed while sending
		{"10,000 alerts", many, testToken, key, 413, "too_many_alerts"},
		{"malformed JSON", []byte(`{"version":"4","groupKey":"x","alerts":[{"status":`), testToken, key, 400, "malformed"},
		{"not version 4", []byte(`{"version":"3","groupKey":"x","alerts":[]}`), testToken, key, 400, "malformed"},
	} {
		if got := s.post(t, c.body, c.token, c.key); got != c.status && !(got == 0 && c.metric == "too_large") {
			t.Errorf("%s: HTTP %d, want %d", c.name, got, c.status)
		}
		if got := s.metric(t, `stormctl_alerts_webhooks_total{outcome="`+c.metric+`"}`); got == "0" {
			t.Errorf("%s: not counted as %s", c.name, c.metric)
		}
	}
	if es := s.entries(t); len(es) != 0 {
		t.Fatalf("refused webhooks wrote %d journal entries: %+v", len(es), es[0])
	}
	// A signed request replayed as captured (same timestamp and signature).
	signedAt := time.Now().Add(-time.Second)
	req := func() int { return postSigned(t, s, good, key, signedAt) }
	if got := req(); got != 200 {
		t.Fatalf("first signed delivery: HTTP %d", got)
	}
	n := len(s.entries(t))
	if got := req(); got != 409 {
		t.Errorf("replayed signed webhook: HTTP %d, want 409", got)
	}
	if got := postSigned(t, s, good, key, time.Now().Add(-time.Hour)); got != 401 {
		t.Errorf("webhook signed an hour ago: HTTP %d, want 401", got)
	}
	if got := s.metric(t, `stormctl_alerts_webhooks_total{outcome="replayed"}`); got != "2" {
		t.Errorf("replays counted %s, want 2", got)
	}
	if len(s.entries(t)) != n {
		t.Error("a replayed webhook was acted on")
	}
	if got := s.metric(t, `stormctl_alerts_webhooks_total{outcome="accepted"}`); got != "1" {
		t.Errorf("accepted %s, want 1", got)
	}
}

// Autopilot refuses when paused, when the kind is not allowed for the
// service, when the rate limit is spent, and when the evidence does not
// hold at the moment of acting; each refusal is on the record.
func (rg *rig) autopilotRefuses(t *testing.T) {
	ctx := context.Background()
	pol := config.Policy{RateLimit: config.RateLimit{Window: config.Duration(time.Minute), PerActor: 1, Overall: 10}}
	s := rg.stack(t, t.Name(), stackOptions{allow: map[string][]string{"retries": {"checkout", "ledger"}}, policy: pol})
	post := func(edit func(*Message)) {
		t.Helper()
		if c := s.post(t, fixture(t, edit), testToken, nil); c != 200 {
			t.Fatalf("HTTP %d", c)
		}
	}
	held := func(target string) *lever.Lever {
		l, _, _, err := s.store.Get(ctx, lever.Retries, target)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Paused: nothing pulled, autopilot.refused journaled.
	if _, err := SetPaused(ctx, s.svc, true, "alice", "game day"); err != nil {
		t.Fatal(err)
	}
	post(nil)
	if held("checkout->payments") != nil {
		t.Fatal("paused autopilot pulled a lever")
	}
	if _, err := SetPaused(ctx, s.svc, false, "alice", "game day over"); err != nil {
		t.Fatal(err)
	}
	// Not allowed: breaker is not in the allow list (a playbook whose first
	// action is a breaker), and fraud's caller is allowed but this alert
	// names a service that is not.
	post(func(m *Message) {
		retarget("ledger", "db")(m)
		m.Alerts[0].Labels["stormctl_query"] = "pool_saturation" // shared-pool-exhaustion: breaker first
		m.Alerts[0].Fingerprint = "a1b2c3d4e5f60718"
	})
	if l, _, _, _ := s.store.Get(ctx, lever.Breaker, "ledger->db"); l != nil {
		t.Fatal("autopilot pulled a kind policy does not allow")
	}
	// Evidence: ledger->db is healthy (amplification 1.0), so the playbook's
	// required check fails at the moment of acting.
	post(retarget("ledger", "db"))
	if held("ledger->db") != nil {
		t.Fatal("autopilot acted without evidence")
	}
	// Allowed, with evidence: applied (a new firing: resumed, it fired
	// again); then the rate limit (1 per minute for automation) is spent.
	post(func(m *Message) { m.Alerts[0].StartsAt = time.Now().UTC().Truncate(time.Millisecond) })
	if held("checkout->payments") == nil {
		t.Fatal("autopilot did not act on a storm it is allowed to stop")
	}
	post(retarget("checkout", "fraud"))
	if held("checkout->fraud") != nil {
		t.Fatal("autopilot acted past its rate limit")
	}
	es := s.entries(t)
	var notes []string
	for _, e := range es {
		switch e.Event {
		case AutopilotRefused, journal.ActionRefused, journal.PlaybookFailed:
			notes = append(notes, string(e.Event)+": "+e.Outcome+e.Error)
		}
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"autopilot is paused", "may not pull breaker", "rate"} {
		if !strings.Contains(strings.ToLower(all), want) {
			t.Errorf("no refusal saying %q in:\n%s", want, all)
		}
	}
	if countEvents(es, AutopilotPaused) != 1 || countEvents(es, AutopilotResume) != 1 {
		t.Error("pause and resume are not journaled once each")
	}
	for _, want := range []string{"paused", "not_allowed", "refused", "applied"} {
		if s.metric(t, `stormctl_alerts_autopilot_total{outcome="`+want+`"}`) == "0" {
			t.Errorf("autopilot outcome %s not counted", want)
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
