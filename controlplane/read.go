package controlplane

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormctl/stormctl/lever"
)

// Get reads one lever (nil when absent), its version and the journal head
// in one round trip. Expired levers not yet journaled are reaped first,
// when the user may.
func (s *Store) Get(ctx context.Context, kind lever.Kind, target string) (*lever.Lever, int64, string, error) {
	snap, err := s.Snapshot(ctx, SnapshotRequest{Kind: kind, Targets: []string{target}})
	if err != nil {
		return nil, 0, "", err
	}
	lr := snap.Levers[target]
	return lr.Lever, lr.Version, snap.Head, nil
}

// Levers returns every active lever, sorted by kind then target.
func (s *Store) Levers(ctx context.Context) ([]lever.Lever, error) {
	k := s.keys
	var members []string
	for reaped := false; ; reaped = true {
		pipe := s.client.Pipeline()
		due := s.dueCheck(ctx, pipe)
		all := pipe.ZRange(ctx, k.Index(), 0, -1)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, s.classify("list levers", err, false)
		}
		if !reaped && len(due.Val()) > 0 && s.reapQuietly(ctx) {
			continue
		}
		members = all.Val()
		break
	}
	if len(members) == 0 {
		return nil, nil
	}
	keys := make([]string, len(members))
	for i, m := range members {
		kind, target, _ := lever.ParseMember(m)
		keys[i] = k.Lever(kind, target)
	}
	vals, err := s.client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, s.classify("list levers", err, false)
	}
	levers := make([]lever.Lever, 0, len(vals))
	now := time.Now()
	for _, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired between the two reads
		}
		var l lever.Lever
		// Absent from expires_at on, even in the millisecond Redis still
		// returns the key.
		if json.Unmarshal([]byte(str), &l) == nil && l.Live(now) {
			levers = append(levers, l)
		}
	}
	sortLevers(levers)
	return levers, nil
}

// dueCheck queues a cheap probe for one index member past its expiry.
func (s *Store) dueCheck(ctx context.Context, pipe redis.Pipeliner) *redis.StringSliceCmd {
	return pipe.ZRangeByScore(ctx, s.keys.Index(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10), Count: 1,
	})
}

// reapQuietly reaps for a reader and says whether anything was journaled.
// A reader without write rights (a viewer) leaves it to the next writer:
// the expired lever is absent for everyone either way.
func (s *Store) reapQuietly(ctx context.Context) bool {
	entries, err := s.Reap(ctx, time.Now())
	return err == nil && len(entries) > 0
}

// Subscribe delivers every published Change until stop is called or ctx
// ends. Messages that do not decode are skipped.
func (s *Store) Subscribe(ctx context.Context) (<-chan lever.Change, func()) {
	ps := s.client.Subscribe(ctx, s.keys.Changes())
	out := make(chan lever.Change, 64)
	done := make(chan struct{})
	go func() {
		defer close(out)
		for msg := range ps.Channel() {
			var c lever.Change
			if json.Unmarshal([]byte(msg.Payload), &c) != nil {
				continue
			}
			select {
			case out <- c:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(done)
			ps.Close()
		})
	}
}

// Acks says, for each lever member, how many live provider instances have
// applied its current version (or a later one), and how many instances are
// live. It follows the providers' contract (flags/): each instance
// heartbeats in Keys.Instances and rewrites its hash Keys.Ack(id) — applied
// versions by member, and a "_seen" field — with a TTL, so an instance is
// live exactly while its ack hash exists.
func (s *Store) Acks(ctx context.Context) (map[string]int, int, error) {
	k := s.keys
	pipe := s.client.Pipeline()
	inst := pipe.ZRange(ctx, k.Instances(), 0, -1)
	vers := pipe.HGetAll(ctx, k.Versions())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, s.classify("read acknowledgements", err, false)
	}
	seen := map[string]int{}
	if len(inst.Val()) == 0 {
		return seen, 0, nil
	}
	pipe = s.client.Pipeline()
	acks := make([]*redis.MapStringStringCmd, len(inst.Val()))
	for i, id := range inst.Val() {
		acks[i] = pipe.HGetAll(ctx, k.Ack(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, s.classify("read acknowledgements", err, false)
	}
	live := 0
	for _, a := range acks {
		if len(a.Val()) == 0 {
			continue // its ack expired: the instance stopped
		}
		live++
		for member, v := range a.Val() {
			cur, ok := vers.Val()[member]
			if !ok {
				continue
			}
			applied, err1 := strconv.ParseInt(v, 10, 64)
			want, err2 := strconv.ParseInt(cur, 10, 64)
			if err1 == nil && err2 == nil && applied >= want {
				seen[member]++
			}
		}
	}
	return seen, live, nil
}
