package actions

import (
	"fmt"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/lever"
)

// Guard names, in the order the guards run.
const (
	GuardValidation   = "validation"
	GuardPolicy       = "policy"
	GuardReason       = "reason"
	GuardTTL          = "ttl"
	GuardEvidence     = "evidence"
	GuardBlastRadius  = "blast-radius"
	GuardApproval     = "approval"
	GuardConflict     = "conflict"
	GuardRateLimit    = "rate-limit"
	GuardConfirmation = "confirmation"
)

// Guards lists every guard in order.
var Guards = []string{GuardValidation, GuardPolicy, GuardReason, GuardTTL, GuardEvidence,
	GuardBlastRadius, GuardApproval, GuardConflict, GuardRateLimit, GuardConfirmation}

// RefusedError is a guard's refusal. Nothing was changed except the
// action.refused journal entries named in Entries. It exits 3, 6 for the
// conflict guard, or 2 for an idempotency key reused with other arguments.
type RefusedError struct {
	Guard  string
	Reason string
	Hint   string       // what would let the action through, if anything
	Holder *lever.Lever // conflict: the lever already held
	// Entries are the ids of the action.refused journal entries.
	Entries []string
	// Local is true when the refusal was journaled in the local pending
	// file because the control plane was unreachable.
	Local bool
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("refused by the %s guard: %s", e.Guard, e.Reason)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ExitCode implements exit.Coder.
func (e *RefusedError) ExitCode() int {
	switch e.Guard {
	case GuardConflict:
		return exit.Conflict
	case GuardIdempotency:
		return exit.Usage
	}
	return exit.Refused
}

// PendingError reports that an action waits for a second person: the
// request is recorded and journaled. It exits 5.
type PendingError struct {
	Request *Approval
	// Planned is true in a plan: no request was recorded.
	Planned bool
}

func (e *PendingError) Error() string {
	r := e.Request
	if e.Planned {
		return fmt.Sprintf("%s %s=%s needs approval by someone other than %s: apply would record a request and exit 5", r.Kind, r.Target, r.Value, r.Actor)
	}
	return fmt.Sprintf("approval pending, nothing changed yet: %s %s=%s needs approval by someone other than %s: request %s waits until %s; to apply it, someone else runs `stormctl action approve %s`",
		r.Kind, r.Target, r.Value, r.Actor, r.ID, r.ExpiresAt.UTC().Format(time.RFC3339), r.ID)
}

// ExitCode implements exit.Coder.
func (e *PendingError) ExitCode() int { return exit.Pending }

// NotFoundError reports an action, request or incident id that is not
// active (or never was). It exits 1.
type NotFoundError struct {
	What, ID, Detail string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no active %s %s", e.What, e.ID)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// held describes a lever's holder for messages.
func held(l *lever.Lever) string {
	return fmt.Sprintf("%s=%s by action %s of %s since %s (%q, %s left)", l.Target, l.Value, l.ActionID, l.Actor,
		l.CreatedAt.UTC().Format(time.RFC3339), l.Reason, time.Until(l.ExpiresAt).Round(time.Second))
}
