package queries

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/singleflight"
)

// Request is one query for the runner.
type Request struct {
	// Key identifies the query for sharing in-flight evaluations and for
	// backoff, e.g. "amplification|stormctl|checkout|payments"; "" uses Expr.
	Key     string
	Expr    string    // rendered PromQL
	Time    time.Time // instant query time; zero = now
	Range   *Range    // non-nil: a range query
	Metrics []string  // metric names Expr reads, to explain "no data"
	// Fallback, when not "", is an instant query asked when Expr has no
	// data, of the metrics in Metrics; if it has none either, the no-data
	// message starts with FallbackNote.
	Fallback, FallbackNote string
}

// Range makes a Request a range query.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// Point is one sample of a range result.
type Point struct {
	T time.Time
	V float64
}

// Series is one result series. Value is the instant value, or the last point
// of a range; NaN and ±Inf are kept as they are, never turned into 0.
type Series struct {
	Labels map[string]string
	Value  float64
	Points []Point
}

// Result is the outcome of one Request. Results are shared between callers
// of the same Key and must not be modified.
type Result struct {
	Request  Request
	Series   []Series
	NoData   *NoData  // nil when there is data
	Warnings []string // from Prometheus
	Infos    []string // from Prometheus (newer servers)
	Err      error    // a *ServerError, or a *PausedError inside one
	// Stale marks a result served without asking the server, because of
	// backoff after an error or the server's Retry-After: Series, NoData and
	// At are those of the last good result (empty when there is none), Err
	// is why it was not asked. A failed evaluation is served the same way.
	Stale bool
	At    time.Time     // the evaluation time of the data
	Took  time.Duration // how long the evaluation took
}

// DefaultConcurrency bounds the evaluations one runner has in flight: enough
// for a refresh of the whole catalogue to take one round trip, as a Grafana
// dashboard's panels do, and far below Prometheus's own default limit of 20
// concurrent queries.
const DefaultConcurrency = 10

// RunnerOptions tune a Runner; zero values take the defaults.
type RunnerOptions struct {
	Concurrency int           // evaluations in flight at once; default DefaultConcurrency
	Timeout     time.Duration // per evaluation; default 10s
	BackoffBase time.Duration // first backoff ceiling after an error; default 1s
	BackoffMax  time.Duration // backoff ceiling cap; default 1m
	Now         func() time.Time
	Rand        *rand.Rand // jitter source; default seeded at random
}

// Runner evaluates queries without adding to a storm: bounded concurrency,
// one in-flight evaluation per Key, capped exponential backoff with full
// jitter per Key after an error, and a pause of every request while the
// server's Retry-After runs. It is safe for concurrent use.
type Runner struct {
	c     *Client
	opts  RunnerOptions
	slots chan struct{}
	group singleflight.Group

	mu   sync.Mutex // guards keys and opts.Rand
	keys map[string]*keyState
}

type keyState struct {
	last     *Result // the last good result
	failures int     // consecutive
	retryAt  time.Time
	err      error
}

// NewRunner returns a runner over c.
func NewRunner(c *Client, opts RunnerOptions) *Runner {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = time.Second
	}
	if opts.BackoffMax < opts.BackoffBase {
		opts.BackoffMax = max(time.Minute, opts.BackoffBase)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Runner{c: c, opts: opts, slots: make(chan struct{}, opts.Concurrency), keys: map[string]*keyState{}}
}

// Run evaluates req, or joins an evaluation of the same Key in flight, or
// serves the last good result as Stale during backoff or Retry-After. The
// evaluation itself is not canceled with ctx, since other callers may share
// it; it is bounded by the runner's timeout. Evaluations waiting for a slot
// are bounded too: at most one per Key.
func (r *Runner) Run(ctx context.Context, req Request) Result {
	if err := ctx.Err(); err != nil {
		return Result{Request: req, Err: r.c.Err(opOf(req), err)}
	}
	key := keyOf(req)
	if res, held := r.held(key, req); held {
		return res
	}
	ch := r.group.DoChan(key, func() (any, error) {
		return r.evaluate(context.WithoutCancel(ctx), key, req), nil
	})
	select {
	case <-ctx.Done():
		return Result{Request: req, Err: r.c.Err(opOf(req), ctx.Err())}
	case v := <-ch:
		res := v.Val.(Result)
		res.Request = req
		return res
	}
}

// RunAll runs reqs concurrently, within the runner's concurrency bound, and
// returns their results in request order.
func (r *Runner) RunAll(ctx context.Context, reqs []Request) []Result {
	out := make([]Result, len(reqs))
	var wg sync.WaitGroup
	for i, q := range reqs {
		wg.Go(func() { out[i] = r.Run(ctx, q) })
	}
	wg.Wait()
	return out
}

// held answers without the server while it asked for a pause or while key
// backs off.
func (r *Runner) held(key string, req Request) (Result, bool) {
	now := r.opts.Now()
	if p := r.c.pacer.pausedAt(now); p != nil {
		return r.stale(key, req, r.c.Err(opOf(req), p)), true
	}
	r.mu.Lock()
	var backoff error
	if st := r.keys[key]; st != nil && now.Before(st.retryAt) {
		backoff = st.err
	}
	r.mu.Unlock()
	if backoff != nil {
		return r.stale(key, req, backoff), true
	}
	return Result{}, false
}

func (r *Runner) evaluate(ctx context.Context, key string, req Request) Result {
	r.slots <- struct{}{}
	defer func() { <-r.slots }()
	// The state may have changed while this waited for a slot.
	if res, held := r.held(key, req); held {
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	ctx, held := r.c.withCharge(ctx)
	defer held.release() // the answer is decoded by then
	start := r.opts.Now()
	res := Result{Request: req, At: req.Time}
	if res.At.IsZero() {
		res.At = start
	}
	var (
		v     model.Value
		warns v1.Warnings
		infos v1.Infos
		err   error
	)
	if req.Range != nil {
		res.At = req.Range.End
		v, warns, infos, err = r.c.QueryRange(ctx, req.Expr, v1.Range(*req.Range), v1.WithTimeout(r.opts.Timeout))
	} else {
		v, warns, infos, err = r.c.Query(ctx, req.Expr, req.Time, v1.WithTimeout(r.opts.Timeout))
		if err == nil && req.Fallback != "" && empty(v) {
			v, warns, infos, err = r.c.Query(ctx, req.Fallback, req.Time, v1.WithTimeout(r.opts.Timeout))
		}
	}
	res.Warnings, res.Infos = warns, infos
	if err == nil {
		res.Series, err = toSeries(v)
		if err != nil {
			err = r.c.Err(opOf(req), err)
		}
	}
	if err == nil && len(res.Series) == 0 {
		res.NoData = r.diagnose(ctx, req)
		if req.Fallback != "" && req.Range == nil {
			res.NoData.Message = req.FallbackNote + "; " + res.NoData.Message
		}
	}
	res.Took = r.opts.Now().Sub(start)
	if err != nil {
		return r.fail(key, req, err)
	}
	r.mu.Lock()
	r.keys[key] = &keyState{last: &res}
	r.mu.Unlock()
	return res
}

// fail starts or extends key's backoff: full jitter, a delay drawn from
// [0, min(BackoffMax, BackoffBase·2^(failures-1))].
func (r *Runner) fail(key string, req Request, err error) Result {
	var paused *PausedError
	r.mu.Lock()
	st := r.keys[key]
	if st == nil {
		st = &keyState{}
		r.keys[key] = st
	}
	st.err = err
	if !errors.As(err, &paused) { // a pause is the server's doing, not this key's
		st.failures++
		st.retryAt = r.opts.Now().Add(r.jitter(st.failures))
	}
	r.mu.Unlock()
	return r.stale(key, req, err)
}

// jitter draws a backoff delay; r.mu must be held.
func (r *Runner) jitter(failures int) time.Duration {
	ceiling := r.opts.BackoffBase
	for i := 1; i < failures && ceiling < r.opts.BackoffMax; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, r.opts.BackoffMax)
	return time.Duration(r.opts.Rand.Int64N(int64(ceiling) + 1))
}

func (r *Runner) stale(key string, req Request, err error) Result {
	r.mu.Lock()
	st := r.keys[key]
	r.mu.Unlock()
	res := Result{Request: req}
	if st != nil && st.last != nil {
		res = *st.last
		res.Request = req
	}
	res.Stale, res.Err = true, err
	return res
}

func keyOf(req Request) string {
	if req.Key != "" {
		return req.Key
	}
	return req.Expr
}

func opOf(req Request) string {
	if req.Range != nil {
		return "query_range"
	}
	return "query"
}
