package controlplane

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Claims are short-lived keys that make one of many processes (receiver
// replicas, a retried delivery) the one that acts on an event: SET NX with
// a TTL decides inside Redis, so no replica's memory has to.

// Claim is the key of claim name.
func (k Keys) Claim(name string) string { return k.Prefix() + "claim:" + name }

// Claim sets claim name to value for ttl if nobody holds it, and says
// whether this caller now holds it.
func (s *Store) Claim(ctx context.Context, name, value string, ttl time.Duration) (bool, error) {
	ok, err := s.client.SetNX(ctx, s.keys.Claim(name), value, ttl).Result()
	if err != nil {
		return false, s.classify("claim "+name, err, true)
	}
	return ok, nil
}

// Claimed returns the value of claim name, "" when nobody holds it.
func (s *Store) Claimed(ctx context.Context, name string) (string, error) {
	v, err := s.client.Get(ctx, s.keys.Claim(name)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", s.classify("read claim "+name, err, false)
	}
	return v, nil
}

// unclaimScript deletes a claim only if it still holds the caller's value,
// so a holder whose claim expired cannot free another's.
//
//	KEYS: 1 claim
//	ARGV: 1 value
//
// Replies: 1 deleted · 0 not held by value.
var unclaimScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Unclaim frees claim name if it still holds value, so another process
// (or a retried delivery) may act on the event after this one failed.
func (s *Store) Unclaim(ctx context.Context, name, value string) error {
	if err := unclaimScript.Run(ctx, s.client, []string{s.keys.Claim(name)}, value).Err(); err != nil {
		return s.classify("free claim "+name, err, true)
	}
	return nil
}

// settleScript replaces a claim's value and TTL only if it still holds the
// caller's value, so a holder whose claim expired (and was taken over)
// cannot overwrite the new holder's.
//
//	KEYS: 1 claim
//	ARGV: 1 value held · 2 new value · 3 TTL in ms
//
// Replies: 1 replaced · 0 not held by value.
var settleScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`)

// Settle turns claim name from value into next, held for ttl, if the
// caller still holds it: a short lease taken while acting becomes the
// long record that the event was acted on.
func (s *Store) Settle(ctx context.Context, name, value, next string, ttl time.Duration) (bool, error) {
	n, err := settleScript.Run(ctx, s.client, []string{s.keys.Claim(name)}, value, next, ttl.Milliseconds()).Int()
	if err != nil {
		return false, s.classify("settle claim "+name, err, true)
	}
	return n == 1, nil
}
