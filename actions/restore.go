package actions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// What `journal sync` did with a lost write (Restore.Outcome).
const (
	RestoreApplied = "restored" // re-applied through the guards
	RestorePending = "pending"  // re-requested: the kind needs a second person
	RestoreRefused = "refused"  // a guard refused; nothing changed, tried again next sync
	RestoreExpired = "expired"  // its lever has expired since: not re-applied
	RestoreSkipped = "skipped"  // nothing to do: released, superseded or in force since
)

// RestoreOptions say how lost writes are re-applied.
type RestoreOptions struct {
	// Actor syncs: each re-apply is this actor's action, through the
	// guards with this actor's role, rate budget and Redis credentials.
	Actor string
	// Force re-applies without supporting evidence (journaled as forced);
	// a lost apply that was forced is forced again without it.
	Force bool
}

// Restore is what `journal sync` did with one lost write.
type Restore struct {
	Lost    string        `json:"lost"` // the lost entry's id
	Event   journal.Event `json:"event"`
	Actor   string        `json:"actor"` // who wrote it
	Kind    string        `json:"kind,omitempty"`
	Target  string        `json:"target,omitempty"`
	Outcome string        `json:"outcome"`
	Detail  string        `json:"detail,omitempty"`
	// ActionID and RequestID are the restoring action and its request.
	ActionID  string `json:"action_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Entries are the journal entries written for it.
	Entries []string `json:"entries,omitempty"`
	// Replicated is false when the re-apply was made but not confirmed.
	Replicated *bool `json:"replicated,omitempty"`
}

// SyncLost re-applies the lost writes lw found in the written record at
// path (controlplane.Store.LostWrites), each through the same path a
// person's apply, release or extend takes, as o.Actor, journaled as a
// restore naming the lost entry and its actor. A lever that has expired
// since is not re-applied and a note says which; a guard refusal is
// journaled, changes nothing and stays in the record for the next sync.
// Everything else is forgotten from the record. The error is a failure to
// go on (the control plane lost again); an unconfirmed re-apply is a
// *controlplane.UnreplicatedError after all of them.
func (s *Service) SyncLost(ctx context.Context, path string, lw controlplane.LostWrites, o RestoreOptions) ([]Restore, error) {
	out := []Restore{}
	done := map[string]bool{}
	for id := range lw.Done {
		done[id] = true
	}
	var unreplicated error
	var failed error
	for _, e := range lw.Lost {
		r, err := s.restore(ctx, e, o)
		var ue *controlplane.UnreplicatedError
		if errors.As(err, &ue) {
			unreplicated, err = ue, nil
		}
		if err != nil {
			failed = fmt.Errorf("journal sync: restore lost entry %s: %w", e.ID, err)
			break
		}
		out = append(out, r)
		if r.Outcome != RestoreRefused {
			done[e.ID] = true
		}
	}
	if err := journal.DropWritten(path, done); err != nil && failed == nil {
		failed = err
	}
	if failed != nil {
		return out, failed
	}
	return out, unreplicated
}

// restore re-applies one lost write.
func (s *Service) restore(ctx context.Context, e journal.Entry, o RestoreOptions) (Restore, error) {
	r := Restore{Lost: e.ID, Event: e.Event, Actor: e.Who(), Kind: e.Kind, Target: e.Target}
	mark := &journal.Restored{Entry: e.ID, Event: e.Event, Actor: e.Who()}
	reason := fmt.Sprintf("restore of %s's %s lost in a failover (entry %s): %s", e.Who(), e.Event, e.ID, e.Reason)
	now := s.Clock.Now()
	switch {
	case e.Event == journal.ActionApplied && e.New != nil:
		left := e.New.ExpiresAt.Sub(now).Truncate(time.Second)
		if left < MinTTL {
			return s.expired(ctx, r, e, mark, o)
		}
		res, err := s.Apply(ctx, Spec{Kind: e.Kind, Target: e.Target, Value: e.New.Value, TTL: left, Reason: reason, Actor: o.Actor,
			Incident: e.Incident, Force: e.Forced || o.Force, Yes: true, Restores: mark})
		return settleRestore(r, res, err)
	case e.Event == journal.ActionReleased:
		res, err := s.ReleaseWith(ctx, e.ActionID, o.Actor, reason, ChangeOptions{Restores: mark})
		return settleRestore(r, res, err)
	case e.Event == journal.ActionExtended && e.New != nil:
		left := e.New.ExpiresAt.Sub(now).Truncate(time.Second)
		if left < MinTTL {
			return s.expired(ctx, r, e, mark, o)
		}
		cur, _, _, err := s.Store.Get(ctx, lever.Kind(e.Kind), e.Target)
		switch {
		case err != nil:
			return r, err
		case cur == nil || cur.ActionID != e.ActionID:
			r.Outcome, r.Detail = RestoreSkipped, "action "+e.ActionID+" no longer holds the lever"
			return r, nil
		case !cur.ExpiresAt.Before(now.Add(left)):
			r.Outcome, r.Detail = RestoreSkipped, "already in force until "+cur.ExpiresAt.UTC().Format(time.RFC3339)
			return r, nil
		}
		res, err := s.ExtendWith(ctx, e.ActionID, o.Actor, reason, left, ChangeOptions{Restores: mark})
		return settleRestore(r, res, err)
	}
	r.Outcome, r.Detail = RestoreSkipped, "not a lever write"
	return r, nil
}

// expired journals that a lost write is not re-applied because its lever
// has expired since.
func (s *Service) expired(ctx context.Context, r Restore, e journal.Entry, mark *journal.Restored, o RestoreOptions) (Restore, error) {
	r.Outcome = RestoreExpired
	r.Detail = "its lever expired at " + e.New.ExpiresAt.UTC().Format(time.RFC3339) + "; not re-applied"
	note := journal.Entry{Event: journal.Note, Actor: o.Actor, Incident: e.Incident, ActionID: e.ActionID, Kind: e.Kind, Target: e.Target,
		Value: e.Value, Reason: fmt.Sprintf("journal sync: %s's %s (entry %s) was lost in a failover", e.Who(), e.Event, e.ID),
		Outcome: "not re-applied: " + r.Detail, Restores: mark}
	if o.Actor == Automation {
		note.RunBy = s.RunBy
	}
	sealed, _, err := s.Journal.Append(ctx, note)
	if err != nil {
		return r, err
	}
	r.Entries = []string{sealed.ID}
	return r, nil
}

// settleRestore reads an apply's, release's or extension's answer.
func settleRestore(r Restore, res *Result, err error) (Restore, error) {
	var ref *RefusedError
	var pend *PendingError
	var gone *NotFoundError
	var ue *controlplane.UnreplicatedError
	switch {
	case errors.As(err, &ref):
		r.Outcome, r.Detail, r.Entries = RestoreRefused, ref.Error(), ref.Entries
		return r, nil
	case errors.As(err, &pend):
		r.Outcome, r.RequestID = RestorePending, pend.Request.ID
		r.Detail = "needs approval by a second person: stormctl action approve " + pend.Request.ID
		return r, nil
	case errors.As(err, &gone):
		r.Outcome, r.Detail = RestoreSkipped, gone.Error()
		return r, nil
	case err != nil && !errors.As(err, &ue):
		return r, err
	}
	r.Outcome, r.ActionID = RestoreApplied, res.ActionID
	for _, t := range res.Targets {
		r.Entries = append(r.Entries, t.JournalEntry)
	}
	if ue != nil {
		r.Replicated, r.Detail = res.Replicated, ue.Error()
	}
	return r, err
}
