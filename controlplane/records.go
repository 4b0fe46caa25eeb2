package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// Records are small JSON documents kept beside the levers, one hash per
// collection (incidents, approval requests). Each change is compared and set
// in the same script that journals it, so the record and its journal entry
// exist together or not at all.

// Records is the hash holding the records of one collection, id → JSON.
func (k Keys) Records(collection string) string { return k.Prefix() + "records:" + collection }

// RecordChangedError reports that a record no longer held what the writer
// read: someone else changed it first. Current is its value now ("" absent).
type RecordChangedError struct {
	Collection, ID, Current string
}

func (e *RecordChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("%s %s does not exist", e.Collection, e.ID)
	}
	return fmt.Sprintf("%s %s was changed by someone else since it was read", e.Collection, e.ID)
}

// ExitCode implements exit.Coder.
func (e *RecordChangedError) ExitCode() int { return exit.Conflict }

// swapRecordScript sets a hash field if it still holds the expected value
// and appends the journal entry, both or neither.
//
//	KEYS: 1 records hash, 2 journal, 3 head, 4 the entry's actor key
//	ARGV: 1 field, 2 expected value ("" = absent), 3 new value, 4 prev hash,
//	      5 entry, 6 entry hash
//
// Replies: {"changed", current value} · {"head", current head} · {"ok", stream id}.
var swapRecordScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return {'changed', cur} end
local head = redis.call('GET', KEYS[3]) or ''
if head ~= ARGV[4] then return {'head', head} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local id = redis.call('XADD', KEYS[2], '*', 'entry', ARGV[5])
redis.call('SET', KEYS[3], ARGV[6])
redis.call('SET', KEYS[4], id)
return {'ok', id}
`)

// SwapRecord sets record id of collection to value if it still holds old
// ("" when it must not exist yet) and appends e to the journal, atomically.
// A record that moved is a *RecordChangedError and nothing is written.
func (s *Store) SwapRecord(ctx context.Context, collection, id, old, value string, e journal.Entry) (journal.Entry, error) {
	s.stamp(&e)
	e = identify(e)
	op := fmt.Sprintf("%s %s %s", e.Event, collection, id)
	k := s.keys
	keys := []string{k.Records(collection), k.Journal(), k.JournalHead(), k.Actor(e.Actor)}
	head := s.headHint("")
	for attempt := 0; attempt < maxAttempts; attempt++ {
		sealed, stored, err := s.seal(e, head)
		if err != nil {
			return journal.Entry{}, fmt.Errorf("%s: %w", op, err)
		}
		reply, err := swapRecordScript.Run(ctx, s.client, keys, id, old, value, head, stored, sealed.Hash).StringSlice()
		if err != nil {
			return journal.Entry{}, s.classifyWrite(ctx, op, err, e)
		}
		switch reply[0] {
		case "ok":
			s.setHead(sealed.Hash)
			return sealed, nil
		case "changed":
			return journal.Entry{}, &RecordChangedError{Collection: collection, ID: id, Current: reply[1]}
		case "head":
			head = reply[1]
			s.setHead(head)
			backoff(attempt)
		default:
			return journal.Entry{}, fmt.Errorf("%s: unexpected script reply %q", op, reply)
		}
	}
	return journal.Entry{}, fmt.Errorf("%s: the journal head kept moving after %d attempts; nothing was changed", op, maxAttempts)
}

// Records returns every record of collection, id → JSON.
func (s *Store) Records(ctx context.Context, collection string) (map[string]string, error) {
	m, err := s.client.HGetAll(ctx, s.keys.Records(collection)).Result()
	if err != nil {
		return nil, s.classify("read "+collection, err, false)
	}
	return m, nil
}

// Record returns one record of collection, "" when it does not exist.
func (s *Store) Record(ctx context.Context, collection, id string) (string, error) {
	v, err := s.client.HGet(ctx, s.keys.Records(collection), id).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", s.classify("read "+collection+" "+id, err, false)
	}
	return v, nil
}

// Replay returns the first result of an apply made with idempotency key
// key, or nil when there was none in the last 24 hours. It lets a caller
// answer a retried apply before re-checking anything.
func (s *Store) Replay(ctx context.Context, key string) (*Result, error) {
	v, err := s.client.Get(ctx, s.keys.Idempotency(key)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, s.classify("read idempotency key "+key, err, false)
	}
	return decodeReplay(key, v)
}

// decodeReplay reads the stored first result of idempotency key key.
func decodeReplay(key, raw string) (*Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("stored result of idempotency key %q: %w", key, err)
	}
	r.Replayed = true
	return &r, nil
}
