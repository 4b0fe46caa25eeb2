package flags

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-feature/go-sdk/openfeature"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// run is one Init…Shutdown lifetime of the background goroutines.
type run struct {
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	resyncNow  chan struct{} // a resync is needed (subscribed, bad message)
	acks       chan struct{} // the applied versions changed: write them
	wake       chan struct{} // health or snapshot changed: rearm the timers
	synced     chan struct{} // closed on the first sync while subscribed
	syncedOnce sync.Once
	subscribed atomic.Bool

	psMu sync.Mutex
	ps   *redis.PubSub
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Init starts the provider and waits for the first full sync, at most the
// ErrorAfter period.
func (p *Provider) Init(openfeature.EvaluationContext) error {
	return p.InitWithContext(context.Background(), openfeature.EvaluationContext{})
}

// InitWithContext subscribes to the change feed, reads every lever and
// returns once both are done (the SDK then emits PROVIDER_READY), or when ctx
// ends or the ErrorAfter period passes. On failure the provider keeps
// trying in the background and emits PROVIDER_READY when it succeeds;
// Shutdown stops it either way.
func (p *Provider) InitWithContext(ctx context.Context, _ openfeature.EvaluationContext) error {
	if p.optErr != nil {
		return &openfeature.ProviderInitError{ErrorCode: openfeature.ProviderFatalCode, Message: p.optErr.Error()}
	}
	p.lifeMu.Lock()
	if p.run != nil {
		p.lifeMu.Unlock()
		return nil
	}
	p.reset()
	r := &run{
		resyncNow: make(chan struct{}, 1),
		acks:      make(chan struct{}, 1),
		wake:      make(chan struct{}, 1),
		synced:    make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	p.run = r
	if p.opts.push {
		r.ps = p.client.Subscribe(r.ctx, p.opts.keys.Changes())
		r.wg.Add(1)
		go p.subscribe(r)
	}
	r.wg.Add(3)
	go p.maintain(r)
	go p.heartbeat(r)
	go p.watch(r)
	p.lifeMu.Unlock()

	timer := time.NewTimer(p.opts.errorAfter)
	defer timer.Stop()
	var cause error
	select {
	case <-r.synced:
	case <-ctx.Done():
		cause = ctx.Err()
	case <-r.ctx.Done():
		cause = errors.New("provider shut down")
	case <-timer.C:
		cause = fmt.Errorf("no sync within %s", p.opts.errorAfter)
	}
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if p.announced == openfeature.ReadyState {
		return nil
	}
	p.announced = openfeature.ErrorState
	return fmt.Errorf("stormctl flags: first sync with Redis: %w", cause)
}

// Shutdown stops every goroutine of the provider and withdraws its
// acknowledgements.
func (p *Provider) Shutdown() { _ = p.ShutdownWithContext(context.Background()) }

// ShutdownWithContext is Shutdown with the final Redis writes bounded by ctx
// (by the StaleAfter period, at most 5s, when ctx has no deadline).
func (p *Provider) ShutdownWithContext(ctx context.Context) error {
	p.lifeMu.Lock()
	r := p.run
	p.run = nil
	p.lifeMu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	r.psMu.Lock()
	if r.ps != nil {
		_ = r.ps.Close()
	}
	r.psMu.Unlock()
	r.wg.Wait()
	p.hmu.Lock()
	p.announced = openfeature.NotReadyState
	p.hmu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opTimeout())
		defer cancel()
	}
	if err := p.deregister(ctx); err != nil {
		return fmt.Errorf("stormctl flags: withdraw acknowledgements: %w", err)
	}
	return nil
}

// EventChannel carries the provider's events to the OpenFeature SDK.
func (p *Provider) EventChannel() <-chan openfeature.Event { return p.events }

// emit never blocks: when nobody reads the channel the oldest event is
// dropped, so the newest state always gets through.
func (p *Provider) emit(t openfeature.EventType, d openfeature.ProviderEventDetails) {
	ev := openfeature.Event{ProviderName: p.Metadata().Name, EventType: t, ProviderEventDetails: d}
	p.evMu.Lock()
	defer p.evMu.Unlock()
	for {
		select {
		case p.events <- ev:
			return
		default:
		}
		select {
		case <-p.events:
		default:
		}
	}
}

// emitChanged announces CONFIGURATION_CHANGED for the levers members, with
// the keys of the flags that read them.
func (p *Provider) emitChanged(members []string) {
	if len(members) == 0 {
		return
	}
	var keys []string
	for _, m := range members {
		if kind, _, err := lever.ParseMember(m); err == nil {
			keys = append(keys, lever.KeysOf(kind)...)
		}
	}
	slices.Sort(keys)
	slices.Sort(members)
	p.emit(openfeature.ProviderConfigChange, openfeature.ProviderEventDetails{
		Message:       "levers changed",
		FlagChanges:   slices.Compact(keys),
		EventMetadata: map[string]any{"levers": strings.Join(members, ",")},
	})
}

// fail records that Redis could not be reached; the provider turns CACHED
// at once, STALE and ERROR after the grace periods.
func (p *Provider) fail(r *run, err error) {
	p.hmu.Lock()
	if p.downSince.IsZero() {
		p.downSince = time.Now()
		p.mode.Store(modeCached)
		p.opts.log.Warn("stormctl flags: Redis unreachable, serving the last snapshot", "err", err)
	}
	p.hmu.Unlock()
	poke(r.wake)
}

// up records a full sync while subscribed: the snapshot is live again.
func (p *Provider) up(r *run) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if !p.downSince.IsZero() {
		p.opts.log.Info("stormctl flags: Redis reachable again, snapshot resynced")
	}
	p.downSince = time.Time{}
	p.mode.Store(modeLive)
	switch p.announced {
	case openfeature.StaleState, openfeature.ErrorState:
		p.emit(openfeature.ProviderReady, openfeature.ProviderEventDetails{Message: "Redis reachable again, levers resynced"})
	}
	p.announced = openfeature.ReadyState
	r.syncedOnce.Do(func() { close(r.synced) })
}

// checkHealth emits STALE and ERROR when their grace periods have passed and
// returns when to check again (zero: nothing pending).
func (p *Provider) checkHealth() time.Time {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	if p.downSince.IsZero() {
		return time.Time{}
	}
	stale, failed := p.downSince.Add(p.opts.staleAfter), p.downSince.Add(p.opts.errorAfter)
	now := time.Now()
	if !now.Before(stale) {
		p.mode.Store(modeStale)
		if p.announced == openfeature.ReadyState {
			p.announced = openfeature.StaleState
			p.emit(openfeature.ProviderStale, openfeature.ProviderEventDetails{
				Message: fmt.Sprintf("Redis unreachable for %s: serving the last snapshot", p.opts.staleAfter)})
		}
	}
	if !now.Before(failed) && p.announced == openfeature.StaleState {
		p.announced = openfeature.ErrorState
		p.emit(openfeature.ProviderError, openfeature.ProviderEventDetails{
			Message:   fmt.Sprintf("Redis unreachable for %s", p.opts.errorAfter),
			ErrorCode: openfeature.GeneralCode})
	}
	switch {
	case now.Before(stale):
		return stale
	case now.Before(failed):
		return failed
	}
	return time.Time{}
}
