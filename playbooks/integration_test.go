package playbooks

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// fixtureStep is fine enough for 10s rate windows.
const fixtureStep = 2 * time.Second

// recoveringStorm is the metric contract from 10 minutes ago to 3 minutes
// ahead: checkout→payments makes four attempts per request until recoverAt
// and one after it (the prometheus serves the future samples as time
// reaches them); checkout→fraud storms throughout; ledger→db is healthy.
func recoveringStorm(now, recoverAt time.Time) string {
	start := now.Add(-10 * time.Minute).Truncate(fixtureStep)
	n := int(13 * time.Minute / fixtureStep)
	om := testenv.NewOpenMetrics()
	series := func(f func(t time.Time) float64) []float64 {
		rates := make([]float64, n)
		for i := range rates {
			rates[i] = f(start.Add(time.Duration(i) * fixtureStep))
		}
		return testenv.Cumulate(rates, fixtureStep)
	}
	flat := func(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }
	edge := func(svc, dep string, kv ...string) map[string]string {
		m := map[string]string{"service": svc, "dependency": dep}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, e := range []struct {
		svc, dep string
		retries  func(time.Time) float64
	}{
		{"checkout", "payments", func(t time.Time) float64 {
			if t.Before(recoverAt) {
				return 300
			}
			return 0
		}},
		{"checkout", "fraud", flat(300)},
		{"ledger", "db", flat(0)},
	} {
		om.Counter("stormctl_requests_total", edge(e.svc, e.dep), start, fixtureStep, series(flat(100)))
		om.Counter("stormctl_attempts_total", edge(e.svc, e.dep, "outcome", "success"), start, fixtureStep, series(flat(100)))
		om.Counter("stormctl_attempts_total", edge(e.svc, e.dep, "outcome", "timeout"), start, fixtureStep, series(e.retries))
		om.Counter("stormctl_retries_total", edge(e.svc, e.dep, "reason", "timeout"), start, fixtureStep, series(e.retries))
	}
	return om.String()
}

// rig is one redis-server and one Prometheus for the integration tests;
// each test has a control-plane namespace of its own.
type rig struct {
	redis     *testenv.Redis
	prom      *testenv.Prometheus
	cat       *queries.Catalog
	runner    *queries.Runner
	recoverAt time.Time
}

// stack is the real stack of one namespace: the actions service with every
// guard over the real store, and the playbook runner's environment.
type stack struct {
	svc   *actions.Service
	store *controlplane.Store
	env   Env
}

func (rg *rig) stack(t *testing.T, ns string) *stack {
	t.Helper()
	ctx := context.Background()
	store, err := controlplane.Open(ctx, config.Redis{URL: rg.redis.URL("", ""), Namespace: ns}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	pol, err := actions.NewPolicy(config.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	packFor := func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }
	jw := journal.NewWriter(store, filepath.Join(t.TempDir(), "pending.jsonl"))
	svc := &actions.Service{
		Store:   actions.FromStore(store),
		Journal: jw,
		Policy:  pol,
		Inventory: actions.NewNames(config.Inventory{Services: []string{"checkout", "ledger"},
			Dependencies: []string{"payments", "fraud", "db"}}, nil, nil),
		Evidence: &actions.QueryEvidence{Catalog: rg.cat, Runner: rg.runner, PackFor: func(string) (string, map[string]string, error) { return packFor("") }},
		Clock:    actions.SystemClock{},
	}
	env := Env{
		Measurer: &PromMeasurer{Catalog: rg.cat, Runner: rg.runner, PackFor: func(_, _ string) (string, map[string]string, error) { return packFor("") }},
		Levers:   ActionLevers{Service: svc},
		Journal:  jw,
	}
	return &stack{svc: svc, store: store, env: env}
}

func (w *stack) entries(t *testing.T) []journal.Entry {
	t.Helper()
	ctx := context.Background()
	if _, err := w.store.VerifyJournal(ctx); err != nil {
		t.Fatalf("journal verify: %v", err)
	}
	var out []journal.Entry
	for e, err := range journal.Entries(w.store.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (w *stack) markdown(t *testing.T, incident string) string {
	t.Helper()
	var b bytes.Buffer
	stream := journal.NewStream(w.store.Client(), w.store.Keys().Journal())
	if _, err := journal.Export(&b, journal.Markdown, stream.Range(context.Background(), "-", "+"), journal.Filter{Incident: incident}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func (w *stack) incident(t *testing.T) string {
	t.Helper()
	inc, err := w.svc.OpenIncident(context.Background(), "checkout retry storm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	return inc.ID
}

func testPlaybook(t *testing.T, cat *queries.Catalog, name string) *Playbook {
	t.Helper()
	pb, err := ParseFile(filepath.Join("testdata", "integration", name+".yaml"), cat)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and prometheus")
	}
	now := time.Now()
	rg := &rig{recoverAt: now.Add(25 * time.Second)}
	rg.redis = testenv.StartRedis(t, testenv.RedisOptions{})
	rg.prom = testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: recoveringStorm(now, rg.recoverAt)})
	rg.cat = catalog(t)
	client, err := queries.NewClient(config.Prometheus{URL: rg.prom.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	rg.runner = queries.NewRunner(client, queries.RunnerOptions{})
	// The recovery test must confirm the storm before recoverAt: it goes first.
	t.Run("UnattendedRunRecovers", rg.unattendedRunRecovers)
	t.Run("ConflictThenResume", rg.conflictThenResume)
	t.Run("EvidenceGuardRefuses", rg.evidenceGuardRefuses)
}

func (rg *rig) unattendedRunRecovers(t *testing.T) {
	w := rg.stack(t, t.Name())
	ctx := context.Background()
	inc := w.incident(t)
	pb := testPlaybook(t, rg.cat, "quick-retries")
	r, err := NewRun(pb, RunOptions{Params: map[string]string{"service": "checkout", "dependency": "payments"}, Incident: inc, Actor: "alice"}, w.env)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunAll(ctx, Input{Yes: true}); err != nil {
		t.Fatal(err)
	}
	lever, _, _, err := w.store.Get(ctx, lever.Retries, "checkout->payments")
	if err != nil || lever == nil || lever.Value != "off" || lever.Actor != "alice" || lever.Incident != inc {
		t.Fatalf("lever %+v, %v", lever, err)
	}
	wait, _ := r.State("recovered")
	if wait.Status != Passed || time.Now().Before(rg.recoverAt) {
		t.Fatalf("wait %+v passed before the fixture recovered at %s", wait, rg.recoverAt)
	}
	var applied *journal.Entry
	for _, e := range w.entries(t) {
		if e.Event == journal.ActionApplied {
			applied = &e
		}
	}
	if applied == nil || applied.Playbook != "quick-retries" || applied.Step != "retries-off" || applied.PlaybookVersion != pb.Version ||
		len(applied.Evidence) == 0 || applied.Evidence[0].Query != "amplification" {
		t.Fatalf("action entry not attributed to the step: %+v", applied)
	}
	md := w.markdown(t, inc)
	_, afterPlaybook, ok := strings.Cut(md, "## Playbook `quick-retries` (version "+pb.Version+")")
	if !ok || strings.Contains(afterPlaybook, "## Ad-hoc") {
		t.Fatalf("timeline does not group the run under the playbook:\n%s", md)
	}
	for _, want := range []string{"started playbook `quick-retries`", "step `confirm` passed", "**applied** retries `off` on `checkout->payments` for 10m0s",
		"step `retries-off` passed", "step `recovered` passed", "finished playbook `quick-retries`"} {
		if !strings.Contains(afterPlaybook, want) {
			t.Errorf("timeline lacks %q:\n%s", want, md)
		}
	}
}

// Another responder holds the lever: the run stops with exit 6 and a
// consistent journal; once the lever is released, resuming the run for the
// incident starts at the refused step, checks the evidence again and
// applies; running the step again changes nothing.
func (rg *rig) conflictThenResume(t *testing.T) {
	w := rg.stack(t, t.Name())
	ctx := context.Background()
	inc := w.incident(t)
	bob, err := w.svc.Apply(ctx, actions.Spec{Kind: "retries", Target: "checkout->fraud", Value: "cap:2", TTL: 10 * time.Minute,
		Reason: "bob's own cap", Actor: "bob", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	pb := testPlaybook(t, rg.cat, "quick-retries")
	opts := RunOptions{Params: map[string]string{"service": "checkout", "dependency": "fraud"}, Incident: inc, Actor: "alice"}
	r, err := NewRun(pb, opts, w.env)
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunAll(ctx, Input{Yes: true})
	if exit.Code(err) != exit.Conflict || !strings.Contains(err.Error(), "bob") {
		t.Fatalf("want exit 6 naming bob, got %d: %v", exit.Code(err), err)
	}
	var events []string
	for _, e := range w.entries(t) {
		if e.Playbook == pb.Name {
			events = append(events, strings.TrimSpace(string(e.Event)+" "+e.Step))
		}
	}
	equal(t, events, []string{"playbook.started", "playbook.step.passed confirm", "action.refused retries-off",
		"playbook.step.failed retries-off", "playbook.finished"})

	if _, err := w.svc.Release(ctx, bob.ActionID, "bob", "handing over to the playbook"); err != nil {
		t.Fatal(err)
	}
	again, err := NewRun(pb, opts, w.env)
	if err != nil {
		t.Fatal(err)
	}
	again.Resume(w.entries(t))
	if next := again.Next(); next == nil || next.ID != "retries-off" {
		t.Fatalf("resumed at %v, want retries-off", next)
	}
	st, err := again.RunStep(ctx, "retries-off", Input{Yes: true})
	if err != nil || st.Status != Passed {
		t.Fatalf("resumed step: %+v %v", st, err)
	}
	if confirm, _ := again.State("confirm"); confirm.Earlier {
		t.Fatal("the required check was not evaluated again before acting")
	}
	before := len(w.entries(t))
	st, err = again.RunStep(ctx, "retries-off", Input{Yes: true})
	if err != nil || !strings.Contains(st.Outcome, "already applied") {
		t.Fatalf("re-run: %+v %v", st, err)
	}
	lever, version, _, _ := w.store.Get(ctx, lever.Retries, "checkout->fraud")
	if lever.Value != "off" || lever.Actor != "alice" || version != 3 {
		t.Fatalf("lever %+v version %d, want alice's off at version 3 (bob's apply, release, alice's apply)", lever, version)
	}
	if err := again.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range w.entries(t)[before:] {
		if e.Event == journal.ActionApplied {
			t.Fatalf("the re-run applied again: %+v", e)
		}
	}
}

// Without a required check, the actions evidence guard is what refuses a
// lever the metrics do not support: exit 3, nothing written but the record.
func (rg *rig) evidenceGuardRefuses(t *testing.T) {
	w := rg.stack(t, t.Name())
	ctx := context.Background()
	inc := w.incident(t)
	r, err := NewRun(testPlaybook(t, rg.cat, "no-requires"), RunOptions{Params: map[string]string{"service": "ledger", "dependency": "db"},
		Incident: inc, Actor: "alice"}, w.env)
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunAll(ctx, Input{Yes: true})
	var refused *actions.RefusedError
	if exit.Code(err) != exit.Refused || !errors.As(err, &refused) || refused.Guard != actions.GuardEvidence {
		t.Fatalf("want the evidence guard's refusal, got %v", err)
	}
	if l, _, _, _ := w.store.Get(ctx, lever.Retries, "ledger->db"); l != nil {
		t.Fatalf("lever written: %+v", l)
	}
	es := w.entries(t)
	last := es[len(es)-1]
	if last.Event != journal.PlaybookFinished || last.Outcome != "stopped" || es[len(es)-2].Event != journal.PlaybookFailed ||
		es[len(es)-3].Event != journal.ActionRefused || es[len(es)-3].Step != "retries-off" {
		t.Fatalf("journal tail: %+v", es[len(es)-3:])
	}
}
