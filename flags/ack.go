package flags

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// seenField is the ack hash field holding the instance's last heartbeat, so
// the hash exists (and expires) even before any lever was applied. Members
// always contain a colon, so it cannot collide with one.
const seenField = "_seen"

// ackTTL is how long acknowledgements outlive the last heartbeat.
func (p *Provider) ackTTL() time.Duration { return 3 * p.opts.heartbeat }

// beat announces the instance and rewrites its acknowledgements: the version
// of every lever it has applied (including releases), in one transaction.
// Instances silent for ten ack lifetimes (at least a minute) are pruned from
// the instance set; readers decide liveness by the ack hash alone.
func (p *Provider) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	now := p.opts.now()
	fields := []any{seenField, now.UnixMilli()}
	p.mu.Lock()
	for m, v := range p.track.versions {
		fields = append(fields, m, v)
	}
	p.mu.Unlock()
	k, id := p.opts.keys, p.opts.instance
	prune := max(10*p.ackTTL(), time.Minute)
	_, err := p.client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZAdd(ctx, k.Instances(), redis.Z{Score: float64(now.UnixMilli()), Member: id})
		pipe.ZRemRangeByScore(ctx, k.Instances(), "-inf", "("+strconv.FormatInt(now.Add(-prune).UnixMilli(), 10))
		pipe.Del(ctx, k.Ack(id))
		pipe.HSet(ctx, k.Ack(id), fields...)
		pipe.PExpire(ctx, k.Ack(id), p.ackTTL())
		return nil
	})
	return err
}

// deregister withdraws the instance on a clean shutdown.
func (p *Provider) deregister(ctx context.Context) error {
	k, id := p.opts.keys, p.opts.instance
	_, err := p.client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZRem(ctx, k.Instances(), id)
		pipe.Del(ctx, k.Ack(id))
		return nil
	})
	return err
}
