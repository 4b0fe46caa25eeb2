// Package sim is the storm lab's discrete-event simulation: a fleet of
// services with pools, layered retry policies, breakers, budgets, an
// autoscaler and a degraded path, calling dependencies that slow down, shed
// and keep working on abandoned requests. It runs on a virtual clock,
// deterministic for a seed, with resilience's own retry decisions, and
// samples DESIGN.md's metric contract every scrape interval.
package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Appendable receives the sampled series (the lab's sample store).
type Appendable interface {
	Appender(ctx context.Context) Appender
}

// Appender is one scrape interval's transaction; Prometheus's
// storage.Appender satisfies it.
type Appender interface {
	Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error)
	Commit() error
	Rollback() error
}

// Options configure a run.
type Options struct {
	Seed uint64
	// Until is the simulated time to run; zero means the scenario's duration.
	Until time.Duration
	// Epoch is the wall time of simulated time zero: samples are stamped
	// Epoch + simulated time, so that "now" queries work while serving.
	Epoch time.Time
	// Speed paces the run against the wall clock: 0 runs as fast as
	// possible, 1 in real time, N at N× real time.
	Speed float64
	// Start is the wall time simulated time zero is due in a paced run;
	// zero means when Run starts. A run that starts later catches up.
	Start time.Time
	// Store receives the samples; nil keeps metrics in memory only.
	Store Appendable
	// Levers are read once per scrape interval; nil means none.
	Levers Levers
	// Events are lever changes at simulated times, applied on top of Levers.
	Events []LeverEvent
}

// Sim is one simulation run. Its exported methods are safe to call from
// other goroutines while Run is running (a /metrics handler, say).
type Sim struct {
	mu   sync.Mutex
	sc   *Scenario
	opts Options
	now  time.Duration
	heap eventHeap
	seq  uint64
	rng  *rand.Rand

	services  []*service
	svcByName map[string]*service
	deps      []*dependency
	depByName map[string]*dependency
	edge      *service

	reqs    slab[request]
	frames  slab[frame]
	jobs    slab[job]
	intents slab[intent]

	reg    *registry
	levers *eventLevers
	stats  *stats
	track  tracker
	err    error
	// started is the wall time the run started, for pacing.
	started time.Time
	// sampled is the simulated time of the last scrape interval; -1 before
	// the first.
	sampled time.Duration
	// clock mirrors now for readers that must not wait for the run's lock
	// (a flags provider's clock is read from inside a tick).
	clock atomic.Int64
}

// New builds the fleet of sc.
func New(sc *Scenario, opts Options) (*Sim, error) {
	if opts.Until == 0 {
		opts.Until = sc.Duration.D()
	}
	if opts.Epoch.IsZero() {
		opts.Epoch = time.Now().Add(-opts.Until)
	}
	s := &Sim{sc: sc, opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5bd1e995)),
		svcByName: map[string]*service{}, depByName: map[string]*dependency{}, reg: newRegistry()}
	s.levers = newEventLevers(opts.Levers, opts.Events)
	s.buildDependencies()
	if err := s.buildServices(); err != nil {
		return nil, err
	}
	s.edge = s.svcByName[sc.Edge.Service]
	s.refreshLevers()
	for _, svc := range s.services {
		for i := 0; i < svc.spec.Replicas; i++ {
			s.warm(s.addPod(svc, 0))
		}
		if a := svc.spec.Autoscaler; a != nil {
			s.schedule(a.Interval.D(), evAutoscale, ref{id: int32(svc.idx)})
		}
	}
	for i, r := range sc.Restarts {
		s.schedule(r.At.D(), evRestart, ref{id: int32(i)})
	}
	s.stats = newStats(s)
	s.sampled = -1
	s.schedule(0, evTick, ref{})
	s.schedule(s.interarrival(), evArrival, ref{})
	return s, nil
}

func (s *Sim) schedule(at time.Duration, k evKind, r ref) {
	s.seq++
	s.heap.push(event{at: at, seq: s.seq, kind: k, ref: r})
}

func (s *Sim) interarrival() time.Duration {
	return time.Duration(s.rng.ExpFloat64() / s.sc.Edge.RPS * float64(time.Second))
}

// wall returns the wall time of simulated time t.
func (s *Sim) wall(t time.Duration) time.Time { return s.opts.Epoch.Add(t) }

// Run simulates until Options.Until, the context ends, or a sample cannot
// be stored.
func (s *Sim) Run(ctx context.Context) error { return s.RunTo(ctx, s.opts.Until) }

// RunTo simulates up to simulated time t (at most Options.Until) and
// returns, so a caller can act at t (query the lab, pull a lever) and
// continue with another RunTo. Paced runs keep their pace across calls:
// time spent between calls is caught up, not added.
func (s *Sim) RunTo(ctx context.Context, t time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t = min(t, s.opts.Until)
	if s.started.IsZero() {
		s.started = s.opts.Start
		if s.started.IsZero() {
			s.started = time.Now()
		}
	}
	for n := 0; len(s.heap) > 0; n++ {
		e := s.heap[0]
		if e.at > t {
			break
		}
		if s.opts.Speed > 0 {
			if err := s.pace(ctx, e.at); err != nil {
				return err
			}
		}
		if n&1023 == 0 || s.opts.Speed > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		s.heap.pop()
		s.now = e.at
		s.clock.Store(int64(e.at))
		s.dispatch(e)
		if s.err != nil {
			return s.err
		}
	}
	s.now = max(s.now, t)
	s.clock.Store(int64(s.now))
	return nil
}

// pace waits, unlocked, until the wall time of simulated time at.
func (s *Sim) pace(ctx context.Context, at time.Duration) error {
	wait := time.Until(s.started.Add(time.Duration(float64(at) / s.opts.Speed)))
	if wait <= 0 {
		return nil
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Sim) dispatch(e event) {
	switch e.kind {
	case evArrival:
		s.arrive(s.edge, ref{id: -1}, ref{id: -1}, s.edgeDeadline())
		s.schedule(s.now+s.interarrival(), evArrival, ref{})
	case evWorkDone:
		if r := s.reqs.get(e.ref); r != nil {
			s.nextCall(e.ref, r)
		}
	case evPoolTimeout:
		if r := s.reqs.get(e.ref); r != nil && r.waiting {
			r.waiting = false
			r.pod.pools[r.ep.pool].waiting--
			s.respond(e.ref, r, 503)
		}
	case evDeadline:
		if r := s.reqs.get(e.ref); r != nil && !r.answered {
			s.answerEdge(r, 504)
		}
	case evTimeout:
		s.attemptTimeout(e.ref)
	case evBackoff:
		if f := s.frames.get(e.ref); f != nil {
			s.attempt(e.ref)
		}
	case evJobDone:
		s.jobDone(e.ref)
	case evTick:
		s.tick()
		s.schedule(s.now+s.sc.ScrapeInterval.D(), evTick, ref{})
	case evAutoscale:
		s.autoscale(s.services[e.ref.id])
	case evPodReady:
		p := s.services[e.ref.id].pods[e.ref.gen]
		p.ready = true
	case evRestart:
		s.restart(s.sc.Restarts[e.ref.id])
	}
}

func (s *Sim) edgeDeadline() time.Duration {
	if d := s.sc.Edge.Deadline.D(); d > 0 {
		return s.now + d
	}
	return 0
}

// tick samples the metrics, applies faults and levers, and feeds the
// autoscaler and the summary, once per scrape interval.
func (s *Sim) tick() {
	for _, d := range s.deps {
		s.applyFaults(d)
	}
	s.refreshLevers()
	s.gauges()
	s.sampleUtilisation()
	s.stats.sample()
	s.track.sample(s)
	s.reg.snapshot()
	s.sampled = s.now
	if s.opts.Store == nil {
		return
	}
	app := s.opts.Store.Appender(context.Background())
	if err := s.reg.appendTo(app, s.wall(s.now).UnixMilli()); err != nil {
		app.Rollback()
		s.err = fmt.Errorf("lab: storing samples: %w", err)
		return
	}
	if err := app.Commit(); err != nil {
		s.err = fmt.Errorf("lab: storing samples: %w", err)
	}
}

// WriteMetrics writes the last sample of every series in the Prometheus
// text format, for a real Prometheus to scrape: the values the lab stored
// at its last scrape interval, stamped with that interval's time, so a
// scraper holds the same samples as the lab's own store (at most one per
// interval it scrapes), whatever the phase of its scrapes and even when the
// simulation runs behind the wall clock. Before the first interval it
// writes no samples.
func (s *Sim) WriteMetrics(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sampled < 0 {
		return s.reg.writeText(w, -1)
	}
	return s.reg.writeText(w, s.wall(s.sampled).UnixMilli())
}

// RefreshLevers reads every lever now, rather than at the next scrape
// interval: a lever pulled at a chosen simulated time takes effect then.
func (s *Sim) RefreshLevers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLevers()
}

// Until is the simulated time the run ends at.
func (s *Sim) Until() time.Duration { return s.opts.Until }

// Now returns the simulated time reached; it never waits for the run.
func (s *Sim) Now() time.Duration { return time.Duration(s.clock.Load()) }

// EdgeService names the service receiving the edge traffic.
func (s *Sim) EdgeService() string { return s.sc.Edge.Service }

// Scenario returns the scenario being run.
func (s *Sim) Scenario() *Scenario { return s.sc }
