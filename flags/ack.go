package flags

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormctl/stormctl/controlplane"
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

// SeenBy reports, for every lever in the index of keys, how many live
// provider instances have applied its current version (the versions hash),
// and how many instances are live (their acknowledgements have not
// expired). `stormctl status` prints it as "seen by N/live".
func SeenBy(ctx context.Context, client redis.UniversalClient, keys controlplane.Keys) (map[string]int, int, error) {
	pipe := client.Pipeline()
	index := pipe.ZRange(ctx, keys.Index(), 0, -1)
	instances := pipe.ZRange(ctx, keys.Instances(), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("read lever index and instances: %w", err)
	}
	members, ids := index.Val(), instances.Val()
	if len(members) == 0 && len(ids) == 0 {
		return map[string]int{}, 0, nil
	}
	pipe = client.Pipeline()
	var versions *redis.SliceCmd
	if len(members) > 0 {
		versions = pipe.HMGet(ctx, keys.Versions(), members...)
	}
	fields := append([]string{seenField}, members...)
	acks := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		acks[i] = pipe.HMGet(ctx, keys.Ack(id), fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("read acknowledgements: %w", err)
	}
	current := make([]int64, len(members))
	seen := make(map[string]int, len(members))
	for i, m := range members {
		if v, ok := intOf(versions.Val()[i]); ok {
			current[i], seen[m] = v, 0
		}
	}
	live := 0
	for _, a := range acks {
		vals := a.Val()
		if vals[0] == nil {
			continue
		}
		live++
		for i, m := range members {
			if _, tracked := seen[m]; !tracked {
				continue
			}
			if v, ok := intOf(vals[i+1]); ok && v >= current[i] {
				seen[m]++
			}
		}
	}
	return seen, live, nil
}

func intOf(x any) (int64, bool) {
	s, ok := x.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
