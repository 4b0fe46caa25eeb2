// Package promapi embeds a Prometheus TSDB and PromQL engine and serves the
// Prometheus HTTP API over them with Prometheus's own web/api/v1 handlers, so
// client_golang's v1.API and every `stormctl query` talk to the lab exactly
// as to a real server.
//
// Reusing web/api/v1 (rather than re-implementing the endpoints) buys the
// exact wire format for free: jsoniter codecs, float formatting, parameter
// parsing (RFC 3339 or Unix times, durations or float seconds, match[],
// limit, lookback_delta), the 11,000-point step check, warnings and infos,
// and errorType→HTTP status mapping. The price is a heavy constructor (NewAPI
// takes ~50 positional arguments) and more compiled packages; only the
// endpoints whose dependencies are wired here are routed, the rest answer 404.
package promapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/annotations"
)

// Options configure Open.
type Options struct {
	// Dir is the TSDB directory; empty means a temporary directory that
	// Close removes.
	Dir string
	// Logger receives TSDB and engine logs; nil discards them.
	Logger *slog.Logger
	// QueryTimeout bounds one PromQL evaluation (default 30s).
	QueryTimeout time.Duration
}

// DB is an embedded TSDB with a PromQL engine over it.
type DB struct {
	TSDB   *tsdb.DB
	Engine *promql.Engine
	logger *slog.Logger
	dir    string
	tmp    bool
}

// Open creates the TSDB and the engine.
func Open(opts Options) (*DB, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, tmp := opts.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "stormctl-lab-tsdb-")
		if err != nil {
			return nil, fmt.Errorf("lab tsdb: %w", err)
		}
		dir, tmp = d, true
	}
	to := tsdb.DefaultOptions()
	// Samples of a paused-then-resumed run may arrive late per series;
	// a small window keeps them instead of rejecting them.
	to.OutOfOrderTimeWindow = int64(10 * time.Minute / time.Millisecond)
	db, err := tsdb.Open(dir, logger, nil, to, nil)
	if err != nil {
		if tmp {
			os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("lab tsdb: open %s: %w", dir, err)
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
	return &DB{TSDB: db, Engine: eng, logger: logger, dir: dir, tmp: tmp}, nil
}

// Appender starts an append transaction on the TSDB.
func (d *DB) Appender(ctx context.Context) storage.Appender { return d.TSDB.Appender(ctx) }

// Query evaluates expr at t with the embedded engine, as /api/v1/query would.
func (d *DB) Query(ctx context.Context, expr string, t time.Time) (parser.Value, annotations.Annotations, error) {
	q, err := d.Engine.NewInstantQuery(ctx, d.TSDB, nil, expr, t)
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

// Close closes the TSDB and removes a temporary directory.
func (d *DB) Close() error {
	err := d.Engine.Close()
	if cerr := d.TSDB.Close(); err == nil {
		err = cerr
	}
	if d.tmp {
		if rerr := os.RemoveAll(d.dir); err == nil {
			err = rerr
		}
	}
	return err
}
