package actions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
)

// stormData is 20 minutes at 15s steps ending now: checkout→payments makes
// four attempts per request (amplification 4, retry ratio 0.75) and ledger→db
// one.
func stormData(end time.Time) string {
	const step, n = 15 * time.Second, 80
	start := end.Add(-step * (n - 1))
	om := testenv.NewOpenMetrics()
	rate := func(v float64) []float64 {
		rs := make([]float64, n)
		for i := range rs {
			rs[i] = v
		}
		return testenv.Cumulate(rs, step)
	}
	edge := func(svc, dep string, extra map[string]string) map[string]string {
		m := map[string]string{"service": svc, "dependency": dep}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	om.Counter("stormctl_requests_total", edge("checkout", "payments", nil), start, step, rate(100))
	om.Counter("stormctl_requests_total", edge("ledger", "db", nil), start, step, rate(50))
	om.Counter("stormctl_attempts_total", edge("checkout", "payments", map[string]string{"outcome": "success"}), start, step, rate(100))
	om.Counter("stormctl_attempts_total", edge("checkout", "payments", map[string]string{"outcome": "timeout"}), start, step, rate(300))
	om.Counter("stormctl_attempts_total", edge("ledger", "db", map[string]string{"outcome": "success"}), start, step, rate(50))
	om.Counter("stormctl_retries_total", edge("checkout", "payments", map[string]string{"reason": "timeout"}), start, step, rate(300))
	om.Counter("stormctl_retries_total", edge("ledger", "db", map[string]string{"reason": "timeout"}), start, step, rate(0))
	return om.String()
}

// servers is one redis-server and one Prometheus for every integration
// test; each test works in its own control-plane namespace.
type servers struct {
	redis *testenv.Redis
	prom  *testenv.Prometheus
	cat   *queries.Catalog
}

func (sv *servers) world(t *testing.T, ns string, pol config.Policy) (*Service, *controlplane.Store) {
	t.Helper()
	ctx := context.Background()
	store, err := controlplane.Open(ctx, config.Redis{URL: sv.redis.URL("", ""), Namespace: ns}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	client, err := queries.NewClient(config.Prometheus{URL: sv.prom.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Service{
		Store:     FromStore(store),
		Journal:   journal.NewWriter(store, t.TempDir()+"/pending.jsonl"),
		Policy:    p,
		Inventory: NewNames(config.Inventory{}, nil, PromLabels{Client: client}),
		Evidence: &QueryEvidence{Catalog: sv.cat, Runner: queries.NewRunner(client, queries.RunnerOptions{}),
			PackFor: func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }},
		Clock: SystemClock{},
	}, store
}

func TestIntegration(t *testing.T) {
	sv := &servers{
		redis: testenv.StartRedis(t, testenv.RedisOptions{}),
		prom:  testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: stormData(time.Now().Truncate(15 * time.Second))}),
	}
	var err error
	if sv.cat, err = queries.Load(); err != nil {
		t.Fatal(err)
	}
	t.Run("GuardsRefuseAndChangeNothing", sv.guardsRefuse)
	t.Run("EvidenceJournaled", sv.evidenceJournaled)
	t.Run("PrometheusUnreachable", sv.prometheusUnreachable)
	t.Run("SupersedeRelease", sv.supersedeRelease)
	t.Run("Idempotency", sv.idempotency)
	t.Run("RequestApprove", sv.requestApprove)
	t.Run("IncidentsExtendList", sv.incidentsExtendList)
}

// entries reads and verifies the namespace's journal.
func entries(t *testing.T, store *controlplane.Store) []journal.Entry {
	t.Helper()
	ctx := context.Background()
	if _, err := store.VerifyJournal(ctx); err != nil {
		t.Fatalf("journal verify: %v", err)
	}
	var out []journal.Entry
	for e, err := range journal.Entries(store.Journal().Range(ctx, "-", "+")) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (sv *servers) guardsRefuse(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		pol   config.Policy
		setup func(*testing.T, *Service)
		spec  func(*Spec)
		guard string
		msg   string
		code  int
	}{
		{name: "validation", spec: func(s *Spec) { s.Target = "chekout->payments" }, guard: GuardValidation, msg: "did you mean checkout", code: exit.Refused},
		{name: "policy", pol: config.Policy{Kinds: map[string][]string{"responder": {"breaker"}}}, guard: GuardPolicy, msg: "may not use retries", code: exit.Refused},
		{name: "reason", spec: func(s *Spec) { s.Reason = "" }, guard: GuardReason, msg: "reason is required", code: exit.Refused},
		{name: "ttl", spec: func(s *Spec) { s.TTL = time.Hour }, guard: GuardTTL, msg: "exceeds the maximum 30m0s", code: exit.Refused},
		{name: "evidence", spec: func(s *Spec) { s.Target = "ledger->db" }, guard: GuardEvidence, msg: "amplification 1 (ok", code: exit.Refused},
		{name: "blast radius", spec: func(s *Spec) { s.Target = "checkout->payments,checkout" }, guard: GuardBlastRadius, msg: "names 2 targets", code: exit.Refused},
		{name: "conflict", setup: func(t *testing.T, w *Service) {
			s := okSpec()
			s.Actor, s.Value = "bob", "cap:2"
			if _, err := w.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
		}, guard: GuardConflict, msg: `of bob since`, code: exit.Conflict},
		{name: "rate limit", pol: config.Policy{RateLimit: config.RateLimit{PerActor: 1}}, setup: func(t *testing.T, w *Service) {
			s := okSpec()
			s.Target = "checkout"
			if _, err := w.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
		}, guard: GuardRateLimit, msg: "alice made 1 lever changes", code: exit.Refused},
		{name: "confirmation", spec: func(s *Spec) { s.Yes = false }, guard: GuardConfirmation, msg: "pass --yes", code: exit.Refused},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, store := sv.world(t, "guards-"+string(rune('a'+i)), c.pol)
			if c.setup != nil {
				c.setup(t, w)
			}
			spec := okSpec()
			if c.spec != nil {
				c.spec(&spec)
			}
			before, v0, _, err := store.Get(ctx, "retries", "checkout->payments")
			if err != nil {
				t.Fatal(err)
			}
			n := len(entries(t, store))
			_, err = w.Apply(ctx, spec)
			var ref *RefusedError
			if !errors.As(err, &ref) || ref.Guard != c.guard || !strings.Contains(err.Error(), c.msg) || exit.Code(err) != c.code {
				t.Fatalf("got %v (exit %d), want the %s guard saying %q (exit %d)", err, exit.Code(err), c.guard, c.msg, c.code)
			}
			after, v1, _, _ := store.Get(ctx, "retries", "checkout->payments")
			if v1 != v0 || (before == nil) != (after == nil) || (before != nil && before.ActionID != after.ActionID) {
				t.Fatalf("the lever changed: %+v v%d → %+v v%d", before, v0, after, v1)
			}
			es := entries(t, store)
			if len(es) != n+spec.countTargets() {
				t.Fatalf("%d new entries, want one per target", len(es)-n)
			}
			last := es[len(es)-1]
			if last.Event != journal.ActionRefused || last.Outcome != "refused: "+c.guard || last.Error != err.Error() || last.RedisUser != "default" {
				t.Fatalf("journaled as %+v", last)
			}
		})
	}
}

func (s Spec) countTargets() int { return strings.Count(s.Target, ",") + 1 }

func (sv *servers) evidenceJournaled(t *testing.T) {
	w, store := sv.world(t, "evidence", config.Policy{})
	res, err := w.Apply(context.Background(), okSpec())
	if err != nil {
		t.Fatal(err)
	}
	es := entries(t, store)
	e := es[len(es)-1]
	if e.Event != journal.ActionApplied || e.ActionID != res.ActionID || e.Forced || len(e.Evidence) != 2 {
		t.Fatalf("entry: %+v", e)
	}
	amp, ratio := e.Evidence[0], e.Evidence[1]
	if amp.Query != "amplification" || amp.Pack != "stormctl" || amp.Status != "crit" || amp.Value < 3.9 || amp.Value > 4.1 || amp.Threshold == "" {
		t.Fatalf("amplification evidence: %+v", amp)
	}
	if ratio.Query != "retry_ratio" || ratio.Value < 0.74 || ratio.Value > 0.76 || time.Since(ratio.Time) > time.Minute {
		t.Fatalf("retry ratio evidence: %+v", ratio)
	}
	l, _, _, _ := store.Get(context.Background(), "retries", "checkout->payments")
	if l == nil || l.Value != "off" || l.Actor != "alice" || time.Until(l.ExpiresAt) > 10*time.Minute || time.Until(l.ExpiresAt) < 9*time.Minute {
		t.Fatalf("lever: %+v", l)
	}
}

func (sv *servers) prometheusUnreachable(t *testing.T) {
	ctx := context.Background()
	w, store := sv.world(t, "unreachable", config.Policy{})
	down, _ := queries.NewClient(config.Prometheus{URL: "http://127.0.0.1:1"}, func(string) string { return "" })
	w.Evidence = &QueryEvidence{Catalog: sv.cat, Runner: queries.NewRunner(down, queries.RunnerOptions{}),
		PackFor: func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }}
	_, err := w.Apply(ctx, okSpec())
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardEvidence || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("%v", err)
	}
	spec := okSpec()
	spec.Force = true
	res, err := w.Apply(ctx, spec)
	if err != nil || !res.Forced {
		t.Fatalf("forced: %+v %v", res, err)
	}
	es := entries(t, store)
	if e := es[len(es)-1]; e.Event != journal.ActionApplied || !e.Forced {
		t.Fatalf("the applied entry must say forced: %+v", e)
	}
}

func (sv *servers) supersedeRelease(t *testing.T) {
	ctx := context.Background()
	w, store := sv.world(t, "supersede", config.Policy{})
	first, err := w.Apply(ctx, okSpec())
	if err != nil {
		t.Fatal(err)
	}
	spec := okSpec()
	spec.Actor, spec.Value = "bob", "cap:2"
	_, err = w.Apply(ctx, spec)
	var ref *RefusedError
	if !errors.As(err, &ref) || exit.Code(err) != exit.Conflict || ref.Holder.ActionID != first.ActionID ||
		!strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), "amplification 4x") {
		t.Fatalf("conflict must name who, when and why: %v", err)
	}
	spec.Supersede = true
	second, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	l, _, _, _ := store.Get(ctx, "retries", "checkout->payments")
	if l.Value != "cap:2" || l.Previous == nil || l.Previous.ActionID != first.ActionID {
		t.Fatalf("superseded lever: %+v", l)
	}
	if _, err := w.Release(ctx, second.ActionID, "bob", "payments recovered"); err != nil {
		t.Fatal(err)
	}
	l, _, _, _ = store.Get(ctx, "retries", "checkout->payments")
	if l == nil || l.ActionID != first.ActionID || l.Value != "off" {
		t.Fatalf("release must restore the superseded lever: %+v", l)
	}
	if _, err := w.Release(ctx, first.ActionID, "alice", "cap held"); err != nil {
		t.Fatal(err)
	}
	if l, _, _, _ = store.Get(ctx, "retries", "checkout->payments"); l != nil {
		t.Fatalf("lever after the last release: %+v", l)
	}
	_, err = w.Release(ctx, first.ActionID, "alice", "cap held")
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("releasing twice: %v", err)
	}
}

func (sv *servers) idempotency(t *testing.T) {
	ctx := context.Background()
	w, store := sv.world(t, "idem", config.Policy{})
	spec := okSpec()
	spec.IdempotencyKey = "INC-7/step-2"
	first, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, v0, _, _ := store.Get(ctx, "retries", "checkout->payments")
	n := len(entries(t, store))
	again, err := w.Apply(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, v1, _, _ := store.Get(ctx, "retries", "checkout->payments")
	if !again.Replayed || v1 != v0 || len(entries(t, store)) != n {
		t.Fatalf("replay %+v: version %d→%d", again, v0, v1)
	}
	// A true replay returns the first result exactly, expiry and TTL
	// included; only the replay markers, the guards run and the write's
	// replication (a replay writes nothing to confirm) differ.
	norm := func(r *Result) string {
		c := *r
		c.Replayed, c.Guards, c.Replicated, c.Replicas = false, nil, nil, nil
		c.Targets = append([]TargetResult(nil), r.Targets...)
		for i := range c.Targets {
			c.Targets[i].Replayed, c.Targets[i].Replication = false, nil
		}
		b, _ := json.Marshal(c)
		return string(b)
	}
	if a, b := norm(first), norm(again); a != b || first.ExpiresAt == nil {
		t.Fatalf("replay differs from the first result:\nfirst  %s\nreplay %s", a, b)
	}

	// A retry that words the reason anew is the same request.
	reworded := spec
	reworded.Reason = "amplification 4x, still"
	if r, err := w.Apply(ctx, reworded); err != nil || !r.Replayed || r.ActionID != first.ActionID || norm(r) != norm(first) {
		t.Fatalf("reworded retry: %+v %v, want the first result", r, err)
	}

	// The key is alice's: bob reusing it is refused (exit 2), journaled,
	// and changes nothing, even with the same arguments.
	byBob := spec
	byBob.Actor = "bob"
	_, err = w.Apply(ctx, byBob)
	var reused *RefusedError
	if !errors.As(err, &reused) || reused.Guard != GuardIdempotency || exit.Code(err) != exit.Usage ||
		!strings.Contains(err.Error(), "it answers only its own actor, not bob") {
		t.Fatalf("bob reusing alice's key: %v (exit %d)", err, exit.Code(err))
	}
	if es := entries(t, store); len(es) != n+1 || es[n].Actor != "bob" || es[n].Outcome != "refused: idempotency" {
		t.Fatalf("bob's reuse journaled as %+v", es[len(es)-1])
	}
	n++

	// The key reused with other arguments: refused (exit 2), journaled,
	// nothing changed.
	for _, change := range []func(*Spec){
		func(s *Spec) { s.TTL = 5 * time.Minute },
		func(s *Spec) { s.Value = "cap:2" },
		func(s *Spec) { s.Kind, s.Target, s.Value = "breaker", "payments", "open" },
	} {
		other := spec
		change(&other)
		_, err := w.Apply(ctx, other)
		var ref *RefusedError
		if !errors.As(err, &ref) || ref.Guard != GuardIdempotency || exit.Code(err) != exit.Usage ||
			!strings.Contains(err.Error(), `idempotency key "INC-7/step-2" was first used for retries checkout->payments=off`) {
			t.Fatalf("reused key %+v: %v (exit %d)", other, err, exit.Code(err))
		}
		es := entries(t, store)
		last := es[len(es)-1]
		if last.Event != journal.ActionRefused || last.Outcome != "refused: idempotency" || len(es) != n+1 {
			t.Fatalf("reuse journaled as %+v (%d entries, want %d)", last, len(es), n+1)
		}
		n++
	}
	l, v2, _, _ := store.Get(ctx, "retries", "checkout->payments")
	if v2 != v0 || l.Value != "off" || l.ActionID != first.ActionID {
		t.Fatalf("after the reuses: %+v version %d", l, v2)
	}
	if b, _, _, _ := store.Get(ctx, "breaker", "payments"); b != nil {
		t.Fatalf("a reused key set another lever: %+v", b)
	}

	// Two different requests racing on one fresh key: one applies, the
	// other is refused, whichever check (the read or the script) sees it.
	errs := make(chan error, 2)
	for _, v := range []string{"off", "cap:2"} {
		s := spec
		s.Target, s.Value, s.IdempotencyKey = "checkout", v, "race"
		go func() { _, err := w.Apply(ctx, s); errs <- err }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || exit.Code(errors.Join(e1, e2)) != exit.Usage {
		t.Fatalf("racing reuse: %v / %v, want one applied and one refused with exit 2", e1, e2)
	}
}

func (sv *servers) requestApprove(t *testing.T) {
	ctx := context.Background()
	w, store := sv.world(t, "approve", config.Policy{Approval: []string{"breaker"}})
	spec := Spec{Kind: "breaker", Target: "payments", Value: "open", TTL: 10 * time.Minute, Reason: "p99 2.5s", Actor: "alice", Yes: true, Force: true}
	_, err := w.Apply(ctx, spec)
	var pe *PendingError
	if !errors.As(err, &pe) || exit.Code(err) != exit.Pending {
		t.Fatalf("%v", err)
	}
	_, err = w.Approve(ctx, pe.Request.ID, "alice", true)
	if exit.Code(err) != exit.Refused || !strings.Contains(err.Error(), "own request") {
		t.Fatalf("self-approval: %v", err)
	}
	if l, _, _, _ := store.Get(ctx, "breaker", "payments"); l != nil {
		t.Fatalf("nothing may change before approval: %+v", l)
	}
	res, err := w.Approve(ctx, pe.Request.ID, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	l, _, _, _ := store.Get(ctx, "breaker", "payments")
	if l == nil || l.Actor != "alice" || l.ActionID != pe.Request.ActionID || res.ApprovedBy != "bob" || res.Forced {
		t.Fatalf("approved lever %+v, result %+v", l, res)
	}
	var got []string
	for _, e := range entries(t, store) {
		got = append(got, string(e.Event)+"/"+e.Actor)
	}
	want := "action.requested/alice action.refused/alice action.approved/bob action.applied/bob"
	if strings.Join(got, " ") != want {
		t.Fatalf("journal %v, want %s", got, want)
	}
	list, err := w.List(ctx, false)
	if err != nil || len(list) != 1 || list[0].State != StateActive {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func (sv *servers) incidentsExtendList(t *testing.T) {
	ctx := context.Background()
	w, store := sv.world(t, "incidents", config.Policy{})
	inc, err := w.OpenIncident(ctx, "checkout retry storm", "alice")
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(ctx, okSpec())
	if err != nil || res.Incident != inc.ID {
		t.Fatalf("the current incident must be attached: %+v %v", res, err)
	}
	ext, err := w.Extend(ctx, res.ActionID, "alice", "still storming", 25*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Until(ext.Targets[0].After.ExpiresAt); got < 24*time.Minute {
		t.Fatalf("extended to %s", got)
	}
	if _, err := w.Extend(ctx, res.ActionID, "alice", "still storming", time.Hour); exit.Code(err) != exit.Refused {
		t.Fatalf("extend past the maximum: %v", err)
	}
	if _, err := w.Release(ctx, res.ActionID, "alice", "recovered"); err != nil {
		t.Fatal(err)
	}
	all, err := w.List(ctx, true)
	if err != nil || len(all) != 1 || all[0].State != StateReleased || all[0].Incident != inc.ID {
		t.Fatalf("list --all: %+v %v", all, err)
	}
	if _, err := w.CloseIncident(ctx, "", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CloseIncident(ctx, "", "alice", ""); err == nil {
		t.Fatal("closing with none open must fail")
	}
	spec := okSpec()
	spec.Incident = inc.ID
	if _, err := w.Plan(ctx, spec); err == nil || !strings.Contains(err.Error(), "was closed") {
		t.Fatalf("a closed incident: %v", err)
	}
	var events []string
	for _, e := range entries(t, store) {
		events = append(events, string(e.Event))
	}
	want := "incident.opened action.applied action.extended action.refused action.released incident.closed action.planned"
	if strings.Join(events, " ") != want {
		t.Fatalf("journal %v, want %s", events, want)
	}
}
