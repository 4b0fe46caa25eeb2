// Package lab runs a storm scenario (lab/sim) into an embedded Prometheus
// TSDB (lab/promapi), serves the Prometheus HTTP API and /metrics over it,
// and summarises the run with the saved queries of queries/.
package lab

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/lab/promapi"
	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// Options configure a lab.
type Options struct {
	Scenario *sim.Scenario
	Seed     uint64
	Until    time.Duration // zero: the scenario's duration
	Speed    float64       // 0 as fast as possible, 1 real time, N N× real time
	Levers   sim.Levers
	Events   []sim.LeverEvent
	// Epoch is the wall time of simulated time zero; zero picks one: now for
	// paced runs, so that samples land at wall time, and now minus the
	// run's length for unpaced ones, so that the run ends about now.
	Epoch time.Time
}

// Lab is a simulated fleet with its embedded Prometheus.
type Lab struct {
	DB    *promapi.DB
	Sim   *sim.Sim
	Epoch time.Time
	until time.Duration
}

// New opens the TSDB and builds the fleet.
func New(opts Options) (*Lab, error) {
	until := opts.Until
	if until == 0 {
		until = opts.Scenario.Duration.D()
	}
	epoch := opts.Epoch
	if epoch.IsZero() {
		epoch = time.Now()
		if opts.Speed == 0 {
			epoch = epoch.Add(-until)
		}
	}
	db, err := promapi.Open(promapi.Options{})
	if err != nil {
		return nil, err
	}
	s, err := sim.New(opts.Scenario, sim.Options{Seed: opts.Seed, Until: until, Epoch: epoch, Speed: opts.Speed,
		Store: db, Levers: opts.Levers, Events: opts.Events})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Lab{DB: db, Sim: s, Epoch: epoch, until: until}, nil
}

// Handler serves the Prometheus API and the simulation's /metrics.
func (l *Lab) Handler() http.Handler {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := l.Sim.WriteMetrics(w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return promapi.Mux(l.DB.Handler(), metrics)
}

// Run simulates to the end (or until ctx ends).
func (l *Lab) Run(ctx context.Context) error { return l.Sim.Run(ctx) }

// Close closes the TSDB.
func (l *Lab) Close() error { return l.DB.Close() }

// Summary is the simulation's summary with the detection times of the
// saved queries, evaluated by the embedded engine over the stored samples.
func (l *Lab) Summary(ctx context.Context) (sim.Summary, error) {
	sum := l.Sim.Summary()
	cat, err := queries.Load()
	if err != nil {
		return sum, fmt.Errorf("lab summary: %w", err)
	}
	end := l.Sim.Now()
	if sum.DetectAmplification, err = l.firstCrit(ctx, cat, "amplification", queries.Params{Window: sim.Window}, end); err != nil {
		return sum, err
	}
	edge := queries.Params{Service: l.Sim.EdgeService(), Window: sim.Window}
	if sum.DetectEdgeErrorRate, err = l.firstCrit(ctx, cat, "edge_error_rate", edge, end); err != nil {
		return sum, err
	}
	return sum, nil
}

// firstCrit returns the first simulated second at which the saved query id
// (stormctl pack) reaches its critical threshold, or nil.
func (l *Lab) firstCrit(ctx context.Context, cat *queries.Catalog, id string, p queries.Params, end time.Duration) (*float64, error) {
	r, err := cat.Render(id, queries.DefaultPack, p)
	if err != nil {
		return nil, fmt.Errorf("lab summary: %w", err)
	}
	step := time.Second
	q, err := l.DB.Engine.NewRangeQuery(ctx, l.DB.TSDB, nil, r.Expr, l.Epoch, l.Epoch.Add(end), step)
	if err != nil {
		return nil, fmt.Errorf("lab summary: %s: %w", id, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("lab summary: %s: %w", id, res.Err)
	}
	mat, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("lab summary: %s: got %s, want a matrix", id, res.Value.Type())
	}
	var first *float64
	for _, series := range mat {
		for _, pt := range series.Floats {
			if r.Threshold.Evaluate(pt.F) != queries.Crit {
				continue
			}
			t := float64(pt.T-l.Epoch.UnixMilli()) / 1000
			if first == nil || t < *first {
				first = &t
			}
			break
		}
	}
	return first, nil
}
