package controlplane

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
)

// KeyReusedError reports an idempotency key that already answered a
// different request, or a request by another actor: its stored request
// hash is not this request's, or its lever is another actor's. Nothing was
// changed. It exits 2, a usage error: the caller must use a new key for a
// new request.
type KeyReusedError struct {
	Key string
	// First is the result the key answered first.
	First Result
	// Actor is set when the key is another actor's: the one who reused it.
	Actor string
}

func (e *KeyReusedError) Error() string {
	what := "another request"
	if l := e.First.Lever; l != nil {
		what = fmt.Sprintf("%s %s=%s by %s at %s (action %s)", l.Kind, l.Target, l.Value, l.Actor,
			l.CreatedAt.UTC().Format(time.RFC3339), l.ActionID)
	}
	if e.Actor != "" {
		return fmt.Sprintf("idempotency key %q was first used for %s: it answers only its own actor, not %s; nothing was changed: use a key of your own", e.Key, what, e.Actor)
	}
	return fmt.Sprintf("idempotency key %q was first used for %s, with different arguments; nothing was changed: a new request needs a new key", e.Key, what)
}

// ExitCode implements exit.Coder.
func (e *KeyReusedError) ExitCode() int { return exit.Usage }

// CheckReplay says whether first, the stored first result of key, answers
// the request hashed as hash and made for actor (the lever's actor): nil,
// or a *KeyReusedError. A key answers only its own actor, so another
// actor's retry never passes for theirs. A result stored without a hash
// (an apply made before keys were bound) cannot tell the request, and
// answers it.
func CheckReplay(key, hash, actor string, first *Result) error {
	if l := first.Lever; l != nil && actor != "" && l.Actor != actor {
		return &KeyReusedError{Key: key, First: *first, Actor: actor}
	}
	if first.RequestHash == "" || hash == "" || first.RequestHash == hash {
		return nil
	}
	return &KeyReusedError{Key: key, First: *first}
}

// leverActor is the actor of the lever written, "" for a removal.
func (w write) leverActor() string {
	if w.set == nil {
		return ""
	}
	return w.set.Actor
}
