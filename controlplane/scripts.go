package controlplane

import "github.com/redis/go-redis/v9"

// Every script that journals an entry also sets the key of the entry's
// actor (Keys.Actor), declared in its KEYS: Redis checks declared keys
// against the caller's ACL before the script runs, so a per-person user
// claiming another actor is refused (NOPERM) with nothing written.
//
// The scripts hash nothing themselves: the chain hash is SHA-256, which Redis
// Lua lacks, so the client seals each entry against the head it read and a
// script appends it only if the head is still that one. A script replies
// {status, ...}: "ok" when it wrote, else why not, with what the client
// needs to retry or to report.

// writeScript changes one lever and journals it; with a rate charge it
// also counts the change against the rate limit, or refuses it.
//
//	KEYS: 1 lever, 2 index, 3 versions, 4 held, 5 journal, 6 head, 7 idempotency,
//	      8 the entry's actor key (Keys.Actor), 9 actor rate counter,
//	      10 overall rate counter (9 and 10 with a charge only)
//	ARGV: 1 member, 2 expected version, 3 prev hash, 4 entry, 5 entry hash,
//	      6 op (set|del), 7 lever JSON, 8 expiry ms, 9 change JSON, 10 channel,
//	      11 idempotent result ("" without a key), 12 its TTL ms,
//	      13 mode: "apply" (any state) or "update" (the lever must be active),
//	      14 per-actor limit ("" = no charge), 15 overall limit, 16 window ms
//
// Replies: {"replay", first result} · {"conflict", version, holder JSON or ""}
// · {"reap"} (the lever expired and is not journaled yet) · {"gone"} (update
// of a lever not active) · {"rate", "actor"|"overall", actor count, overall
// count, ms left} · {"head", current head} · {"ok", stream id}.
var writeScript = redis.NewScript(rateLua + `
if ARGV[11] ~= '' then
  local first = redis.call('GET', KEYS[7])
  if first then return {'replay', first} end
end
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if cur ~= tonumber(ARGV[2]) then
  return {'conflict', tostring(cur), redis.call('GET', KEYS[1]) or ''}
end
local active = redis.call('EXISTS', KEYS[1]) == 1
if not active and redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return {'reap'}
end
if ARGV[13] == 'update' and not active then return {'gone'} end
local charge = ARGV[14] ~= ''
if charge then
  local r = rate_check(KEYS[9], KEYS[10], tonumber(ARGV[14]), tonumber(ARGV[15]))
  if r[1] ~= 'ok' then return {'rate', r[1], tostring(r[2]), tostring(r[3]), tostring(r[4])} end
end
local head = redis.call('GET', KEYS[6]) or ''
if head ~= ARGV[3] then return {'head', head} end
if charge then rate_take(KEYS[9], KEYS[10], ARGV[16]) end
redis.call('HSET', KEYS[3], ARGV[1], cur + 1)
if ARGV[6] == 'set' then
  redis.call('SET', KEYS[1], ARGV[7], 'PXAT', ARGV[8])
  redis.call('ZADD', KEYS[2], ARGV[8], ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[7])
else
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
end
local id = redis.call('XADD', KEYS[5], '*', 'entry', ARGV[4])
redis.call('SET', KEYS[6], ARGV[5])
redis.call('SET', KEYS[8], id)
if ARGV[11] ~= '' then redis.call('SET', KEYS[7], ARGV[11], 'PX', ARGV[12]) end
redis.call('PUBLISH', ARGV[10], ARGV[9])
return {'ok', id}
`)

// appendScript appends a journal-only entry.
//
//	KEYS: 1 journal, 2 head, 3 synced set, 4 the entry's actor key
//	ARGV: 1 prev hash, 2 entry, 3 entry hash, 4 id to append once ("" = always)
//
// Replies: {"dup"} (already synced) · {"head", current head} · {"ok", stream id}.
var appendScript = redis.NewScript(`
if ARGV[4] ~= '' and redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 1 then
  return {'dup'}
end
local head = redis.call('GET', KEYS[2]) or ''
if head ~= ARGV[1] then return {'head', head} end
local id = redis.call('XADD', KEYS[1], '*', 'entry', ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SET', KEYS[4], id)
if ARGV[4] ~= '' then redis.call('SADD', KEYS[3], ARGV[4]) end
return {'ok', id}
`)

// reapScript removes expired levers from the index and journals each
// expiry, all or nothing: if anything moved since the client read it, the
// client reads again, so concurrent reapers journal an expiry once.
//
//	KEYS: 1 index, 2 versions, 3 held, 4 journal, 5 head, 6.. the lever keys
//	ARGV: 1 prev hash, 2 channel, then per lever: member, score, version,
//	      entry, entry hash, change JSON
//
// Replies: {"head", current head} · {"stale"} · {"ok", count}.
var reapScript = redis.NewScript(`
local head = redis.call('GET', KEYS[5]) or ''
if head ~= ARGV[1] then return {'head', head} end
local n = #KEYS - 5
for i = 1, n do
  local a = 2 + (i - 1) * 6
  local score = redis.call('ZSCORE', KEYS[1], ARGV[a + 1])
  if not score or tonumber(score) ~= tonumber(ARGV[a + 2]) then return {'stale'} end
  if redis.call('EXISTS', KEYS[5 + i]) == 1 then return {'stale'} end
  if tonumber(redis.call('HGET', KEYS[2], ARGV[a + 1]) or '0') ~= tonumber(ARGV[a + 3]) then
    return {'stale'}
  end
end
for i = 1, n do
  local a = 2 + (i - 1) * 6
  redis.call('ZREM', KEYS[1], ARGV[a + 1])
  redis.call('HDEL', KEYS[3], ARGV[a + 1])
  redis.call('XADD', KEYS[4], '*', 'entry', ARGV[a + 4])
  redis.call('PUBLISH', ARGV[2], ARGV[a + 6])
  head = ARGV[a + 5]
end
redis.call('SET', KEYS[5], head)
return {'ok', tostring(n)}
`)
