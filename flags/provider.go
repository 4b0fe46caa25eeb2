package flags

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// ReasonStale marks a value served from the last snapshot, or a fail-safe
// value, while Redis has been unreachable past the stale grace period.
const ReasonStale openfeature.Reason = "STALE"

// Evaluation context attributes that select a lever.
const (
	AttrService    = "service"
	AttrDependency = "dependency"
)

// Variants reported when no lever value decided the flag.
const (
	VariantAbsent   = "absent"
	VariantFailSafe = "fail-safe"
)

// Freshness of the snapshot, read on every evaluation.
const (
	modeLive   int32 = iota // connected: TARGETING_MATCH / DEFAULT
	modeCached              // connection lost within the stale grace: CACHED
	modeStale               // lost past the grace: STALE, fail-safes apply
)

// Provider is an OpenFeature provider serving stormctl's levers from Redis:
// a snapshot in memory kept current by pub/sub and a jittered full resync.
type Provider struct {
	client   redis.UniversalClient
	opts     options
	failSafe []*lever.Value
	optErr   error

	snap atomic.Pointer[snapshot]
	mode atomic.Int32

	mu    sync.Mutex // guards track; serialises snapshot writers
	track *tracker

	hmu       sync.Mutex // guards downSince, announced
	downSince time.Time
	announced openfeature.State

	evMu   sync.Mutex
	events chan openfeature.Event

	lifeMu sync.Mutex
	run    *run
}

var (
	_ openfeature.FeatureProvider          = (*Provider)(nil)
	_ openfeature.StateHandler             = (*Provider)(nil)
	_ openfeature.ContextAwareStateHandler = (*Provider)(nil)
	_ openfeature.EventHandler             = (*Provider)(nil)
)

// NewProvider returns a provider reading levers through client. It does not
// touch Redis until Init (the OpenFeature SDK calls it on SetProvider).
func NewProvider(client redis.UniversalClient, opts ...Option) *Provider {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	p := &Provider{client: client, opts: o, events: make(chan openfeature.Event, 64)}
	p.failSafe, p.optErr = o.failSafes()
	p.reset()
	return p
}

func (p *Provider) reset() {
	p.mu.Lock()
	p.track = newTracker()
	p.snap.Store(p.track.snap)
	p.mu.Unlock()
	p.mode.Store(modeLive)
	p.hmu.Lock()
	p.downSince, p.announced = time.Time{}, openfeature.NotReadyState
	p.hmu.Unlock()
}

// InstanceID is the id under which this instance acknowledges levers.
func (p *Provider) InstanceID() string { return p.opts.instance }

// Metadata names the provider.
func (p *Provider) Metadata() openfeature.Metadata {
	return openfeature.Metadata{Name: "stormctl"}
}

// Hooks returns no hooks.
func (p *Provider) Hooks() []openfeature.Hook { return nil }

// BooleanEvaluation resolves a bool flag of lever.Table.
func (p *Provider) BooleanEvaluation(_ context.Context, flag string, def bool, fc openfeature.FlattenedContext) openfeature.BoolResolutionDetail {
	return resolveAs(p, flag, lever.Bool, def, fc, func(v lever.Value) bool { return v.Bool })
}

// IntEvaluation resolves an int flag of lever.Table.
func (p *Provider) IntEvaluation(_ context.Context, flag string, def int64, fc openfeature.FlattenedContext) openfeature.IntResolutionDetail {
	return resolveAs(p, flag, lever.Int, def, fc, func(v lever.Value) int64 { return v.Int })
}

// StringEvaluation resolves a string flag of lever.Table.
func (p *Provider) StringEvaluation(_ context.Context, flag string, def string, fc openfeature.FlattenedContext) openfeature.StringResolutionDetail {
	return resolveAs(p, flag, lever.String, def, fc, func(v lever.Value) string { return v.String })
}

// FloatEvaluation fails: the contract has no float flag.
func (p *Provider) FloatEvaluation(_ context.Context, flag string, def float64, fc openfeature.FlattenedContext) openfeature.FloatResolutionDetail {
	return resolveAs(p, flag, "float", def, fc, func(lever.Value) float64 { return def })
}

// ObjectEvaluation fails: the contract has no object flag.
func (p *Provider) ObjectEvaluation(_ context.Context, flag string, def any, fc openfeature.FlattenedContext) openfeature.InterfaceResolutionDetail {
	return resolveAs(p, flag, "object", def, fc, func(lever.Value) any { return def })
}

func resolveAs[T any](p *Provider, flag string, t lever.Type, def T, fc openfeature.FlattenedContext, get func(lever.Value) T) openfeature.GenericResolutionDetail[T] {
	v, ok, d := p.resolve(flag, t, fc)
	if ok {
		def = get(v)
	}
	return openfeature.GenericResolutionDetail[T]{Value: def, ProviderResolutionDetail: d}
}

var failSafeMeta = openfeature.FlagMetadata{"failsafe": true}

// resolve evaluates flag from the snapshot; ok is false when the caller's
// default value applies.
func (p *Provider) resolve(key string, t lever.Type, fc openfeature.FlattenedContext) (v lever.Value, ok bool, d openfeature.ProviderResolutionDetail) {
	f, found := lever.Lookup(key)
	if !found {
		return v, false, failed(openfeature.NewFlagNotFoundResolutionError("unknown flag " + key))
	}
	if f.Type != t {
		return v, false, failed(openfeature.NewTypeMismatchResolutionError(fmt.Sprintf("flag %s is a %s, not a %s", key, f.Type, t)))
	}
	service, okS := attr(fc, AttrService)
	dependency, okD := attr(fc, AttrDependency)
	if !okS || !okD {
		return v, false, failed(openfeature.NewInvalidContextResolutionError("attributes service and dependency must be strings"))
	}
	snap, mode := p.snap.Load(), p.mode.Load()
	if mode == modeStale || !snap.synced {
		if fs := p.failSafe[f.Index]; fs != nil {
			return *fs, true, openfeature.ProviderResolutionDetail{Reason: ReasonStale, Variant: VariantFailSafe, FlagMetadata: failSafeMeta}
		}
		if !snap.synced {
			return v, false, failed(openfeature.NewProviderNotReadyResolutionError("no lever snapshot yet: Redis has not been reached"))
		}
	}
	matched, absent := openfeature.TargetingMatchReason, openfeature.DefaultReason
	switch mode {
	case modeCached:
		matched, absent = openfeature.CachedReason, openfeature.CachedReason
	case modeStale:
		matched, absent = ReasonStale, ReasonStale
	}
	e := snap.match(f.Kind, service, dependency, p.opts.now())
	if e == nil {
		d = openfeature.ProviderResolutionDetail{Reason: absent, Variant: VariantAbsent}
		av, ok := f.AbsentValue()
		return av, ok, d
	}
	if err := e.errs[f.Index]; err != nil {
		d = failed(openfeature.NewParseErrorResolutionError(err.Error()))
		d.FlagMetadata = e.meta
		return v, false, d
	}
	return e.values[f.Index], true, openfeature.ProviderResolutionDetail{Reason: matched, Variant: e.variant, FlagMetadata: e.meta}
}

func failed(err openfeature.ResolutionError) openfeature.ProviderResolutionDetail {
	return openfeature.ProviderResolutionDetail{ResolutionError: err, Reason: openfeature.ErrorReason}
}

// attr reads a string attribute; absent is fine, another type is not.
func attr(fc openfeature.FlattenedContext, name string) (string, bool) {
	x, present := fc[name]
	if !present || x == nil {
		return "", true
	}
	s, ok := x.(string)
	return s, ok
}
