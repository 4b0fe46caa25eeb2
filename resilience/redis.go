package resilience

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/lever"
)

// BudgetKey is the hash holding the fleet-wide retry budget of service's
// calls to dependency (fields tokens, ts), under the control-plane hash tag.
func BudgetKey(keys lever.Keys, service, dependency string) string {
	return keys.Prefix() + "budget:" + service + "->" + dependency
}

// ProbeKey counts the half-open probes sent to dependency by the whole fleet
// during one Unix second; it expires soon after.
func ProbeKey(keys lever.Keys, dependency string, unixSecond int64) string {
	return keys.Prefix() + "probes:" + dependency + ":" + strconv.FormatInt(unixSecond, 10)
}

// budgetScript refills the shared bucket by elapsed time and by the
// deposits an instance batched, then takes one token if asked. The time
// comes from the caller so a simulation can use a virtual clock; ts only
// moves forward, so a caller whose clock is behind refills nothing.
//
// KEYS[1] budget hash; ARGV now_ms, deposits, ratio, per_second, burst, want (0|1), ttl_ms.
// Returns 1 when a token was taken.
var budgetScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local burst = tonumber(ARGV[5])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1]) or burst
local ts = tonumber(v[2]) or now
if now > ts then
  tokens = tokens + (now - ts) * tonumber(ARGV[4]) / 1000
  ts = now
end
tokens = math.min(burst, tokens + tonumber(ARGV[2]) * tonumber(ARGV[3]))
local ok = 0
if ARGV[6] == '1' and tokens >= 1 - 1e-9 then
  tokens = math.max(tokens - 1, 0)
  ok = 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.9f', tokens), 'ts', string.format('%.0f', ts))
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return ok
`)

// probeScript admits a probe while the second's counter is within the limit.
// KEYS[1] ProbeKey; ARGV limit. Returns 1 when admitted.
var probeScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 2000) end
if n <= tonumber(ARGV[1]) then return 1 end
return 0
`)

// redisTimeout bounds every Redis call on a request path; redisBackoff is
// how long after a failure a fleet-wide part uses its local fallback
// instead of asking again, so an outage costs one timeout per second at most.
const (
	redisTimeout = 50 * time.Millisecond
	redisBackoff = time.Second
	budgetTTL    = 10 * time.Minute
	// Deposits are sent in batches, with the next retry or when the batch
	// is full or old, so a request that needs no retry costs no round trip.
	flushBatch    = 10
	flushInterval = time.Second
)

// RedisBudget shares one retry budget between every instance of a service
// calling a dependency. While Redis fails it falls back to a local Budget
// with the same config (so each instance gets a whole budget: the fleet may
// retry N times more, as without Redis, but never without a limit).
type RedisBudget struct {
	client redis.Scripter
	key    string
	cfg    BudgetConfig
	local  *Budget

	mu        sync.Mutex
	pending   int
	lastFlush time.Time
	downUntil time.Time
}

// NewRedisBudget returns the fleet-wide budget of service → dependency.
func NewRedisBudget(client redis.Scripter, keys lever.Keys, service, dependency string, cfg BudgetConfig) *RedisBudget {
	cfg = cfg.withDefaults()
	return &RedisBudget{client: client, key: BudgetKey(keys, service, dependency), cfg: cfg, local: NewBudget(cfg)}
}

// Request implements RetryBudget.
func (b *RedisBudget) Request(ctx context.Context, now time.Time) {
	b.local.Deposit(now)
	b.mu.Lock()
	b.pending++
	if b.lastFlush.IsZero() {
		b.lastFlush = now
	}
	flush := b.pending >= flushBatch || now.Sub(b.lastFlush) >= flushInterval
	b.mu.Unlock()
	if flush {
		b.eval(ctx, now, false)
	}
}

// Retry implements RetryBudget.
func (b *RedisBudget) Retry(ctx context.Context, now time.Time) bool {
	ok, err := b.eval(ctx, now, true)
	if err != nil {
		return b.local.TryRetry(now)
	}
	return ok
}

func (b *RedisBudget) eval(ctx context.Context, now time.Time, want bool) (bool, error) {
	b.mu.Lock()
	if now.Before(b.downUntil) {
		b.mu.Unlock()
		return false, errRedisDown
	}
	deposits := b.pending
	b.pending, b.lastFlush = 0, now
	b.mu.Unlock()

	// The caller's cancellation is not a Redis failure: only the timeout
	// bounds this call.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	w := "0"
	if want {
		w = "1"
	}
	n, err := budgetScript.Run(ctx, b.client, []string{b.key}, now.UnixMilli(), deposits,
		b.cfg.Ratio, b.cfg.PerSecond, b.cfg.Burst, w, budgetTTL.Milliseconds()).Int()
	if err != nil {
		b.mu.Lock()
		b.downUntil = now.Add(redisBackoff)
		b.mu.Unlock()
		return false, err
	}
	if want {
		// Keep the fallback as drained as the fleet's bucket, so an outage
		// does not start with a burst on top of what was just spent.
		b.local.TryRetry(now)
	}
	return n == 1, nil
}

var errRedisDown = errors.New("redis marked down after a recent failure")

// RedisProbeLimiter admits at most PerSecond half-open probes per dependency
// per second across the fleet. While Redis fails it admits every probe the
// local breaker allows (HalfOpenProbes per process): a Redis outage must
// not hold every breaker open.
type RedisProbeLimiter struct {
	client    redis.Scripter
	keys      lever.Keys
	perSecond int

	mu        sync.Mutex
	downUntil time.Time
}

// NewRedisProbeLimiter returns a fleet-wide probe limiter.
func NewRedisProbeLimiter(client redis.Scripter, keys lever.Keys, perSecond int) *RedisProbeLimiter {
	return &RedisProbeLimiter{client: client, keys: keys, perSecond: max(perSecond, 1)}
}

// AllowProbe implements ProbeLimiter.
func (l *RedisProbeLimiter) AllowProbe(dependency string, now time.Time) bool {
	l.mu.Lock()
	down := now.Before(l.downUntil)
	l.mu.Unlock()
	if down {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	n, err := probeScript.Run(ctx, l.client, []string{ProbeKey(l.keys, dependency, now.Unix())}, l.perSecond).Int()
	if err != nil {
		l.mu.Lock()
		l.downUntil = now.Add(redisBackoff)
		l.mu.Unlock()
		return true
	}
	return n == 1
}
