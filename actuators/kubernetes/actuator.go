package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/lever"
)

// Component is the actuator's name in `stormctl status` and "seen by".
const Component = "actuator:kubernetes"

// Options configure an Actuator.
type Options struct {
	Mapping Mapping
	Store   *controlplane.Store
	// Client reads from the informer cache and writes to the API server;
	// APIReader reads the API server directly, after a write conflict.
	Client    client.Client
	APIReader client.Reader
	// Mapper says which kinds the cluster serves.
	Mapper meta.RESTMapper
	// Cache, if set, gets an informer for each served kind (WatchKinds).
	Cache cache.Informers
	// Instance identifies this replica in acknowledgements and the status.
	Instance string
	// Actor is the journal actor of its entries.
	Actor string
	// Resync is the period of full passes besides the change feed (30s).
	Resync time.Duration
	// Concurrency bounds the writes in flight (8).
	Concurrency int
	Log         *slog.Logger
	Metrics     *Metrics
}

// Actuator applies the levers in the control plane to the cluster's
// objects. Every pass is level-triggered — the wanted state is computed
// from the live levers and the objects' annotations — so a pass after a
// crash, a missed change or an expiry while stopped converges.
type Actuator struct {
	opts      Options
	poke      chan struct{}
	ready     chan struct{}
	readyOnce sync.Once

	mu      sync.Mutex
	kinds   map[schema.GroupVersionKind]kindState
	written map[string]written // object UID → our last write, until the cache has it
	seen    map[string]bool    // journaled failures and conflicts, so each is journaled once
	applied map[string]int64   // lever member → version applied in full
	state   passState
	term    term
}

// term is this replica's current leadership, for /readyz.
type term struct {
	leading bool
	passed  bool  // a pass completed since it began to lead
	lastErr error // the last pass's error, if it failed
}

// written is an object as the actuator last wrote it, and the resource
// version it was written over.
type written struct {
	fromRV string
	obj    *unstructured.Unstructured
}

// New returns an actuator; Start runs it.
func New(o Options) *Actuator {
	if o.Resync <= 0 {
		o.Resync = 30 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Actor == "" {
		o.Actor = "stormctl-actuator-kubernetes"
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	return &Actuator{opts: o, poke: make(chan struct{}, 1), ready: make(chan struct{}),
		kinds:   map[schema.GroupVersionKind]kindState{},
		written: map[string]written{}, seen: map[string]bool{}, applied: map[string]int64{}}
}

// Poke asks for a pass soon; pokes while one is pending coalesce, so a burst
// of changes costs one pass.
func (a *Actuator) Poke() {
	select {
	case a.poke <- struct{}{}:
	default:
	}
}

// Ready is closed once the first pass (of any term) has completed.
func (a *Actuator) Ready() <-chan struct{} { return a.ready }

// list reads every object of the served kinds in the namespace from the
// cache, preferring the actuator's own newer writes the cache has not seen.
func (a *Actuator) list(ctx context.Context, served availability) (objects, error) {
	objs := objects{}
	for _, gvk := range Kinds {
		if !served.ok(gvk) {
			continue
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := a.opts.Client.List(ctx, l, client.InNamespace(a.opts.Mapping.Namespace)); err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", resources[gvk], a.opts.Mapping.Namespace, err)
		}
		a.mu.Lock()
		for i := range l.Items {
			o := &l.Items[i]
			o.SetGroupVersionKind(gvk)
			if w, ok := a.written[string(o.GetUID())]; ok {
				if o.GetResourceVersion() == w.fromRV {
					o = w.obj.DeepCopy()
				} else {
					delete(a.written, string(o.GetUID()))
				}
			}
			objs[gvk] = append(objs[gvk], o)
		}
		a.mu.Unlock()
	}
	return objs, nil
}

// Pass runs one full reconciliation: read the levers, work out every
// object's wanted state, write the objects that differ (one patch each),
// journal what changed and report the outcome.
func (a *Actuator) Pass(ctx context.Context) (PassReport, error) {
	start := time.Now()
	levers, err := a.opts.Store.Levers(ctx)
	if err != nil {
		a.opts.Metrics.passes.WithLabelValues("error").Inc()
		return PassReport{}, fmt.Errorf("read levers: %w; nothing was changed in the cluster", err)
	}
	served, err := a.served()
	if err != nil {
		a.opts.Metrics.passes.WithLabelValues("error").Inc()
		return PassReport{}, fmt.Errorf("%w; nothing was changed in the cluster", err)
	}
	objs, err := a.list(ctx, served)
	if err != nil {
		a.opts.Metrics.passes.WithLabelValues("error").Inc()
		return PassReport{}, err
	}
	claims, index, failures := a.opts.Mapping.claims(levers, objs, served)
	// Objects the actuator changed earlier but no lever claims now are
	// restored: released, expired (even while the actuator was down), or
	// no longer mapped.
	for _, list := range objs {
		for _, o := range list {
			if _, ok := o.GetAnnotations()[SavedAnnotation]; ok && index[objectKey(o)] == nil {
				index[objectKey(o)] = o
			}
		}
	}
	rep := PassReport{Levers: len(levers)}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	for key, obj := range index {
		g.Go(func() error {
			out := a.converge(gctx, obj, claims[key])
			mu.Lock()
			rep.add(out)
			if len(out.failures) == 0 {
				rep.hold(obj, claims[key])
			}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	for _, f := range failures {
		rep.add(objectOutcome{failures: []failure{f}})
	}
	acted := map[string]bool{}
	for _, cs := range claims {
		for _, c := range cs {
			acted[lever.Member(c.lever.Kind, c.lever.Target)] = true
		}
	}
	a.record(ctx, levers, acted, &rep)
	a.opts.Metrics.passes.WithLabelValues("ok").Inc()
	a.opts.Metrics.passSeconds.Observe(time.Since(start).Seconds())
	return rep, nil
}

// Start follows the change feed and resyncs until ctx ends: one term of
// leadership (see elector); only the leader runs it.
func (a *Actuator) Start(ctx context.Context) error {
	a.setTerm(term{leading: true})
	defer a.setTerm(term{})
	changes, stop := a.opts.Store.Subscribe(ctx)
	defer stop()
	go func() {
		for range changes {
			a.Poke()
		}
	}()
	a.opts.Metrics.leader.Set(1)
	defer a.opts.Metrics.leader.Set(0)
	bo := newBackoff(10 * time.Second)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			a.withdraw()
			return nil
		case <-a.poke:
		case <-timer.C:
		}
		_, err := a.Pass(ctx)
		// Resyncs are spread by up to a fifth so replicas and restarts do
		// not align; failures back off exponentially with jitter.
		next := wait.Jitter(a.opts.Resync*5/6, 0.4)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			a.opts.Log.Warn("actuator pass failed", "err", err)
			a.mu.Lock()
			a.term.lastErr = err
			a.mu.Unlock()
			next = bo.Step()
		} else {
			a.mu.Lock()
			a.term.passed, a.term.lastErr = true, nil
			a.mu.Unlock()
			bo = newBackoff(10 * time.Second)
			a.readyOnce.Do(func() { close(a.ready) })
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

func (a *Actuator) setTerm(t term) {
	a.mu.Lock()
	a.term = t
	a.mu.Unlock()
}

// leaderProblem says why a leader has not completed a pass in its term
// (nil for a standby: it has nothing to do).
func (a *Actuator) leaderProblem() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !a.term.leading || a.term.passed:
		return nil
	case a.term.lastErr != nil:
		return fmt.Errorf("leader: no pass completed since it began to lead: %w", a.term.lastErr)
	}
	return errors.New("leader: first pass of its term not completed")
}
