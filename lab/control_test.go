package lab

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// controlLab is a max-speed lab whose fleet reads its levers from a real
// redis-server through flags, with its API served on loopback, the saved
// queries run through the normal runner against it, and the actions
// service pulling levers on the same control plane.
type controlLab struct {
	*Lab
	store  *controlplane.Store
	svc    *actions.Service
	cat    *queries.Catalog
	runner *queries.Runner
}

func startControlLab(t *testing.T, scenario string, redisAddr string, events []sim.LeverEvent) *controlLab {
	t.Helper()
	ctx := context.Background()
	sc, err := sim.Find(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ReplaceAll(t.Name(), "/", "-")
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rc.Close() })
	l, err := New(Options{Scenario: sc, Seed: 1, Redis: rc, Namespace: ns, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	srv, err := promapi.Serve("127.0.0.1:0", l.Handler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	store, err := controlplane.NewStore(ctx, redis.NewClient(&redis.Options{Addr: redisAddr}), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc, err := l.NewActions(ActionsOptions{Store: store, PromURL: srv.URL, PendingPath: filepath.Join(t.TempDir(), "pending.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	l.Actions = &Actions{Service: svc, Actor: "rehearsal"}
	client, err := queries.NewClient(config.Prometheus{URL: srv.URL}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cat, err := queries.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &controlLab{Lab: l, store: store, svc: svc, cat: cat, runner: queries.NewRunner(client, queries.RunnerOptions{})}
}

// measure runs saved query id through the runner at the lab's present; in
// sustained mode it asks whether the threshold held for its whole for:
// period, as an alert would. It returns the worst series' value, NaN if
// there is none.
func (c *controlLab) measure(t *testing.T, id string, p queries.Params, sustained bool) (float64, queries.Status) {
	t.Helper()
	r, err := c.cat.Render(id, queries.DefaultPack, p)
	if err != nil {
		t.Fatal(err)
	}
	expr := r.Expr
	if sustained {
		expr = r.Sustained(c.Sim.Scenario().ScrapeInterval.D())
	}
	res := c.runner.Run(context.Background(), queries.Request{Key: id + "|" + expr, Expr: expr, Metrics: r.Metrics})
	if res.Err != nil {
		t.Fatalf("%s: %v", id, res.Err)
	}
	worst, st := math.NaN(), queries.OK
	for _, s := range res.Series {
		if math.IsNaN(s.Value) {
			continue
		}
		if math.IsNaN(worst) || (r.Threshold.Direction == queries.Below) == (s.Value < worst) {
			worst = s.Value
		}
	}
	if !math.IsNaN(worst) {
		st = r.Threshold.Evaluate(worst)
	}
	return worst, st
}

// edgeSuccess is 1 − the saved edge_error_rate of the edge service.
func (c *controlLab) edgeSuccess(t *testing.T) float64 {
	v, _ := c.measure(t, "edge_error_rate", queries.Params{Service: c.Sim.EdgeService()}, false)
	return 1 - v
}

func (c *controlLab) runTo(t *testing.T, at time.Duration) {
	t.Helper()
	if err := c.Sim.RunTo(context.Background(), at); err != nil {
		t.Fatal(err)
	}
}

func newRedisAddr(t *testing.T) string {
	t.Helper()
	return testenv.StartRedis(t, testenv.RedisOptions{}).Addr
}
