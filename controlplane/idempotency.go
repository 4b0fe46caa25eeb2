package controlplane

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
)

// KeyReusedError reports an idempotency key that already answered a
// different request: its stored request hash is not this request's.
// Nothing was changed. It exits 2, a usage error: the caller must use a new
// key for a new request.
type KeyReusedError struct {
	Key string
	// First is the result the key answered first.
	First Result
}

func (e *KeyReusedError) Error() string {
	what := "another request"
	if l := e.First.Lever; l != nil {
		what = fmt.Sprintf("%s %s=%s by %s at %s (action %s)", l.Kind, l.Target, l.Value, l.Actor,
			l.CreatedAt.UTC().Format(time.RFC3339), l.ActionID)
	}
	return fmt.Sprintf("idempotency key %q was first used for %s, with different arguments; nothing was changed: a new request needs a new key", e.Key, what)
}

// ExitCode implements exit.Coder.
func (e *KeyReusedError) ExitCode() int { return exit.Usage }

// CheckReplay says whether first, the stored first result of key, answers
// the request hashed as hash: nil, or a *KeyReusedError. A result stored
// without a hash (an apply made before keys were bound) cannot tell, and
// answers.
func CheckReplay(key, hash string, first *Result) error {
	if first.RequestHash == "" || hash == "" || first.RequestHash == hash {
		return nil
	}
	return &KeyReusedError{Key: key, First: *first}
}
