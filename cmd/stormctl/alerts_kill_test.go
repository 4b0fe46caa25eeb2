package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// killRig runs `alerts serve` processes built from the tree, one at a
// time on one address behind a real Alertmanager, with real Redis and
// Prometheus, so that a test can SIGKILL one and start its replacement.
type killRig struct {
	t        *testing.T
	bin, dir string
	listen   string
	token    string
	cfg      string
	env      []string
	am       *testenv.Alertmanager
	prom     *testenv.Prometheus
	redis    *testenv.Redis
	store    *controlplane.Store
}

// newKillRig starts the servers; settings is the rest of the config's
// context "t" after its redis namespace "kill"; env is added to each
// receiver's environment.
func newKillRig(t *testing.T, settings string, env ...string) *killRig {
	if testing.Short() {
		t.Skip("builds stormctl; starts redis-server, prometheus and alertmanager")
	}
	testenv.Need(t, testenv.AlertmanagerBin, "prometheus")
	k := &killRig{t: t, token: "token-of-alertmanager-0123", dir: t.TempDir(), env: env}
	k.listen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	k.am = testenv.StartAlertmanager(t, fmt.Sprintf(`route:
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
`, k.listen, k.token))
	k.prom = testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormFixture(fixtureEnd())})
	k.redis = testenv.StartRedis(t, testenv.RedisOptions{})
	k.cfg = filepath.Join(k.dir, "config.yaml")
	if err := os.WriteFile(k.cfg, []byte("contexts:\n  t:\n    redis: {namespace: kill}\n"+settings+"current-context: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k.bin = filepath.Join(k.dir, "stormctl")
	if out, err := exec.Command("go", "build", "-o", k.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	c := redis.NewClient(&redis.Options{Addr: k.redis.Addr})
	t.Cleanup(func() { c.Close() })
	var err error
	if k.store, err = controlplane.NewStore(context.Background(), c, "kill"); err != nil {
		t.Fatal(err)
	}
	return k
}

// serve starts a receiver named name on the rig's address, reading
// Prometheus at promURL, and waits until it listens.
func (k *killRig) serve(name, promURL string) *exec.Cmd {
	t := k.t
	cmd := exec.Command(k.bin, "alerts", "serve", "--listen", k.listen, "--management-addr", "127.0.0.1:0", "--token-env", "ALERTS_TOKEN")
	cmd.Env = append(os.Environ(), "STORMCTL_CONFIG="+k.cfg, "STORMCTL_PROMETHEUS_URL="+promURL, "STORMCTL_REDIS_URL="+k.redis.URL("", ""),
		"XDG_STATE_HOME="+filepath.Join(k.dir, name), "ALERTS_TOKEN="+k.token)
	cmd.Env = append(cmd.Env, k.env...)
	logf, err := os.Create(filepath.Join(k.dir, name+".log"))
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
	waitUntil(t, name+" listening on "+k.listen, 30*time.Second, func() bool {
		c, err := net.Dial("tcp", k.listen)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return cmd
}

// kill SIGKILLs a receiver and reaps it.
func (k *killRig) kill(cmd *exec.Cmd) time.Time {
	if err := cmd.Process.Kill(); err != nil {
		k.t.Fatal(err)
	}
	_ = cmd.Wait()
	return time.Now()
}

func (k *killRig) entries() []journal.Entry {
	var out []journal.Entry
	for e, err := range journal.Entries(k.store.Journal().Range(context.Background(), "-", "+")) {
		if err != nil {
			k.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func countEvents(es []journal.Entry, ev journal.Event) (n int) {
	for _, e := range es {
		if e.Event == ev {
			n++
		}
	}
	return n
}

// TestAlertsServeKilledMidEvent: real Alertmanager routes a firing alert to
// a real `alerts serve` process, which is SIGKILLed while its autopilot
// waits on a Prometheus that never answers, after it journaled alert.fired.
// Its replacement on the same address (a restarted pod, or the Service's
// other replica) acts on Alertmanager's retry once the dead one's lease
// runs out: the autopilot's lever is pulled once, into the one incident.
// Before the lease, the event stayed claimed by the dead process for 48 h
// and every retry was answered "duplicate": the alert was lost.
func TestAlertsServeKilledMidEvent(t *testing.T) {
	k := newKillRig(t, "    autopilot: {retries: [checkout]}\n    alerts: {event-lease: 10s}\n")
	ctx := context.Background()
	a := k.serve("first", hangingServer(t))
	postAlert(t, k.am.URL)
	waitUntil(t, "the first receiver's alert.fired", 60*time.Second, func() bool { return countEvents(k.entries(), alerts.AlertFired) > 0 })
	killed := k.kill(a)
	if l, _, _, err := k.store.Get(ctx, lever.Retries, "checkout->payments"); err != nil || l != nil {
		t.Fatalf("lever %+v, %v before the second receiver: the first was to be killed before its autopilot acted", l, err)
	}

	k.serve("second", k.prom.URL)
	var l *lever.Lever
	var err error
	waitUntil(t, "the autopilot's lever, pulled by the second receiver", 90*time.Second, func() bool {
		l, _, _, err = k.store.Get(ctx, lever.Retries, "checkout->payments")
		return err == nil && l != nil
	})
	t.Logf("lever pulled %s after the first receiver was killed", time.Since(killed).Round(100*time.Millisecond))
	if l.Value != "off" || l.Actor != alerts.Actor {
		t.Fatalf("lever %+v: want off by %s", l, alerts.Actor)
	}
	if _, err := k.store.VerifyJournal(ctx); err != nil {
		t.Fatalf("journal verify: %v", err)
	}
	time.Sleep(2 * time.Second) // a second action or incident would have landed by now
	es := k.entries()
	if n := countEvents(es, journal.IncidentOpened); n != 1 {
		t.Errorf("%d incident.opened, want 1", n)
	}
	if n := countEvents(es, journal.ActionApplied); n != 1 {
		t.Errorf("%d action.applied, want 1", n)
	}
	for _, e := range es {
		if (e.Event == alerts.AlertFired || e.Event == journal.ActionApplied) && e.Incident != l.Incident {
			t.Errorf("%s into incident %q, want the lever's %q", e.Event, e.Incident, l.Incident)
		}
	}
}

// TestAlertsServeKilledMidNotice: a real `alerts serve` handles the alert
// Alertmanager routes to it and answers 200, while its notification
// webhook answers 503 with Retry-After: 30; it is SIGKILLed as it waits to
// post again. Alertmanager, answered, never sends the alert again. The
// receiver started in its place takes the notice over from the outbox
// once the dead one's lease runs out, and posts it once, signed, with the
// Idempotency-Key of the first try. With the notices in the process's
// memory, this notification was lost.
func TestAlertsServeKilledMidNotice(t *testing.T) {
	const hookKey = "notify-key-0123456789"
	hook := newFlakyHook(t, hookKey)
	k := newKillRig(t, fmt.Sprintf("    alerts: {event-lease: 10s, notify: [{url: %q, hmac-env: NOTIFY_KEY}]}\n", hook.srv.URL), "NOTIFY_KEY="+hookKey)
	a := k.serve("first", k.prom.URL)
	postAlert(t, k.am.URL)
	waitUntil(t, "the first receiver's first post of the notice", 60*time.Second, func() bool { return len(hook.got()) > 0 })
	killed := k.kill(a)
	first := hook.got()[0]
	if first.status != http.StatusServiceUnavailable || first.event != string(alerts.AlertFired) || first.key == "" {
		t.Fatalf("first post %+v: want alert.fired answered 503, with an Idempotency-Key", first)
	}
	hook.heal()

	k.serve("second", k.prom.URL)
	var sent []hookPost
	waitUntil(t, "the notice, posted by the second receiver", 60*time.Second, func() bool {
		sent = hook.sent()
		return len(sent) > 0
	})
	t.Logf("notice posted %s after the first receiver was killed", time.Since(killed).Round(100*time.Millisecond))
	time.Sleep(2 * time.Second) // a second copy would have been posted by now
	if sent = hook.sent(); len(sent) != 1 || sent[0].key != first.key || sent[0].event != string(alerts.AlertFired) {
		t.Fatalf("posts answered 200: %+v, want one alert.fired with key %q", sent, first.key)
	}
	if n := countEvents(k.entries(), alerts.AlertFired); n != 1 {
		t.Errorf("%d alert.fired journaled, want 1 (Alertmanager was answered)", n)
	}
	if n, err := k.store.Client().XLen(context.Background(), k.store.Keys().Notices()).Result(); err != nil || n != 0 {
		t.Errorf("%d notices still queued (%v)", n, err)
	}
}

// hookPost is one post a notification webhook received.
type hookPost struct {
	key, event string
	status     int
}

// flakyHook is a notification webhook that checks each body's signature
// and answers 503 with Retry-After: 30 until healed.
type flakyHook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	healed bool
	posts  []hookPost
}

func newFlakyHook(t *testing.T, key string) *flakyHook {
	h := &flakyHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if _, err := alerts.VerifySignature(r.Header, []byte(key), body, time.Now()); err != nil {
			t.Errorf("notification signature: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var msg struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(body, &msg)
		event, _, _ := strings.Cut(strings.TrimPrefix(msg.Text, "[stormctl] "), " ")
		h.mu.Lock()
		defer h.mu.Unlock()
		p := hookPost{key: r.Header.Get("Idempotency-Key"), event: event, status: http.StatusOK}
		if !h.healed {
			p.status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "30")
		}
		h.posts = append(h.posts, p)
		w.WriteHeader(p.status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *flakyHook) heal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.healed = true
}

func (h *flakyHook) got() []hookPost {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookPost(nil), h.posts...)
}

// sent are the posts answered 200.
func (h *flakyHook) sent() []hookPost {
	var out []hookPost
	for _, p := range h.got() {
		if p.status == http.StatusOK {
			out = append(out, p)
		}
	}
	return out
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
