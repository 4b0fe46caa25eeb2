// Package promapi embeds a PromQL engine (Prometheus's own promql package)
// over an in-memory sample store and serves the part of the Prometheus HTTP
// API stormctl calls, so client_golang's v1.API and every `stormctl query`
// talk to the lab exactly as to a real server.
//
// Prometheus's web/api/v1 and tsdb are not used: web/api/v1 links the rule,
// scrape and notifier managers and tsdb links Prometheus's config package,
// and with them every remote-write, service-discovery and cloud client (the
// AWS, Azure and Google SDKs, Consul, Nomad, Kubernetes discovery...): 800
// packages and 50 MB of binary for a lab that appends a few hundred series.
// The wire format they define (parameters, errors, JSON) is reproduced in
// api.go and wire.go and checked against a real Prometheus in the tests.
package promapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/annotations"
)

// Options configure Open.
type Options struct {
	// Logger receives engine logs; nil discards them.
	Logger *slog.Logger
	// QueryTimeout bounds one PromQL evaluation (default 30s).
	QueryTimeout time.Duration
}

// DB is an in-memory sample store with a PromQL engine over it.
type DB struct {
	Store  *Store
	Engine *promql.Engine
	logger *slog.Logger
	now    func() time.Time
}

// Open creates the store and the engine.
func Open(opts Options) (*DB, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	timeout := opts.QueryTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	eng := promql.NewEngine(promql.EngineOpts{
		Logger:               logger,
		MaxSamples:           50_000_000,
		Timeout:              timeout,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	})
	// Samples of a paused-then-resumed run may arrive late per series;
	// a small window keeps them instead of rejecting them.
	st := NewStore(int64(10 * time.Minute / time.Millisecond))
	return &DB{Store: st, Engine: eng, logger: logger, now: time.Now}, nil
}

// Appender starts an append transaction on the store.
func (d *DB) Appender(ctx context.Context) *Appender { return d.Store.Appender(ctx) }

// Query evaluates expr at t with the embedded engine, as /api/v1/query would.
func (d *DB) Query(ctx context.Context, expr string, t time.Time) (parser.Value, annotations.Annotations, error) {
	q, err := d.Engine.NewInstantQuery(ctx, d.Store, nil, expr, t)
	if err != nil {
		return nil, nil, fmt.Errorf("lab query %q: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Warnings, fmt.Errorf("lab query %q: %w", expr, res.Err)
	}
	return res.Value, res.Warnings, nil
}

// Close stops the engine.
func (d *DB) Close() error { return d.Engine.Close() }
