package controlplane

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
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

func (l RateLimit) check() error {
	if l.Window <= 0 {
		return exit.NewUsage(fmt.Errorf("rate limit: the window must be positive"))
	}
	return nil
}

// Rate is the counter key of one scope: an actor, or "*" for everyone.
func (k Keys) Rate(scope string) string { return k.Prefix() + "rate:" + scope }

// rateLua defines the rate-limit functions the scripts share: rate_check
// reads both counters and says which budget is spent; rate_take counts one
// change in each, starting a window at its first change.
const rateLua = `
local function rate_check(ka, ko, la, lo)
  local a = tonumber(redis.call('GET', ka) or '0')
  local o = tonumber(redis.call('GET', ko) or '0')
  if a >= la then return {'actor', a, o, redis.call('PTTL', ka)} end
  if o >= lo then return {'overall', a, o, redis.call('PTTL', ko)} end
  return {'ok', a, o, 0}
end
local function rate_take(ka, ko, window)
  local a = redis.call('INCR', ka)
  if a == 1 then redis.call('PEXPIRE', ka, window) end
  local o = redis.call('INCR', ko)
  if o == 1 then redis.call('PEXPIRE', ko, window) end
  return a, o
end
`

// rateScript reads both counters and, when both allow it and ARGV[4] is
// "1", counts one change in each.
//
//	KEYS: 1 actor counter, 2 overall counter
//	ARGV: 1 per-actor limit, 2 overall limit, 3 window ms, 4 take (1|0)
//
// Replies: {"actor"|"overall"|"ok", actor count, overall count, ms left}.
var rateScript = redis.NewScript(rateLua + `
local r = rate_check(KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]))
if r[1] == 'ok' and ARGV[4] == '1' then r[2], r[3] = rate_take(KEYS[1], KEYS[2], ARGV[3]) end
return {r[1], tostring(r[2]), tostring(r[3]), tostring(r[4])}
`)

// RateCharge is Actor's budget under Limit. An ApplyRequest spends one
// change of it in the apply script, atomically with the write; a
// SnapshotRequest reads it.
type RateCharge struct {
	Actor string
	Limit RateLimit
}

// keys are the counters of the charge: its actor's, then everyone's.
func (c RateCharge) keys(k Keys) []string { return []string{k.ActorRate(c.Actor), k.OverallRate()} }

// args are the script arguments: per-actor limit, overall limit, window ms.
func (c RateCharge) args() []any {
	return []any{capOf(c.Limit.PerActor), capOf(c.Limit.Overall), c.Limit.Window.Milliseconds()}
}

// capOf is a limit as the scripts compare it: 0 or less is no limit.
func capOf(n int) int64 {
	if n <= 0 {
		return math.MaxInt32
	}
	return int64(n)
}

// status reads a budget from the counters and their remaining TTLs, as
// rate_check does.
func (c RateCharge) status(a, o int64, aTTL, oTTL time.Duration) RateStatus {
	st := RateStatus{Actor: int(a), Overall: int(o)}
	switch {
	case a >= capOf(c.Limit.PerActor):
		st.Limited, st.ResetIn = "actor", max(aTTL, 0)
	case o >= capOf(c.Limit.Overall):
		st.Limited, st.ResetIn = "overall", max(oTTL, 0)
	}
	return st
}

// RateLimitedError is an apply refused by the rate limit inside the apply
// script: nothing was written and nothing journaled, so the caller journals
// the refusal.
type RateLimitedError struct {
	Actor  string
	Status RateStatus
}

func (e *RateLimitedError) Error() string {
	who := e.Actor
	if e.Status.Limited == "overall" {
		who = "everyone"
	}
	return fmt.Sprintf("the rate limit of %s is spent (%s: %d, overall: %d); it resets in %s; nothing was changed",
		who, e.Actor, e.Status.Actor, e.Status.Overall, e.Status.ResetIn.Round(time.Millisecond))
}

// ExitCode implements exit.Coder.
func (e *RateLimitedError) ExitCode() int { return exit.Refused }

// parseRate reads the fields {verdict, actor count, overall count, ms
// left} of a script reply.
func parseRate(f []string) (RateStatus, error) {
	if len(f) != 4 {
		return RateStatus{}, fmt.Errorf("rate limit: unexpected script reply %q", f)
	}
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	st := RateStatus{Actor: int(n(f[1])), Overall: int(n(f[2])), ResetIn: time.Duration(max(n(f[3]), 0)) * time.Millisecond}
	if f[0] != "ok" {
		st.Limited = f[0]
	}
	return st, nil
}

// Rate reads the budget of actor under l and, with take, counts one change
// if the budget allows it, atomically. Limited says which budget is spent.
func (s *Store) Rate(ctx context.Context, actor string, l RateLimit, take bool) (RateStatus, error) {
	if err := l.check(); err != nil {
		return RateStatus{}, err
	}
	flag := "0"
	if take {
		flag = "1"
	}
	c := RateCharge{Actor: actor, Limit: l}
	reply, err := rateScript.Run(ctx, s.client, c.keys(s.keys), append(c.args(), flag)...).StringSlice()
	if err != nil {
		return RateStatus{}, s.classify("rate limit", err, take)
	}
	return parseRate(reply)
}
