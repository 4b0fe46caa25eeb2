package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stormctl/stormctl/internal/atomicfile"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Resynced is what Reapply did with each entry of the written record that
// the journal no longer holds.
type Resynced struct {
	Reapplied []string `json:"reapplied"` // ids of the lost entries re-applied
	Expired   []string `json:"expired"`   // lost applies whose lever has expired since
	Skipped   []string `json:"skipped"`   // superseded since, or already in force
}

// Reapply re-applies the lever writes recorded in the local written record
// at path that the journal lost: an apply whose lever has not expired and
// whose target is free, a release or extension of an action still in force.
// Each goes through the control plane's version check (a lever another
// action holds now is not overwritten) and is journaled as re-applied; a
// lever that has expired since is not re-applied, and a note says which.
// Entries still in the journal are dropped from the record, as are those
// handled, so a second run does nothing.
func (s *Store) Reapply(ctx context.Context, path string) (Resynced, error) {
	res := Resynced{Reapplied: []string{}, Expired: []string{}, Skipped: []string{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("journal written record: %w", err)
	}
	defer f.Close()
	written, err := journal.LocalEntries(f, path)
	if err != nil {
		return res, err
	}
	var present map[string]bool
	now := time.Now()
	for e, err := range written {
		if err != nil {
			return res, err
		}
		if present == nil {
			if present, err = s.journalIDs(ctx, e.Time.Add(-time.Hour)); err != nil {
				return res, err
			}
		}
		if present[e.ID] {
			continue
		}
		done, err := s.reapplyOne(ctx, e, now)
		if err != nil {
			return res, fmt.Errorf("journal sync: re-apply lost entry %s: %w", e.ID, err)
		}
		switch done {
		case "reapplied":
			res.Reapplied = append(res.Reapplied, e.ID)
		case "expired":
			res.Expired = append(res.Expired, e.ID)
		default:
			res.Skipped = append(res.Skipped, e.ID)
		}
	}
	if present == nil {
		return res, nil // an empty record: nothing to drop
	}
	return res, atomicfile.WriteFile(path, nil, 0o600)
}

func (s *Store) reapplyOne(ctx context.Context, e journal.Entry, now time.Time) (string, error) {
	kind := lever.Kind(e.Kind)
	cur, v, _, err := s.Get(ctx, kind, e.Target)
	if err != nil {
		return "", err
	}
	note := journal.Entry{Actor: e.Actor, Incident: e.Incident, ActionID: e.ActionID, Kind: e.Kind, Target: e.Target, Value: e.Value,
		Reason: e.Reason}
	switch {
	case e.Event == journal.ActionApplied && e.New != nil && !e.New.ExpiresAt.After(now):
		note.Event, note.Outcome = journal.Note, fmt.Sprintf("not re-applied by journal sync: lost entry %s set a lever that expired at %s", e.ID, e.New.ExpiresAt.UTC().Format(time.RFC3339))
		_, err := s.Append(ctx, note)
		return "expired", err
	case e.Event == journal.ActionApplied && e.New != nil && cur == nil:
		l := lever.Lever{Kind: kind, Target: e.Target, Value: e.New.Value, ActionID: e.New.ActionID, Actor: e.New.Actor, Reason: e.New.Reason,
			Incident: e.New.Incident, CreatedAt: e.New.CreatedAt, ExpiresAt: e.New.ExpiresAt}
		_, err := s.Apply(ctx, ApplyRequest{Lever: l, Expected: v, Entry: journal.Entry{Actor: e.Actor, Incident: e.Incident, Reason: e.Reason,
			TTL: e.TTL, Forced: e.Forced, Evidence: e.Evidence, Outcome: "re-applied by journal sync after the failover lost entry " + e.ID}})
		return "reapplied", err
	case e.Event == journal.ActionReleased && e.Previous != nil && cur != nil && cur.ActionID == e.Previous.ActionID:
		_, err := s.Release(ctx, ReleaseRequest{Current: cur, Entry: journal.Entry{Actor: e.Actor, Incident: e.Incident, Reason: e.Reason,
			Outcome: "re-applied by journal sync after the failover lost entry " + e.ID}})
		return "reapplied", err
	case e.Event == journal.ActionExtended && e.New != nil && cur != nil && cur.ActionID == e.New.ActionID && cur.ExpiresAt.Before(e.New.ExpiresAt) && e.New.ExpiresAt.After(now):
		_, err := s.Extend(ctx, ExtendRequest{Current: cur, ExpiresAt: e.New.ExpiresAt, Entry: journal.Entry{Actor: e.Actor, Incident: e.Incident,
			Reason: e.Reason, Outcome: "re-applied by journal sync after the failover lost entry " + e.ID}})
		return "reapplied", err
	}
	return "skipped", nil
}

// journalIDs are the ids of the journal's entries since from.
func (s *Store) journalIDs(ctx context.Context, from time.Time) (map[string]bool, error) {
	ids := map[string]bool{}
	for e, err := range journal.Entries(s.Journal().Range(ctx, journal.StreamID(from), "+")) {
		if err != nil {
			return nil, err
		}
		ids[e.ID] = true
	}
	return ids, nil
}
