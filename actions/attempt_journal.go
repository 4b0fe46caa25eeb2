package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormctl/stormctl/journal"
)

// entry is the journal entry of this attempt for one target.
func (a *attempt) entry(ev journal.Event, target string) journal.Entry {
	kind := a.spec.Kind
	if a.kindOK {
		kind = string(a.ks.Kind)
	}
	e := journal.Entry{Event: ev, Actor: a.actor, Incident: a.incident, ActionID: a.id, Kind: kind, Target: target,
		Value: a.value, TTL: journal.Duration(a.spec.TTL), Reason: a.spec.Reason, Forced: a.forced, Evidence: a.evidence[target]}
	if a.actor == Automation {
		e.RunBy = a.s.RunBy
	}
	e.Restores = a.spec.Restores
	return e
}

// journalRefusal journals a refusal, one entry per target, and returns it.
func (a *attempt) journalRefusal(ctx context.Context, ref *RefusedError) error {
	var errs []error
	for _, name := range a.names() {
		e := a.entry(journal.ActionRefused, name)
		e.Outcome = "refused: " + ref.Guard
		e.Error = ref.Error()
		if st, ok := a.state[name]; ok && ref.Guard == GuardConflict {
			e.Previous = stateOf(st.cur)
		}
		sealed, local, err := a.s.Journal.Append(ctx, e)
		if identityRefused(err) {
			return err // acting as someone else is the refusal that matters
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ref.Entries = append(ref.Entries, sealed.ID)
		ref.Local = ref.Local || local
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (and the refusal could not be journaled: %v)", ref, errors.Join(errs...))
	}
	return ref
}

// failed records an attempt that could not be completed, e.g. because the
// control plane is unreachable (the entry then goes to the local file).
func (a *attempt) failed(ctx context.Context, cause error) error {
	return a.failedAs(ctx, journal.ActionRefused, cause)
}

// failedAs records an attempt that could not be completed as event ev.
func (a *attempt) failedAs(ctx context.Context, ev journal.Event, cause error) error {
	if identityRefused(cause) {
		return cause
	}
	for _, name := range a.names() {
		e := a.entry(ev, name)
		e.Outcome = "error"
		e.Error = cause.Error()
		if _, _, err := a.s.Journal.Append(ctx, e); err != nil {
			return fmt.Errorf("%w (and the attempt could not be journaled: %v)", cause, err)
		}
	}
	return cause
}
