package actions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
)

type knowsAll struct{}

func (knowsAll) Known(context.Context, NameRole, string) (bool, []string, error) {
	return true, nil, nil
}

// redisWorld is a Service on a real redis-server whose client records its
// round trips. Every guard runs; only Prometheus is left out: the inventory
// knows every name and the evidence never supports, so specs pass --force.
func redisWorld(t testing.TB, pol config.Policy) (*Service, *controlplane.Store, *testenv.RoundTrips) {
	t.Helper()
	r := testenv.StartRedis(t, testenv.RedisOptions{})
	store, err := controlplane.Open(context.Background(), config.Redis{URL: r.URL("", ""), Namespace: "rt"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rt := &testenv.RoundTrips{}
	store.Client().AddHook(rt)
	p, err := NewPolicy(pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Store: FromStore(store), Journal: journal.NewWriter(store, t.TempDir()+"/p.jsonl"), Policy: p,
		Inventory: knowsAll{}, Evidence: fakeEvidence{values: map[string]journal.Evidence{}}, Clock: SystemClock{}}, store, rt
}

func forcedSpec(actor, target string) Spec {
	return Spec{Kind: "retries", Target: target, Value: "off", TTL: time.Minute, Reason: "storm", Actor: actor, Yes: true, Force: true}
}

// A guarded apply (every guard, evidence from a fake) costs one read and
// one script. Each case runs twice on fresh levers and the second run is
// counted, so that scripts are loaded and connections dialed.
func TestGuardedApplyRoundTrips(t *testing.T) {
	ctx := context.Background()
	w, store, rt := redisWorld(t, config.Policy{BlastRadius: 3, Approval: []string{"autoscaling"},
		RateLimit: config.RateLimit{PerActor: 100, Overall: 100}})
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		max   int
		setup func(n string) Spec
		run   func(Spec) error
	}{
		{"apply", 2, func(n string) Spec { return forcedSpec("alice", "plain"+n) }, nil},
		{"apply with an idempotency key", 2, func(n string) Spec {
			s := forcedSpec("alice", "keyed"+n)
			s.IdempotencyKey = "step-" + n
			return s
		}, nil},
		{"apply replayed by its key", 1, func(n string) Spec {
			s := forcedSpec("alice", "replayed"+n)
			s.IdempotencyKey = "again-" + n
			must(w.Apply(ctx, s))
			return s
		}, nil},
		{"apply in the current incident", 2, func(n string) Spec {
			must(w.OpenIncident(ctx, "storm "+n, "alice"))
			return forcedSpec("alice", "current"+n)
		}, nil},
		{"apply with --incident", 2, func(n string) Spec {
			inc, err := w.OpenIncident(ctx, "named "+n, "alice")
			must(inc, err)
			s := forcedSpec("alice", "named"+n)
			s.Incident = inc.ID
			return s
		}, nil},
		{"apply to 3 targets: N+1", 4, func(n string) Spec {
			return forcedSpec("alice", "m1-"+n+",m2-"+n+",m3-"+n)
		}, nil},
		{"plan: read and one journal entry", 2, func(n string) Spec { return forcedSpec("alice", "planned"+n) },
			func(s Spec) error { _, err := w.Plan(ctx, s); return err }},
		{"refused by the conflict guard: read and one journal entry", 2, func(n string) Spec {
			must(w.Apply(ctx, forcedSpec("bob", "held"+n)))
			return forcedSpec("alice", "held"+n)
		}, func(s Spec) error {
			_, err := w.Apply(ctx, s)
			if exit.Code(err) != exit.Conflict {
				return err
			}
			return nil
		}},
		{"approve: request read, snapshot, approval, script", 4, func(n string) Spec {
			s := forcedSpec("alice", "svc"+n)
			s.Kind, s.Value = "autoscaling", "frozen"
			_, ap, err := w.Request(ctx, s)
			must(ap, err)
			return Spec{IdempotencyKey: ap.ID}
		}, func(s Spec) error { _, err := w.Approve(ctx, s.IdempotencyKey, "bob", true); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run
			if run == nil {
				run = func(s Spec) error { _, err := w.Apply(ctx, s); return err }
			}
			var trips []string
			for _, n := range []string{"-warm", "-counted"} {
				spec := c.setup(n)
				rt.Take()
				if err := run(spec); err != nil {
					t.Fatal(err)
				}
				trips = rt.Take()
			}
			if len(trips) > c.max {
				t.Fatalf("%d round trips, want at most %d:\n%s", len(trips), c.max, strings.Join(trips, "\n"))
			}
			t.Logf("%d: %s", len(trips), strings.Join(trips, " · "))
		})
	}
	entries(t, store)
}

// spender measures nothing; on its first call it spends the overall rate
// budget as another responder would while the guards wait on Prometheus.
type spender struct {
	once  *sync.Once
	store *controlplane.Store
	limit controlplane.RateLimit
}

func (s spender) Measure(ctx context.Context, id string, _ Target) (journal.Evidence, error) {
	s.once.Do(func() { _, _ = s.store.Rate(ctx, "bob", s.limit, true) })
	return journal.Evidence{Query: id, Status: StatusNoData}, nil
}

// A budget spent between the guards' read and the write is refused by the
// apply script: exit 3 with the guard's message, journaled, nothing changed.
func TestRateSpentAfterTheGuardsReadIsRefusedByTheScript(t *testing.T) {
	ctx := context.Background()
	w, store, _ := redisWorld(t, config.Policy{RateLimit: config.RateLimit{PerActor: 5, Overall: 1}})
	lim := w.Policy.RateLimit()
	w.Evidence = spender{once: &sync.Once{}, store: store, limit: lim}
	spec := forcedSpec("alice", "checkout")
	res, err := w.Apply(ctx, spec)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Guard != GuardRateLimit || exit.Code(err) != exit.Refused ||
		!strings.Contains(err.Error(), "1 lever changes in 1m0s by everyone (limit 1)") {
		t.Fatalf("want the rate limit's refusal, got %v", err)
	}
	var got []string
	for _, g := range res.Guards {
		got = append(got, g.Guard+"="+g.Status)
	}
	if want := "rate-limit=passed confirmation=passed rate-limit=refused"; !strings.HasSuffix(strings.Join(got, " "), want) {
		t.Fatalf("guards %v, want them to end %s", got, want)
	}
	if l, ver, _, _ := store.Get(ctx, "retries", "checkout"); l != nil || ver != 0 {
		t.Fatalf("the refused apply wrote %+v v%d", l, ver)
	}
	if st, _ := store.Rate(ctx, "alice", lim, false); st.Actor != 0 || st.Overall != 1 {
		t.Fatalf("the refusal was counted: %+v", st)
	}
	es := entries(t, store)
	last := es[len(es)-1]
	if len(es) != 1 || last.Event != journal.ActionRefused || last.Outcome != "refused: "+GuardRateLimit || last.Error != err.Error() || ref.Entries[0] != last.ID {
		t.Fatalf("journal: %+v", es)
	}
}
