package flags

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// backoff is capped exponential backoff with full jitter.
type backoff struct {
	base, limit time.Duration
	n           int
}

func (b *backoff) next() time.Duration {
	d := b.base << min(b.n, 16)
	if d > b.limit || d <= 0 {
		d = b.limit
	}
	b.n++
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func (b *backoff) reset() { b.n = 0 }

// jitter spreads d over ±20% so a fleet does not act in lockstep.
func jitter(d time.Duration) time.Duration {
	return d*4/5 + time.Duration(rand.Int64N(int64(d)*2/5+1))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// opTimeout bounds one round trip of a resync or a heartbeat.
func (p *Provider) opTimeout() time.Duration {
	return min(max(p.opts.staleAfter, 250*time.Millisecond), 5*time.Second)
}

// subscribe reads the change feed. The server confirms every (re)subscription,
// and each confirmation asks for a resync, which repairs whatever was
// published while the connection was down. An idle connection is pinged; one
// that stays silent is replaced, since a half-open TCP connection would
// otherwise never report an error.
func (p *Provider) subscribe(r *run) {
	defer r.wg.Done()
	idle := max(p.opts.staleAfter/2, 50*time.Millisecond)
	bo := backoff{base: 20 * time.Millisecond, limit: time.Second}
	pinged := false
	for {
		r.psMu.Lock()
		ps := r.ps
		r.psMu.Unlock()
		msg, err := ps.ReceiveTimeout(r.ctx, idle)
		if r.ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if err = ps.Ping(r.ctx); err == nil {
					continue
				}
			}
			r.subscribed.Store(false)
			p.fail(r, fmt.Errorf("change feed: %w", err))
			if pinged {
				p.resubscribe(r)
			}
			pinged = false
			if !sleep(r.ctx, bo.next()) {
				return
			}
			continue
		}
		pinged = false
		bo.reset()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				r.subscribed.Store(true)
				poke(r.resyncNow)
			}
		case *redis.Message:
			p.onChange(r, m.Payload)
		}
	}
}

func (p *Provider) resubscribe(r *run) {
	r.psMu.Lock()
	defer r.psMu.Unlock()
	if r.ctx.Err() != nil {
		return
	}
	_ = r.ps.Close()
	r.ps = p.client.Subscribe(r.ctx, p.opts.keys.Changes())
}

// onChange applies one pushed change at once; a message it cannot use asks
// for a resync instead.
func (p *Provider) onChange(r *run, payload string) {
	var c lever.Change
	err := json.Unmarshal([]byte(payload), &c)
	if err == nil && c.Op == lever.OpSet && (c.Lever == nil || c.Lever.Kind != c.Kind || c.Lever.Target != c.Target) {
		err = errors.New("set change without its lever")
	}
	if err != nil {
		p.opts.log.Warn("stormctl flags: unusable change message, resyncing", "err", err)
		poke(r.resyncNow)
		return
	}
	p.mu.Lock()
	ok := p.track.applyChange(c)
	p.snap.Store(p.track.snap)
	p.mu.Unlock()
	if ok {
		p.emitChanged([]string{lever.Member(c.Kind, c.Target)})
		r.changed()
	}
}

// maintain runs the resyncs: after every (re)subscription, on a jittered
// interval, and with backoff while they fail.
func (p *Provider) maintain(r *run) {
	defer r.wg.Done()
	bo := backoff{base: 100 * time.Millisecond, limit: min(2*time.Second, p.opts.resync)}
	resync := time.NewTimer(bo.next())
	defer resync.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.resyncNow:
		case <-resync.C:
		}
		resync.Reset(p.doResync(r, &bo))
	}
}

// heartbeat announces the instance and rewrites its acknowledgements on
// every beat and after every change.
func (p *Provider) heartbeat(r *run) {
	defer r.wg.Done()
	tick := time.NewTicker(p.opts.heartbeat)
	defer tick.Stop()
	ok := true
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		case <-r.acks:
		}
		err := p.beat(r.ctx)
		if err != nil && ok && r.ctx.Err() == nil {
			p.opts.log.Warn("stormctl flags: heartbeat failed", "err", err)
		}
		ok = err == nil
	}
}

// watch runs the timers that need no Redis call, lever expiry and health
// transitions, so that neither waits behind a slow one.
func (p *Provider) watch(r *run) {
	defer r.wg.Done()
	expiry := time.NewTimer(p.untilExpiry())
	health := time.NewTimer(time.Hour)
	defer func() { expiry.Stop(); health.Stop() }()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-expiry.C:
			p.expire()
		case <-health.C:
		case <-r.wake:
		}
		if next := p.checkHealth(); !next.IsZero() {
			health.Reset(time.Until(next))
		}
		expiry.Reset(p.untilExpiry())
	}
}

// changed tells the other loops that the snapshot changed.
func (r *run) changed() {
	poke(r.acks)
	poke(r.wake)
}

// doResync runs one resync and returns when to run the next.
func (p *Provider) doResync(r *run, bo *backoff) time.Duration {
	if err := p.resync(r.ctx); err != nil {
		if r.ctx.Err() == nil {
			p.fail(r, fmt.Errorf("resync: %w", err))
		}
		return bo.next()
	}
	r.changed()
	if p.opts.push && !r.subscribed.Load() {
		// Poll while the change feed is down; the subscription's
		// confirmation triggers the resync that makes the provider live.
		return bo.next()
	}
	bo.reset()
	p.up(r)
	return jitter(p.opts.resync)
}

// resync reads the whole index and every lever in two round trips and
// replaces the snapshot, keeping pushes that raced the read.
func (p *Provider) resync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	p.mu.Lock()
	since := p.track.seq
	p.mu.Unlock()
	k := p.opts.keys
	members, err := p.client.ZRange(ctx, k.Index(), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("read lever index: %w", err)
	}
	read := make([]fetched, len(members))
	if len(members) > 0 {
		leverKeys := make([]string, len(members))
		for i, m := range members {
			kind, target, err := lever.ParseMember(m)
			if err != nil {
				return fmt.Errorf("lever index: %w", err)
			}
			leverKeys[i] = k.Lever(kind, target)
		}
		pipe := p.client.Pipeline()
		levers := pipe.MGet(ctx, leverKeys...)
		versions := pipe.HMGet(ctx, k.Versions(), members...)
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("read levers: %w", err)
		}
		for i, m := range members {
			read[i].member = m
			if s, ok := versions.Val()[i].(string); ok {
				read[i].version, _ = strconv.ParseInt(s, 10, 64)
			}
			if s, ok := levers.Val()[i].(string); ok {
				if read[i].lever, err = decodeLever(m, s); err != nil {
					p.opts.log.Warn("stormctl flags: ignoring malformed lever", "member", m, "err", err)
				}
			}
		}
	}
	p.mu.Lock()
	wasSynced := p.track.snap.synced
	changed := p.track.applySync(read, since)
	p.snap.Store(p.track.snap)
	p.mu.Unlock()
	if wasSynced {
		p.emitChanged(changed)
	}
	return nil
}

// untilExpiry is the wait until the next lever expires (an hour if none).
func (p *Provider) untilExpiry() time.Duration {
	next := p.snap.Load().nextExpiry()
	if next.IsZero() {
		return time.Hour
	}
	return max(next.Sub(p.opts.now()), 0)
}

// expire drops expired levers from the snapshot and announces the change.
// Evaluations already treat them as absent: this only tells listeners.
func (p *Provider) expire() {
	p.mu.Lock()
	changed := p.track.dropExpired(p.opts.now())
	p.snap.Store(p.track.snap)
	p.mu.Unlock()
	p.emitChanged(changed)
}
