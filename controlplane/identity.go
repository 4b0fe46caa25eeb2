package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// Identity is who the server says we are, and whether that binds the
// actor. With per-person Redis users (acl print --actor) each user may
// write only its own actor's keys, so the actor of every write is
// authenticated. With a shared user (the default user, or one role user
// for everybody) any actor can be claimed: roles and approvals rest on a
// typed name and are advisory.
type Identity struct {
	// User is the authenticated Redis user (ACL WHOAMI); "" without ACL.
	User string `json:"redis_user,omitempty"`
	// ACL is false on servers that do not know ACL (every client is one).
	ACL bool `json:"acl"`
	// Shared is true when this user may write as any actor.
	Shared bool `json:"shared"`
}

// Advisory says why roles and approvals are advisory under this identity,
// and how to make them binding; "" when the actor is bound.
func (id Identity) Advisory() string {
	if !id.Shared {
		return ""
	}
	who := "every client is the same Redis client (the server has no ACL)"
	if id.ACL {
		who = fmt.Sprintf("every actor can write as Redis user %q", id.User)
	}
	return "single identity: " + who + ", so --actor is a typed name and roles and approvals are advisory; " +
		"give each person a Redis user with `stormctl acl print --role responder --actor NAME` (see docs/identity.md)"
}

// probeActor is an actor name no person can have (sanitize.Actor refuses
// control characters): a user that may write its key may write any actor's.
const probeActor = "\x00any"

// bindProbe declares keys and touches nothing: Redis checks the declared
// keys against the caller's ACL before running it.
var bindProbe = redis.NewScript(`return 1`)

// Identity reports who we are and whether the actor is bound; it asks the
// server once per store.
func (s *Store) Identity(ctx context.Context) (Identity, error) {
	s.mu.Lock()
	id := s.identity
	s.mu.Unlock()
	if id != nil {
		return *id, nil
	}
	out := Identity{User: s.user, ACL: s.aclSupported, Shared: true}
	if s.aclSupported {
		ok, err := s.mayActAs(ctx, probeActor)
		if err != nil {
			return Identity{}, err
		}
		out.Shared = ok
	}
	s.mu.Lock()
	s.identity = &out
	s.mu.Unlock()
	return out, nil
}

// mayActAs says whether the user may write actor's keys. A user that may
// run no script at all may not; a server that runs none binds nobody.
func (s *Store) mayActAs(ctx context.Context, actor string) (bool, error) {
	err := bindProbe.Run(ctx, s.client, []string{s.keys.Actor(actor), s.keys.ActorRate(actor)}).Err()
	var rerr redis.Error
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &rerr) && isPermission(rerr.Error()):
		return false, nil
	case errors.As(err, &rerr):
		return true, nil // a server without scripts cannot bind anyone
	}
	return false, s.classify("check the Redis user's rights", err, false)
}

// IdentityError is a write refused inside Redis because the authenticated
// user may not write as the actor it claimed: acting as someone else needs
// their credentials. It exits 3.
type IdentityError struct {
	Actor string // claimed
	User  string // authenticated
	Op    string
	// Entry is the refusal journaled under the authenticated user, if its
	// rights allowed; JournalErr says why not otherwise.
	Entry      journal.Entry
	JournalErr error
	Err        error
}

func (e *IdentityError) Error() string {
	msg := fmt.Sprintf("%s: acting as %s needs %s's Redis credentials; you are %s; nothing was changed", e.Op, e.Actor, e.Actor, e.User)
	if e.JournalErr != nil {
		msg += fmt.Sprintf(" (the attempt could not be journaled as %s either: %v)", e.User, e.JournalErr)
	}
	return msg
}

func (e *IdentityError) Unwrap() error { return e.Err }

// ExitCode implements exit.Coder.
func (e *IdentityError) ExitCode() int { return exit.Refused }

// classifyWrite is classify for a script that journals e: a refusal of
// the user's rights on e's actor becomes an *IdentityError, and the
// attempt is journaled under the authenticated user when its rights allow.
func (s *Store) classifyWrite(ctx context.Context, op string, err error, e journal.Entry) error {
	err = s.classify(op, err, true)
	var pe *PermissionError
	if !errors.As(err, &pe) || !s.aclSupported || e.Actor == s.user || !strings.Contains(pe.Err.Error(), "key") {
		return err
	}
	if ok, perr := s.mayActAs(ctx, e.Actor); perr != nil || ok {
		return err // refused for another reason than the actor
	}
	ie := &IdentityError{Actor: e.Actor, User: s.user, Op: op, Err: pe}
	r := e
	r.ID, r.Time, r.Hash, r.PrevHash, r.Signature = "", time.Time{}, "", "", ""
	r.Event, r.Actor, r.RedisUser = journal.ActionRefused, s.user, ""
	r.Previous, r.New = nil, nil
	r.Outcome = "refused: identity"
	r.Error = fmt.Sprintf("claimed actor %s: %s", e.Actor, ie.Error())
	ie.Entry, ie.JournalErr = s.Append(ctx, r)
	return ie
}
