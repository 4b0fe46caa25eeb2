package playbooks

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-feature/go-sdk/openfeature/isolated"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// labClock is the simulation's own clock, in lockstep with the test: the
// simulation stands still while a playbook evaluates a check or pulls a
// lever, and advances only when a wait step (or the test) sleeps. Runs are
// therefore as deterministic as the seeded simulation, and as fast as it.
type labClock struct{ l *lab.Lab }

func (c labClock) Now() time.Time { return c.l.Epoch.Add(c.l.Sim.Now()) }

func (c labClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.l.Sim.RunTo(ctx, c.l.Sim.Now()+d)
}

// atLabNow evaluates instant queries that name no time at the simulation's
// "now": samples are stamped on the simulated clock, which runs ahead of
// the wall clock in a paced run.
func (c labClock) atLabNow(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		form := r.Form
		if strings.HasSuffix(r.URL.Path, "/query") && form.Get("time") == "" {
			now := c.Now()
			form.Set("time", strconv.FormatFloat(float64(now.UnixNano())/1e9, 'f', 3, 64))
		}
		r2 := r.Clone(r.Context())
		r2.Method, r2.Body, r2.ContentLength = http.MethodGet, http.NoBody, 0
		r2.Header.Del("Content-Type")
		r2.URL.RawQuery, r2.Form, r2.PostForm = form.Encode(), nil, nil
		next.ServeHTTP(w, r2)
	})
}

// labStack is one scenario running at labSpeed with its levers read
// through the flags provider from a real redis-server, its Prometheus API
// served on loopback, and the real actions service and playbook runner on
// top, all in one control-plane namespace.
type labStack struct {
	*stack
	lab   *lab.Lab
	clock labClock
	sc    *sim.Scenario
}

func startLab(t *testing.T, rd *testenv.Redis, cat *queries.Catalog, scenario string) *labStack {
	t.Helper()
	sc, err := sim.Find(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ReplaceAll(t.Name(), "/", "-")
	rc := redis.NewClient(&redis.Options{Addr: rd.Addr})
	api := isolated.NewAPI()
	if err := api.SetProviderAndWait(context.Background(), flags.NewProvider(rc, flags.Namespace(ns))); err != nil {
		t.Fatal(err)
	}
	l, err := lab.New(lab.Options{Scenario: sc, Seed: 1, Until: time.Hour, Levers: &sim.FlagLevers{Client: api.NewClient()}})
	if err != nil {
		t.Fatal(err)
	}
	clock := labClock{l: l}
	srv, err := promapi.Serve("127.0.0.1:0", clock.atLabNow(l.Handler()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = api.Shutdown(context.Background())
		rc.Close()
		l.Close()
	})

	store, err := controlplane.Open(context.Background(), config.Redis{URL: rd.URL("", ""), Namespace: ns}, func(string) string { return "" })
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
		Levers:   settled{ActionLevers{Service: svc}}, Journal: jw, Clock: clock,
	}
	return &labStack{stack: &stack{svc: svc, store: store, env: env}, lab: l, clock: clock, sc: sc}
}

// until simulates up to time d since the start.
func (s *labStack) until(t *testing.T, d time.Duration) {
	t.Helper()
	if err := s.lab.Sim.RunTo(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// settled gives a lever write time to reach the fleet's flags provider
// (pushed over pub/sub on loopback, in well under a millisecond) before
// the simulation, which stands still meanwhile, advances again.
type settled struct{ ActionLevers }

const settle = 50 * time.Millisecond

func (s settled) Apply(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	defer time.Sleep(settle)
	return s.ActionLevers.Apply(ctx, r)
}

func (s settled) Release(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	defer time.Sleep(settle)
	return s.ActionLevers.Release(ctx, r)
}
