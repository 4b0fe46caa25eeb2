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
	"github.com/stormctl/stormctl/lever"
)

// ErrUnavailable matches (errors.Is) every error caused by Redis being
// unreachable. It is journal.ErrUnavailable, so that journal.Writer falls
// back to its local file on exactly these errors.
var ErrUnavailable = journal.ErrUnavailable

// UnavailableError reports that Redis could not be reached, naming the
// address (never the password) and what was not done.
type UnavailableError struct {
	Addr string // redacted URL
	Op   string // what was attempted, e.g. "apply retries:checkout"
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: control-plane Redis at %s is unreachable (%v); nothing was changed", e.Op, e.Addr, e.Err)
}

// Unwrap returns both the cause and ErrUnavailable.
func (e *UnavailableError) Unwrap() []error { return []error{e.Err, ErrUnavailable} }

// UncertainError reports a write whose reply was lost: the script may or
// may not have run. Retry with the same idempotency key, or check
// `stormctl status` and the journal.
type UncertainError struct {
	Addr string
	Op   string
	Err  error
}

func (e *UncertainError) Error() string {
	return fmt.Sprintf("%s: the reply from %s was lost (%v); the change may or may not have been made: check `stormctl status` before retrying, or retry with the same --idempotency-key", e.Op, e.Addr, e.Err)
}

func (e *UncertainError) Unwrap() error { return e.Err }

// PermissionError reports that the Redis server refused a command under the
// authenticated user's ACL (NOPERM). It exits 3, like any refusal.
type PermissionError struct {
	User string
	Op   string
	Err  error
}

func (e *PermissionError) Error() string {
	user := e.User
	if user == "" {
		user = "the authenticated user"
	}
	return fmt.Sprintf("%s: refused by the Redis server: %s may not do this (%v); nothing was changed", e.Op, user, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// ExitCode implements exit.Coder.
func (e *PermissionError) ExitCode() int { return exit.Refused }

// ConflictError reports that the lever's version moved since it was read:
// someone else wrote it first. Holder is the lever now active, nil when the
// lever is absent (released or expired).
type ConflictError struct {
	Kind     lever.Kind
	Target   string
	Expected int64
	Actual   int64
	Holder   *lever.Lever
	// Entry is the action.refused entry that recorded this attempt.
	Entry journal.Entry
}

func (e *ConflictError) Error() string {
	m := lever.Member(e.Kind, e.Target)
	if e.Holder == nil {
		return fmt.Sprintf("%s changed since it was read (version %d, now %d) and is not active now", m, e.Expected, e.Actual)
	}
	h := e.Holder
	return fmt.Sprintf("%s is held by action %s of %s since %s (%q, value %s); it changed since it was read (version %d, now %d)",
		m, h.ActionID, h.Actor, h.CreatedAt.UTC().Format(time.RFC3339), h.Reason, h.Value, e.Expected, e.Actual)
}

// ExitCode implements exit.Coder.
func (e *ConflictError) ExitCode() int { return exit.Conflict }

// NotActiveError reports a release or extend of a lever that is no longer
// active: it expired or was released already.
type NotActiveError struct {
	Kind   lever.Kind
	Target string
}

func (e *NotActiveError) Error() string {
	return fmt.Sprintf("%s is not active (it expired or was released)", lever.Member(e.Kind, e.Target))
}

// ExitCode implements exit.Coder.
func (e *NotActiveError) ExitCode() int { return exit.Conflict }

// classify turns a go-redis error into one of the typed errors above.
// write says whether the command may have changed state when it failed.
func (s *Store) classify(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr) && isPermission(rerr.Error()):
		return &PermissionError{User: s.user, Op: op, Err: s.redact(err)}
	case errors.As(err, &rerr):
		return fmt.Errorf("%s: %w", op, s.redact(err))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case write && !isDialError(err):
		return &UncertainError{Addr: s.ep.display, Op: op, Err: s.redact(err)}
	}
	return &UnavailableError{Addr: s.ep.display, Op: op, Err: s.redact(err)}
}

// isPermission recognises ACL refusals: NOPERM for a command, and the
// error a script gets when it runs a command its caller may not.
func isPermission(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "user executing the script can't run")
}

// isDialError says the command never left: no connection could be made.
func isDialError(err error) bool {
	msg := err.Error()
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) ||
		strings.Contains(msg, "dial tcp") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "no such host")
}

func (s *Store) redact(err error) error { return &redacted{err: err, secret: s.ep.password} }
