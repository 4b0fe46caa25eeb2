package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// maxAttempts bounds the optimistic retries when other writers move the
// journal head first; each round lets at least one writer through.
const maxAttempts = 200

// idempotencyTTL is how long a retried apply returns its first result.
const idempotencyTTL = 24 * time.Hour

// ApplyRequest sets a lever. Expected, Current and Head come from Get or
// Snapshot: with them an uncontended apply is one read and one script.
type ApplyRequest struct {
	// Lever to write: Kind, Target, Value, Actor, Reason, Incident and
	// ExpiresAt. ActionID and CreatedAt default to a new ULID and now;
	// Version and Previous are set by Apply.
	Lever lever.Lever
	// Expected is the version the lever had when read (0 if never written).
	Expected int64
	// Current is the active lever that was read (nil if none); it becomes
	// the new lever's Previous, restored on release.
	Current *lever.Lever
	// Head is the journal head that was read; a stale or empty Head costs
	// a retry, never a wrong chain.
	Head string
	// Entry describes the action for the journal (actor, incident, evidence,
	// ttl, playbook…). Event defaults to action.applied; lever fields,
	// previous and new state and outcome are filled in by Apply.
	Entry journal.Entry
	// IdempotencyKey, if set, makes a repeated apply return the first
	// result (Replayed) and change nothing, for 24 hours.
	IdempotencyKey string
	// RequestHash binds the key to what the request does (kind, targets,
	// value, TTL…), as the caller hashes it: the key answers only a request
	// with the same hash, and any other is a *KeyReusedError.
	RequestHash string
	// Rate, if set, counts the apply against a rate limit in the same
	// script: a spent budget writes nothing and is a *RateLimitedError,
	// which the caller journals.
	Rate *RateCharge
}

// Result is what a write did.
type Result struct {
	// Lever is the lever active after the write; nil after a release that
	// restored nothing.
	Lever *lever.Lever `json:"lever,omitempty"`
	// Version is the lever's version after the write.
	Version int64 `json:"version"`
	// Entry is the journal entry appended, sealed.
	Entry journal.Entry `json:"entry"`
	// Replayed is true when an idempotency key returned an earlier result.
	Replayed bool `json:"replayed,omitempty"`
	// RequestHash is the ApplyRequest's, stored with the idempotency key.
	RequestHash string `json:"request_hash,omitempty"`
	// Replication says whether replicas confirmed the write (WAIT); nil
	// on a replay, which wrote nothing.
	Replication *Replication `json:"replication,omitempty"`
	// RecordError says why the write could not be kept in the local
	// written record; "" when it was, or none is kept.
	RecordError string `json:"record_error,omitempty"`
}

// Apply writes a lever if its version is still Expected. A version that
// moved is a *ConflictError, and the refused attempt is journaled.
func (s *Store) Apply(ctx context.Context, r ApplyRequest) (Result, error) {
	now := time.Now()
	l := r.Lever
	if err := validate(l, now); err != nil {
		return Result{}, err
	}
	if r.Rate != nil {
		if err := r.Rate.Limit.check(); err != nil {
			return Result{}, err
		}
	}
	if l.ActionID == "" {
		l.ActionID = journal.NewID()
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = now
	}
	l.CreatedAt = l.CreatedAt.UTC()
	l.ExpiresAt = l.ExpiresAt.UTC().Truncate(time.Millisecond)
	l.Version = r.Expected + 1
	l.Previous = nil
	if r.Current != nil && r.Current.ExpiresAt.After(now) {
		l.Previous = trimPrevious(r.Current, maxPrevious)
	}
	e := r.Entry
	fillEntry(&e, journal.ActionApplied, &l)
	e.Previous, e.New = state(l.Previous), state(&l)
	// An outcome the caller set is a note on how it was applied.
	if e.Outcome != "" {
		e.Outcome = "applied; " + e.Outcome
	} else {
		e.Outcome = "applied"
	}
	return s.commit(ctx, write{
		op: "apply " + lever.Member(l.Kind, l.Target), kind: l.Kind, target: l.Target,
		expected: r.Expected, head: r.Head, entry: e, set: &l, mode: "apply", idemKey: r.IdempotencyKey, reqHash: r.RequestHash, rate: r.Rate,
	})
}

// ReleaseRequest undoes the lever Current (from Get or Levers).
type ReleaseRequest struct {
	Current *lever.Lever
	Head    string
	// Entry describes the release; Event defaults to action.released.
	Entry journal.Entry
}

// Release removes the lever, or restores its Previous if that has not
// expired yet. The lever must still be at Current's version.
func (s *Store) Release(ctx context.Context, r ReleaseRequest) (Result, error) {
	var next *lever.Lever
	if c := r.Current; c != nil && c.Previous != nil && c.Previous.ExpiresAt.After(time.Now()) {
		restored := *c.Previous
		restored.Version = c.Version + 1
		next = &restored
	}
	return s.update(ctx, "release", r.Current, next, r.Head, r.Entry, journal.ActionReleased)
}

// ExtendRequest moves the expiry of the lever Current.
type ExtendRequest struct {
	Current   *lever.Lever
	ExpiresAt time.Time
	Head      string
	// Entry describes the extension; Event defaults to action.extended.
	Entry journal.Entry
}

// Extend sets a new expiry on the lever, which must still be at Current's
// version.
func (s *Store) Extend(ctx context.Context, r ExtendRequest) (Result, error) {
	if r.Current == nil || !r.ExpiresAt.After(time.Now()) {
		return Result{}, exit.NewUsage(fmt.Errorf("extend: the new expiry %s is not in the future", r.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	next := *r.Current
	next.ExpiresAt = r.ExpiresAt.UTC().Truncate(time.Millisecond)
	next.Version = r.Current.Version + 1
	return s.update(ctx, "extend", r.Current, &next, r.Head, r.Entry, journal.ActionExtended)
}

// update replaces (next) or removes (nil) the active lever c.
func (s *Store) update(ctx context.Context, verb string, c, next *lever.Lever, head string, e journal.Entry, ev journal.Event) (Result, error) {
	if c == nil {
		return Result{}, fmt.Errorf("%s: no lever given", verb)
	}
	fillEntry(&e, ev, c)
	e.Previous, e.New = state(c), state(next)
	switch {
	case next == nil:
		e.Outcome = "released"
	case ev == journal.ActionReleased:
		e.Outcome = "released; restored action " + next.ActionID
	case next.ExpiresAt.Before(c.ExpiresAt):
		e.Outcome = "shortened"
	default:
		e.Outcome = "extended"
	}
	return s.commit(ctx, write{
		op: verb + " " + lever.Member(c.Kind, c.Target), kind: c.Kind, target: c.Target,
		expected: c.Version, head: head, entry: e, set: next, mode: "update",
	})
}

// write is one lever change for commit.
type write struct {
	op       string
	kind     lever.Kind
	target   string
	expected int64
	head     string
	entry    journal.Entry
	set      *lever.Lever // nil deletes
	mode     string
	idemKey  string
	reqHash  string
	rate     *RateCharge
}

func (s *Store) commit(ctx context.Context, w write) (Result, error) {
	s.stamp(&w.entry)
	w.entry = identify(w.entry)
	member := lever.Member(w.kind, w.target)
	k := s.keys
	keys := []string{k.Lever(w.kind, w.target), k.Index(), k.Versions(), k.Held(), k.Journal(), k.JournalHead(), k.Idempotency(w.idemKey),
		k.Actor(w.entry.Actor)}
	change := lever.Change{Op: lever.OpDel, Kind: w.kind, Target: w.target, Version: w.expected + 1, Lever: w.set}
	op, leverJSON, expiry := "del", []byte{}, "0"
	if w.set != nil {
		change.Op, op = lever.OpSet, "set"
		leverJSON, _ = json.Marshal(w.set)
		expiry = strconv.FormatInt(w.set.ExpiresAt.UnixMilli(), 10)
	}
	changeJSON, _ := json.Marshal(change)
	charge := []any{"", "", ""}
	if w.rate != nil {
		keys = append(keys, w.rate.keys(k)...)
		charge = w.rate.args()
	}
	head := s.headHint(w.head)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		sealed, stored, err := s.seal(w.entry, head)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", w.op, err)
		}
		res := Result{Lever: w.set, Version: w.expected + 1, Entry: sealed, RequestHash: w.reqHash}
		first := []byte{}
		if w.idemKey != "" {
			first, _ = json.Marshal(res)
		}
		args := append([]any{member, w.expected, head, stored, sealed.Hash, op, leverJSON, expiry, changeJSON,
			k.Changes(), first, idempotencyTTL.Milliseconds(), w.mode}, charge...)
		reply, rep, err := s.runConfirmed(ctx, writeScript, keys, args)
		if err != nil {
			return Result{}, s.classifyWrite(ctx, w.op, err, w.entry)
		}
		switch reply[0] {
		case "ok":
			s.setHead(sealed.Hash)
			res.Replication = rep
			if s.written != "" {
				// The write is made: a record that cannot be kept is a
				// warning on the result, not a failure of it.
				if err := journal.AppendWritten(s.written, stored); err != nil {
					res.RecordError = err.Error()
				}
			}
			return res, nil
		case "replay":
			var prior Result
			if err := json.Unmarshal([]byte(reply[1]), &prior); err != nil {
				return Result{}, fmt.Errorf("%s: stored result of idempotency key %q: %w", w.op, w.idemKey, err)
			}
			prior.Replayed = true
			if err := CheckReplay(w.idemKey, w.reqHash, w.leverActor(), &prior); err != nil {
				return Result{}, err // nothing written: the script replied before any write
			}
			return prior, nil
		case "conflict":
			return Result{}, s.refuseConflict(ctx, w, reply)
		case "gone":
			return Result{}, s.refuse(ctx, w.entry, nil, &NotActiveError{Kind: w.kind, Target: w.target})
		case "rate":
			st, err := parseRate(reply[1:])
			if err != nil {
				return Result{}, fmt.Errorf("%s: %w", w.op, err)
			}
			return Result{}, &RateLimitedError{Actor: w.rate.Actor, Status: st}
		case "reap":
			// The lever expired but its expiry is not journaled yet: journal
			// it first, whatever the clocks say, so it is never lost.
			if _, err := s.reap(ctx, "+inf"); err != nil {
				return Result{}, err
			}
			head = s.headHint("")
		case "head":
			head = reply[1]
			s.setHead(head)
			backoff(attempt)
		default:
			return Result{}, fmt.Errorf("%s: unexpected script reply %q", w.op, reply)
		}
	}
	return Result{}, fmt.Errorf("%s: the journal head kept moving after %d attempts; nothing was changed", w.op, maxAttempts)
}

func (s *Store) refuseConflict(ctx context.Context, w write, reply []string) error {
	ce := &ConflictError{Kind: w.kind, Target: w.target, Expected: w.expected}
	ce.Actual, _ = strconv.ParseInt(reply[1], 10, 64)
	if len(reply) > 2 && reply[2] != "" {
		var h lever.Lever
		if json.Unmarshal([]byte(reply[2]), &h) == nil {
			ce.Holder = &h
		}
	}
	return s.refuse(ctx, w.entry, ce.Holder, ce)
}

// refuse journals a write that the script refused, so every attempt is on
// the record, and returns cause (or the journaling failure beside it).
func (s *Store) refuse(ctx context.Context, attempt journal.Entry, holder *lever.Lever, cause error) error {
	e := attempt
	e.ID, e.Time = journal.NewID(), time.Now().UTC()
	e.Event = journal.ActionRefused
	e.Previous, e.New = state(holder), nil
	e.Outcome = "conflict"
	e.Error = cause.Error()
	sealed, err := s.Append(ctx, e)
	if ce, ok := cause.(*ConflictError); ok {
		ce.Entry = sealed
	}
	if err != nil {
		return fmt.Errorf("%w (and the refusal could not be journaled: %v)", cause, err)
	}
	return cause
}

// Append adds a journal-only entry (a refusal, a note, an incident event)
// to the chain and returns it sealed.
func (s *Store) Append(ctx context.Context, e journal.Entry) (journal.Entry, error) {
	sealed, _, err := s.appendEntry(ctx, e, false)
	return sealed, err
}

// AppendOnce appends e unless an entry with its ID was appended by an
// earlier AppendOnce; it reports whether it appended. `journal sync` uses it
// so that each pending entry lands exactly once.
func (s *Store) AppendOnce(ctx context.Context, e journal.Entry) (journal.Entry, bool, error) {
	return s.appendEntry(ctx, e, true)
}

func (s *Store) appendEntry(ctx context.Context, e journal.Entry, once bool) (journal.Entry, bool, error) {
	s.stamp(&e)
	e = identify(e)
	op := "journal " + string(e.Event)
	dedupe := ""
	if once {
		dedupe = e.ID
	}
	keys := []string{s.keys.Journal(), s.keys.JournalHead(), s.keys.Synced(), s.keys.Actor(e.Actor)}
	head := s.headHint("")
	for attempt := 0; attempt < maxAttempts; attempt++ {
		sealed, stored, err := s.seal(e, head)
		if err != nil {
			return journal.Entry{}, false, fmt.Errorf("%s: %w", op, err)
		}
		reply, err := appendScript.Run(ctx, s.client, keys, head, stored, sealed.Hash, dedupe).StringSlice()
		if err != nil {
			return journal.Entry{}, false, s.classifyWrite(ctx, op, err, e)
		}
		switch reply[0] {
		case "ok":
			s.setHead(sealed.Hash)
			return sealed, true, nil
		case "dup":
			return e, false, nil
		case "head":
			head = reply[1]
			s.setHead(head)
			backoff(attempt)
		default:
			return journal.Entry{}, false, fmt.Errorf("%s: unexpected script reply %q", op, reply)
		}
	}
	return journal.Entry{}, false, fmt.Errorf("%s: the journal head kept moving after %d attempts; nothing was appended", op, maxAttempts)
}

// identify gives an entry its id and time once, so that retries against a
// moved head append the same entry.
func identify(e journal.Entry) journal.Entry {
	if e.ID == "" {
		e.ID = journal.NewID()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if e.Step == "" && e.Playbook == "" {
		e.Step = journal.AdHoc
	}
	return e
}

// backoff spreads writers that lost the race for the head: immediately at
// first, then up to a few milliseconds of jitter.
func backoff(attempt int) {
	if attempt < 2 {
		return
	}
	limit := time.Duration(min(attempt, 20)) * 250 * time.Microsecond
	time.Sleep(rand.N(limit))
}

func (s *Store) headHint(h string) string {
	if h != "" {
		return h
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head
}

func (s *Store) setHead(h string) {
	s.mu.Lock()
	s.head = h
	s.mu.Unlock()
}
