package controlplane

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateLimit is a budget of lever changes in a fixed window that starts with
// the first change: at most PerActor by one actor and Overall by everyone.
// A limit of 0 or less is no limit.
type RateLimit struct {
	Window   time.Duration
	PerActor int
	Overall  int
}

// RateStatus is the budget used in the current windows.
type RateStatus struct {
	Actor   int           // changes by this actor in its window
	Overall int           // changes by everyone in the overall window
	Limited string        // "" when allowed, else "actor" or "overall"
	ResetIn time.Duration // until the exhausted window ends
}

// Rate is the counter key of one scope: an actor, or "*" for everyone.
func (k Keys) Rate(scope string) string { return k.prefix + "rate:" + scope }

// rateScript reads both counters and, when both allow it and ARGV[4] is
// "1", counts one change in each.
//
//	KEYS: 1 actor counter, 2 overall counter
//	ARGV: 1 per-actor limit, 2 overall limit, 3 window ms, 4 take (1|0)
//
// Replies: {"actor"|"overall"|"ok", actor count, overall count, ms left}.
var rateScript = redis.NewScript(`
local a = tonumber(redis.call('GET', KEYS[1]) or '0')
local o = tonumber(redis.call('GET', KEYS[2]) or '0')
if a >= tonumber(ARGV[1]) then return {'actor', a, o, redis.call('PTTL', KEYS[1])} end
if o >= tonumber(ARGV[2]) then return {'overall', a, o, redis.call('PTTL', KEYS[2])} end
if ARGV[4] == '1' then
  a = redis.call('INCR', KEYS[1])
  if a == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  o = redis.call('INCR', KEYS[2])
  if o == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
end
return {'ok', a, o, 0}
`)

// Rate reads the budget of actor under l and, with take, counts one change
// if the budget allows it, atomically. Limited says which budget is spent.
func (s *Store) Rate(ctx context.Context, actor string, l RateLimit, take bool) (RateStatus, error) {
	if l.Window <= 0 {
		return RateStatus{}, fmt.Errorf("rate limit: the window must be positive")
	}
	limit := func(n int) int64 {
		if n <= 0 {
			return math.MaxInt32
		}
		return int64(n)
	}
	flag := "0"
	if take {
		flag = "1"
	}
	keys := []string{s.keys.Rate("actor:" + actor), s.keys.Rate("*")}
	reply, err := rateScript.Run(ctx, s.client, keys, limit(l.PerActor), limit(l.Overall), l.Window.Milliseconds(), flag).Slice()
	if err != nil {
		return RateStatus{}, s.classify("rate limit", err, take)
	}
	if len(reply) != 4 {
		return RateStatus{}, fmt.Errorf("rate limit: unexpected script reply %v", reply)
	}
	st := RateStatus{}
	verdict, _ := reply[0].(string)
	a, _ := reply[1].(int64)
	o, _ := reply[2].(int64)
	ms, _ := reply[3].(int64)
	st.Actor, st.Overall, st.ResetIn = int(a), int(o), time.Duration(max(ms, 0))*time.Millisecond
	if verdict != "ok" {
		st.Limited = verdict
	}
	return st, nil
}
