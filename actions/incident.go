package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
)

// incidentsCollection holds incidents in the control plane.
const incidentsCollection = "incidents"

// Incident is a named response; the current one (the latest opened that is
// still open) is attached to every action by default.
type Incident struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	OpenedBy string     `json:"opened_by"`
	OpenedAt time.Time  `json:"opened_at"`
	ClosedBy string     `json:"closed_by,omitempty"`
	ClosedAt *time.Time `json:"closed_at,omitempty"`
}

// IsOpen says whether the incident has not been closed.
func (i *Incident) IsOpen() bool { return i.ClosedAt == nil }

// maxTitle bounds an incident title, which lands in every export.
const maxTitle = 200

// OpenIncident opens an incident and journals incident.opened; it becomes
// the current incident.
func (s *Service) OpenIncident(ctx context.Context, title, actor string) (*Incident, error) {
	title, err := sanitize.Input("incident title", title) // line breaks fold; control characters are refused
	if err == nil {
		_, err = sanitize.Input("actor", actor)
	}
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	if title == "" || len(title) > maxTitle {
		return nil, exit.NewUsage(fmt.Errorf("an incident title is one line of 1 to %d characters", maxTitle))
	}
	inc := &Incident{ID: journal.NewID(), Title: title, OpenedBy: actor, OpenedAt: s.Clock.Now().UTC()}
	raw, err := json.Marshal(inc)
	if err != nil {
		return nil, err
	}
	e := journal.Entry{Event: journal.IncidentOpened, Time: inc.OpenedAt, Actor: actor, Incident: inc.ID, Reason: title, Outcome: "opened"}
	if _, err := s.Store.SwapRecord(ctx, incidentsCollection, inc.ID, "", string(raw), e); err != nil {
		return nil, err
	}
	return inc, nil
}

// CloseIncident closes incident id ("" for the current one) and journals
// incident.closed with the reason given ("" journals the incident's title).
func (s *Service) CloseIncident(ctx context.Context, id, actor, reason string) (*Incident, error) {
	reason, err := sanitize.Input("reason", reason)
	if err != nil {
		return nil, exit.NewUsage(err)
	}
	if id == "" {
		cur, err := s.CurrentIncident(ctx)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, &NotFoundError{What: "incident", ID: "(current)", Detail: "no incident is open"}
		}
		id = cur.ID
	}
	raw, err := s.Store.Record(ctx, incidentsCollection, id)
	if err != nil {
		return nil, err
	}
	if raw == "" {
		return nil, &NotFoundError{What: "incident", ID: id, Detail: "see `stormctl incident list`"}
	}
	inc, err := decodeIncident(id, raw)
	if err != nil {
		return nil, err
	}
	if !inc.IsOpen() {
		return nil, &NotFoundError{What: "incident", ID: id, Detail: "it was closed at " + inc.ClosedAt.Format(time.RFC3339) + " by " + inc.ClosedBy}
	}
	now := s.Clock.Now().UTC()
	inc.ClosedBy, inc.ClosedAt = actor, &now
	next, err := json.Marshal(inc)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = inc.Title
	}
	e := journal.Entry{Event: journal.IncidentClosed, Time: now, Actor: actor, Incident: inc.ID, Reason: reason, Outcome: "closed"}
	if _, err := s.Store.SwapRecord(ctx, incidentsCollection, id, raw, string(next), e); err != nil {
		return nil, err
	}
	return inc, nil
}

// Incidents lists every incident, oldest first. A record that does not
// decode is reported beside the others.
func (s *Service) Incidents(ctx context.Context) ([]Incident, error) {
	all, err := s.Store.Records(ctx, incidentsCollection)
	if err != nil {
		return nil, err
	}
	out, bad := decodeIncidents(all)
	return out, errors.Join(bad...)
}

func decodeIncidents(all map[string]string) ([]Incident, []error) {
	out := make([]Incident, 0, len(all))
	var bad []error
	for id, raw := range all {
		var inc Incident
		if err := json.Unmarshal([]byte(raw), &inc); err != nil {
			bad = append(bad, fmt.Errorf("incident %s: %w", id, err))
			continue
		}
		out = append(out, inc)
	}
	slices.SortFunc(out, func(a, b Incident) int {
		if c := a.OpenedAt.Compare(b.OpenedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, bad
}

// CurrentIncident is the latest opened incident still open, nil if none.
func (s *Service) CurrentIncident(ctx context.Context) (*Incident, error) {
	all, err := s.Store.Records(ctx, incidentsCollection)
	if err != nil {
		return nil, err
	}
	return currentIncident(all), nil
}

// currentIncident picks the current incident from every incident record.
// A damaged record is skipped: it must not stop anyone pulling a lever.
func currentIncident(all map[string]string) *Incident {
	incs, _ := decodeIncidents(all)
	for i := len(incs) - 1; i >= 0; i-- {
		if incs[i].IsOpen() {
			return &incs[i]
		}
	}
	return nil
}

// decodeIncident reads the record of incident id; "" is no incident.
func decodeIncident(id, raw string) (*Incident, error) {
	if raw == "" {
		return nil, nil
	}
	var inc Incident
	if err := json.Unmarshal([]byte(raw), &inc); err != nil {
		return nil, fmt.Errorf("incident %s: %w", id, err)
	}
	return &inc, nil
}
