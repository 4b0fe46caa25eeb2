package playbooks

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// labClock is the simulation's own clock, in lockstep with the test: the
// simulation stands still while a playbook evaluates a check or pulls a
// lever, and advances only when a wait step (or the test) sleeps. Runs are
// therefore as deterministic as the seeded simulation, and as fast as it.
type labClock struct{ l *lab.Lab }

func (c labClock) Now() time.Time { return c.l.Now() }

func (c labClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.l.Sim.RunTo(ctx, c.l.Sim.Now()+d)
}

// labStack is one scenario whose fleet reads its levers through the flags
// provider from a real redis-server, with its Prometheus API served on
// loopback (instant queries at the simulation's present), and the real
// actions service and playbook runner on top, in one control-plane
// namespace.
type labStack struct {
	*stack
	lab *lab.Lab
}

func startLab(t *testing.T, rd *testenv.Redis, cat *queries.Catalog, scenario string) *labStack {
	t.Helper()
	ctx := context.Background()
	sc, err := sim.Find(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ReplaceAll(t.Name(), "/", "-")
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	l, err := lab.New(lab.Options{Scenario: sc, Seed: 1, Until: time.Hour, Redis: rc, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := promapi.Serve("127.0.0.1:0", l.Handler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		l.Close()
		rc.Close()
	})

	store, err := controlplane.Open(ctx, config.Redis{URL: rd.URL("", ""), Namespace: ns}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	client, err := queries.NewClient(config.Prometheus{URL: srv.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	runner := queries.NewRunner(client, queries.RunnerOptions{})
	pol, err := actions.NewPolicy(config.Policy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	packFor := func(string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }
	jw := journal.NewWriter(store, filepath.Join(t.TempDir(), "pending.jsonl"))
	svc := &actions.Service{Store: actions.FromStore(store), Journal: jw, Policy: pol,
		Inventory: actions.NewNames(config.Inventory{}, nil, actions.PromLabels{Client: client}),
		Evidence:  &actions.QueryEvidence{Catalog: cat, Runner: runner, PackFor: packFor},
		Clock:     actions.SystemClock{}}
	env := Env{
		Measurer: &PromMeasurer{Catalog: cat, Runner: runner, PackFor: func(_, _ string) (string, map[string]string, error) { return packFor("") }},
		Levers:   settled{ActionLevers{Service: svc}, l}, Journal: jw, Clock: labClock{l},
	}
	return &labStack{stack: &stack{svc: svc, store: store, env: env}, lab: l}
}

// until simulates up to time d since the start.
func (s *labStack) until(t *testing.T, d time.Duration) {
	t.Helper()
	if err := s.lab.Sim.RunTo(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// settled waits, after a lever write, until the fleet's flags provider
// serves it, so that it takes effect at the simulated instant it was
// pulled, while the simulation stands still.
type settled struct {
	ActionLevers
	lab *lab.Lab
}

func (s settled) Apply(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	res, err := s.ActionLevers.Apply(ctx, r)
	if err == nil && res.After != nil {
		err = s.lab.Settle(ctx, lever.Kind(r.Kind), r.Target, res.After.Version, true)
	}
	return res, err
}

func (s settled) Release(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	res, err := s.ActionLevers.Release(ctx, r)
	if err == nil && res.Released {
		version, present := int64(0), res.After != nil
		if present {
			version = res.After.Version
		}
		err = s.lab.Settle(ctx, lever.Kind(r.Kind), r.Target, version, present)
	}
	return res, err
}
