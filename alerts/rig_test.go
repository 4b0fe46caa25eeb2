package alerts

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
)

const (
	testToken   = "alertmanager-token-0123456789"
	testHookKey = "notification-hmac-key-0123456789"
	fixtureStep = 2 * time.Second
)

// storm is the metric contract from 10 minutes ago to 5 minutes ahead:
// checkout calls payments and fraud with four attempts per request (three
// of them retries) and fails 60% of its own requests; search calls index
// with four too, but its retries still rescue every request; ledger calls
// db with one.
func storm(now time.Time) string {
	start := now.Add(-10 * time.Minute).Truncate(fixtureStep)
	n := int(15 * time.Minute / fixtureStep)
	om := testenv.NewOpenMetrics()
	flat := func(v float64) []float64 {
		rates := make([]float64, n)
		for i := range rates {
			rates[i] = v
		}
		return testenv.Cumulate(rates, fixtureStep)
	}
	for _, e := range []struct {
		svc, dep string
		retries  float64
	}{{"checkout", "payments", 300}, {"checkout", "fraud", 300}, {"search", "index", 300}, {"ledger", "db", 0}} {
		l := func(kv ...string) map[string]string {
			m := map[string]string{"service": e.svc, "dependency": e.dep}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		om.Counter("stormctl_requests_total", l(), start, fixtureStep, flat(100))
		om.Counter("stormctl_attempts_total", l("outcome", "success"), start, fixtureStep, flat(100))
		om.Counter("stormctl_attempts_total", l("outcome", "timeout"), start, fixtureStep, flat(e.retries))
		om.Counter("stormctl_retries_total", l("reason", "timeout"), start, fixtureStep, flat(e.retries))
	}
	for _, e := range []struct {
		svc      string
		ok, fail float64
	}{{"checkout", 40, 60}, {"search", 100, 0}} {
		om.Counter("stormctl_server_requests_total", map[string]string{"service": e.svc, "code": "200"}, start, fixtureStep, flat(e.ok))
		om.Counter("stormctl_server_requests_total", map[string]string{"service": e.svc, "code": "503"}, start, fixtureStep, flat(e.fail))
	}
	return om.String()
}

// rig is one redis-server and one Prometheus holding the storm; each test
// stack has a control-plane namespace of its own.
type rig struct {
	redis  *testenv.Redis
	prom   *testenv.Prometheus
	cat    *queries.Catalog
	runner *queries.Runner
	set    *playbooks.Set
}

func newRig(t testing.TB, promOpts testenv.PromOptions) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	rg := &rig{redis: testenv.StartRedis(t, testenv.RedisOptions{})}
	if promOpts.OpenMetrics == "" {
		promOpts.OpenMetrics = storm(time.Now())
	}
	rg.prom = testenv.StartPrometheus(t, promOpts)
	var err error
	if rg.cat, err = queries.Load(); err != nil {
		t.Fatal(err)
	}
	client, err := queries.NewClient(config.Prometheus{URL: rg.prom.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	rg.runner = queries.NewRunner(client, queries.RunnerOptions{})
	if rg.set, err = playbooks.Load(rg.cat); err != nil {
		t.Fatal(err)
	}
	return rg
}

// hooks is a notification webhook that checks every body's HMAC.
type hooks struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []Notice // decoded from the template body
	bad int      // bodies whose signature did not verify
}

func newHooks(t testing.TB) *hooks {
	h := &hooks{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, err := VerifySignature(r.Header, []byte(testHookKey), body, time.Now()); err != nil {
			h.bad++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var n Notice
		if err := json.Unmarshal(body, &n); err != nil {
			h.bad++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.got = append(h.got, n)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) count(event string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, x := range h.got {
		if x.Event == event {
			n++
		}
	}
	return n
}

// stack is the receiver of one namespace over the real store, with every
// guard, serving on free loopback ports.
type stack struct {
	store *controlplane.Store
	svc   *actions.Service
	rcv   *Receiver
	srv   *Server
	pilot *Autopilot
}

type stackOptions struct {
	policy  config.Policy
	allow   map[string][]string
	hooks   *hooks
	hmacKey string
	listen  string         // default 127.0.0.1:0
	certs   *testenv.Certs // serve the webhook over TLS with its server certificate
	lease   time.Duration  // the receiver's EventLease; default DefaultEventLease
}

func (rg *rig) stack(t testing.TB, ns string, o stackOptions) *stack {
	t.Helper()
	ctx := context.Background()
	store, err := controlplane.Open(ctx, config.Redis{URL: rg.redis.URL("", ""), Namespace: ns}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	pol, err := actions.NewPolicy(o.policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	packFor := func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }
	svc := &actions.Service{
		Store:   actions.FromStore(store),
		Journal: journal.NewWriter(store, filepath.Join(t.TempDir(), "pending.jsonl")),
		Policy:  pol,
		Inventory: actions.NewNames(config.Inventory{Services: []string{"checkout", "search", "ledger"},
			Dependencies: []string{"payments", "fraud", "index", "db"}}, nil, nil),
		Evidence: &actions.QueryEvidence{Catalog: rg.cat, Runner: rg.runner, PackFor: packFor},
		Clock:    actions.SystemClock{},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	m := NewMetrics()
	var notifier *Notifier
	if o.hooks != nil {
		tmpl := mustTemplate(t)
		notifier = NewNotifier([]Webhook{{URL: o.hooks.srv.URL, Key: []byte(testHookKey), Tmpl: tmpl}}, store.Outbox(cmp.Or(o.lease, DefaultEventLease)), m, log)
		t.Cleanup(func() { notifier.Close(context.Background()) })
	}
	pilot := &Autopilot{Actions: svc, Playbooks: rg.set.Get,
		Measurer: &playbooks.PromMeasurer{Catalog: rg.cat, Runner: rg.runner, PackFor: func(_, _ string) (string, map[string]string, error) { return packFor("") }},
		Allow:    o.allow, TTL: 5 * time.Minute, Notifier: notifier, Metrics: m, Log: log, NoVerify: true}
	t.Cleanup(pilot.Close)
	rcv := &Receiver{Claims: store, Actions: svc, Playbook: PlaybookFor(nil), Notifier: notifier, Autopilot: pilot, Metrics: m, Log: log, EventLease: o.lease}
	opts := ServerOptions{Listen: cmp.Or(o.listen, "127.0.0.1:0"), ManagementAddr: "127.0.0.1:0", Token: testToken, Receiver: rcv, Log: log,
		Ready: func(ctx context.Context) error { return store.Client().Ping(ctx).Err() }}
	if o.hmacKey != "" {
		opts.HMACKey = []byte(o.hmacKey)
	}
	if o.certs != nil {
		opts.TLSCert, opts.TLSKey = o.certs.ServerCert, o.certs.ServerKey
	}
	srv, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return &stack{store: store, svc: svc, rcv: rcv, srv: srv, pilot: pilot}
}

// post sends body to the stack's webhook with the bearer token (and a
// signature when key is set), returning the status.
func (s *stack) post(t testing.TB, body []byte, token string, key []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.srv.Addr()+"/alertmanager", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != nil {
		SetSignature(req.Header, key, body, time.Now())
	}
	return do(t, req)
}

// do sends req and returns its status, 0 when the connection failed.
func do(t testing.TB, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Logf("post: %v", err)
		return 0
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && testing.Verbose() {
		t.Logf("HTTP %d: %s", resp.StatusCode, out)
	}
	return resp.StatusCode
}

func (s *stack) entries(t testing.TB) []journal.Entry {
	t.Helper()
	ctx := context.Background()
	if _, err := s.store.VerifyJournal(ctx); err != nil {
		t.Fatalf("journal verify: %v", err)
	}
	var out []journal.Entry
	for e, err := range journal.Entries(s.store.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func countEvents(es []journal.Entry, ev journal.Event) int {
	n := 0
	for _, e := range es {
		if e.Event == ev {
			n++
		}
	}
	return n
}

// metric reads one sample of the stack's /metrics, 0 when absent.
func (s *stack) metric(t testing.TB, line string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.srv.MgmtAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range bytes.Split(b, []byte("\n")) {
		if name, val, ok := bytes.Cut(l, []byte(" ")); ok && string(name) == line {
			return string(val)
		}
	}
	return "0"
}

// fixtureStart is the startsAt of every fixture alert: deliveries of one
// event carry the same.
var fixtureStart = time.Now().Add(-30 * time.Second).UTC().Truncate(time.Millisecond)

// postSigned sends body signed at ts, as a captured request replayed would be.
func postSigned(t testing.TB, s *stack, body, key []byte, ts time.Time) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.srv.Addr()+"/alertmanager", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	SetSignature(req.Header, key, body, ts)
	return do(t, req)
}

// fixture is the webhook body of testdata/webhook-v4-firing.json, changed by edit.
func fixture(t testing.TB, edit func(*Message)) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "webhook-v4-firing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Alerts[0].StartsAt = fixtureStart
	if edit != nil {
		edit(&m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// retarget makes the fixture's alert about service->dependency.
func retarget(service, dependency string) func(*Message) {
	return func(m *Message) {
		a := &m.Alerts[0]
		a.Labels["service"], a.Labels["dependency"] = service, dependency
		a.Fingerprint = digest(service, dependency)[:16]
		m.GroupKey = `{}:{alertname="StormctlRetryRatio", dependency="` + dependency + `", service="` + service + `"}`
	}
}

func testenvOptions() testenv.PromOptions { return testenv.PromOptions{} }
