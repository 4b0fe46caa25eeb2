package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// reapBatch bounds one reap script; more expired levers take more rounds.
const reapBatch = 100

// ReaperActor is the actor of action.expired entries: nobody acted, the
// lever's TTL ran out.
const ReaperActor = journal.ExpiryActor

// Reap journals every lever that expired by now and is not journaled yet
// as action.expired at its true expiry time, and removes it from the index.
// Concurrent reapers journal each expiry once: the script re-checks
// everything it relies on and the loser reads again.
func (s *Store) Reap(ctx context.Context, now time.Time) ([]journal.Entry, error) {
	return s.reap(ctx, strconv.FormatInt(now.UnixMilli(), 10))
}

type expired struct {
	member  string
	lever   *lever.Lever
	kind    lever.Kind
	target  string
	score   float64
	version int64
}

func (s *Store) reap(ctx context.Context, upto string) ([]journal.Entry, error) {
	var all []journal.Entry
	for attempt := 0; attempt < maxAttempts; attempt++ {
		due, head, err := s.dueLevers(ctx, upto)
		if err != nil || len(due) == 0 {
			return all, err
		}
		entries, args, keys, err := s.expiryEntries(due, head)
		if err != nil {
			return all, err
		}
		reply, err := reapScript.Run(ctx, s.client, keys, args...).StringSlice()
		if err != nil {
			return all, s.classify("journal expiries", err, true)
		}
		switch reply[0] {
		case "ok":
			all = append(all, entries...)
			s.setHead(entries[len(entries)-1].Hash)
			if len(due) < reapBatch {
				return all, nil
			}
		case "head", "stale":
			backoff(attempt)
		default:
			return all, fmt.Errorf("journal expiries: unexpected script reply %q", reply)
		}
	}
	return all, fmt.Errorf("journal expiries: the journal kept moving after %d attempts", maxAttempts)
}

// dueLevers reads the index members scored up to upto whose lever key is
// absent, with what the script will check, and the journal head.
func (s *Store) dueLevers(ctx context.Context, upto string) ([]expired, string, error) {
	k := s.keys
	pipe := s.client.Pipeline()
	zs := pipe.ZRangeByScoreWithScores(ctx, k.Index(), &redis.ZRangeBy{Min: "-inf", Max: upto, Count: reapBatch})
	hd := pipe.Get(ctx, k.JournalHead())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, "", s.classify("read expired levers", err, false)
	}
	if len(zs.Val()) == 0 {
		return nil, "", nil
	}
	members := make([]string, len(zs.Val()))
	pipe = s.client.Pipeline()
	exists := make([]*redis.IntCmd, len(members))
	for i, z := range zs.Val() {
		members[i], _ = z.Member.(string)
		kind, target, _ := lever.ParseMember(members[i])
		exists[i] = pipe.Exists(ctx, k.Lever(kind, target))
	}
	held := pipe.HMGet(ctx, k.Held(), members...)
	vers := pipe.HMGet(ctx, k.Versions(), members...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, "", s.classify("read expired levers", err, false)
	}
	var due []expired
	for i, m := range members {
		if exists[i].Val() != 0 {
			continue // the clocks disagree: Redis has not expired it yet
		}
		x := expired{member: m, score: zs.Val()[i].Score}
		x.kind, x.target, _ = lever.ParseMember(m)
		if v, ok := vers.Val()[i].(string); ok {
			x.version, _ = strconv.ParseInt(v, 10, 64)
		}
		if h, ok := held.Val()[i].(string); ok {
			var l lever.Lever
			if json.Unmarshal([]byte(h), &l) == nil {
				x.lever = &l
			}
		}
		due = append(due, x)
	}
	return due, hd.Val(), nil
}

// expiryEntries chains one action.expired entry per lever after head.
func (s *Store) expiryEntries(due []expired, head string) ([]journal.Entry, []any, []string, error) {
	k := s.keys
	keys := []string{k.Index(), k.Versions(), k.Held(), k.Journal(), k.JournalHead()}
	args := []any{head, k.Changes()}
	entries := make([]journal.Entry, 0, len(due))
	prev := head
	for _, x := range due {
		at := time.UnixMilli(int64(x.score)).UTC()
		e := journal.Entry{
			Event: journal.ActionExpired, Time: at, Actor: ReaperActor,
			Kind: string(x.kind), Target: x.target, Reason: "its TTL ran out", Outcome: "expired",
		}
		if x.lever != nil {
			fillEntry(&e, journal.ActionExpired, x.lever)
			e.Actor, e.Reason = ReaperActor, "its TTL ran out"
			e.Previous = state(x.lever)
		}
		s.stamp(&e)
		sealed, stored, err := s.seal(identify(e), prev)
		if err != nil {
			return nil, nil, nil, err
		}
		prev = sealed.Hash
		change, _ := json.Marshal(lever.Change{Op: lever.OpDel, Kind: x.kind, Target: x.target, Version: x.version})
		keys = append(keys, k.Lever(x.kind, x.target))
		args = append(args, x.member, x.score, x.version, stored, sealed.Hash, change)
		entries = append(entries, sealed)
	}
	return entries, args, keys, nil
}
