package flags

import (
	"context"
	"maps"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// Acknowledge announces one reader instance (a provider, a flagd client, an
// actuator) and rewrites what it has applied — the version of every lever
// member it applied, releases included — in one transaction, so that
// `stormctl status` counts it in "seen by N/M". The acknowledgements expire
// after ttl unless the instance acknowledges again; instances silent for ten
// lifetimes (at least a minute) are pruned from the instance set, since
// readers decide liveness by the ack hash alone.
func Acknowledge(ctx context.Context, c redis.Cmdable, keys lever.Keys, instance string, applied map[string]int64, ttl time.Duration, now time.Time) error {
	fields := make([]any, 0, 2+2*len(applied))
	fields = append(fields, lever.AckSeenField, now.UnixMilli())
	for m, v := range applied {
		fields = append(fields, m, v)
	}
	prune := max(10*ttl, time.Minute)
	_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZAdd(ctx, keys.Instances(), redis.Z{Score: float64(now.UnixMilli()), Member: instance})
		pipe.ZRemRangeByScore(ctx, keys.Instances(), "-inf", "("+strconv.FormatInt(now.Add(-prune).UnixMilli(), 10))
		pipe.Del(ctx, keys.Ack(instance))
		pipe.HSet(ctx, keys.Ack(instance), fields...)
		pipe.PExpire(ctx, keys.Ack(instance), ttl)
		return nil
	})
	return err
}

// Withdraw removes an instance and its acknowledgements, on a clean
// shutdown; a crashed instance's acknowledgements expire instead.
func Withdraw(ctx context.Context, c redis.Cmdable, keys lever.Keys, instance string) error {
	_, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZRem(ctx, keys.Instances(), instance)
		pipe.Del(ctx, keys.Ack(instance))
		return nil
	})
	return err
}

// ackTTL is how long acknowledgements outlive the last heartbeat.
func (p *Provider) ackTTL() time.Duration { return 3 * p.opts.heartbeat }

// beat announces the instance and rewrites its acknowledgements.
func (p *Provider) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opTimeout())
	defer cancel()
	p.mu.Lock()
	applied := maps.Clone(p.track.versions)
	p.mu.Unlock()
	return Acknowledge(ctx, p.client, p.opts.keys, p.opts.instance, applied, p.ackTTL(), p.opts.now())
}

// deregister withdraws the instance on a clean shutdown.
func (p *Provider) deregister(ctx context.Context) error {
	return Withdraw(ctx, p.client, p.opts.keys, p.opts.instance)
}
