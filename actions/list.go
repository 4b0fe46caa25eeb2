package actions

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// Action states in a listing.
const (
	StateActive     = "active"
	StateSuperseded = "superseded" // held under another action, restored on its release
	StatePending    = "pending approval"
	StateApproved   = "approved"
	StateExpired    = "expired"
	StateReleased   = "released"
)

// ActionInfo is one action (or approval request) in a listing.
type ActionInfo struct {
	ActionID  string    `json:"action_id"`
	RequestID string    `json:"request_id,omitempty"`
	State     string    `json:"state"`
	Kind      Kind      `json:"kind"`
	Targets   []string  `json:"targets"`
	Value     string    `json:"value"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	Incident  string    `json:"incident,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// List returns the active actions (their levers grouped by action id, and
// the actions they superseded) and the pending approval requests. With all,
// it adds ended actions from the journal and requests no longer pending.
func (s *Service) List(ctx context.Context, all bool) ([]ActionInfo, error) {
	levers, err := s.Store.Levers(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]*ActionInfo{}
	var out []*ActionInfo
	add := func(l *lever.Lever, state string) {
		if ai, ok := byID[l.ActionID]; ok {
			if !slices.Contains(ai.Targets, l.Target) {
				ai.Targets = append(ai.Targets, l.Target)
			}
			return
		}
		ai := &ActionInfo{ActionID: l.ActionID, State: state, Kind: l.Kind, Targets: []string{l.Target}, Value: l.Value,
			Actor: l.Actor, Reason: l.Reason, Incident: l.Incident, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt}
		byID[l.ActionID] = ai
		out = append(out, ai)
	}
	for i := range levers {
		add(&levers[i], StateActive)
	}
	now := s.Clock.Now()
	for i := range levers {
		for p := levers[i].Previous; p != nil; p = p.Previous {
			if p.ExpiresAt.After(now) {
				add(p, StateSuperseded)
			}
		}
	}
	aps, err := s.Approvals(ctx)
	if err != nil {
		return nil, err
	}
	for _, ap := range aps {
		state := ap.State(now)
		if state == RequestPending {
			state = StatePending
		} else if !all || byID[ap.ActionID] != nil {
			continue
		}
		ai := &ActionInfo{ActionID: ap.ActionID, RequestID: ap.ID, State: state, Kind: ap.Kind, Targets: strings.Split(ap.Target, ","),
			Value: ap.Value, Actor: ap.Actor, Reason: ap.Reason, Incident: ap.Incident, CreatedAt: ap.CreatedAt, ExpiresAt: ap.ExpiresAt}
		byID[ap.ActionID] = ai
		out = append(out, ai)
	}
	if all {
		ended, err := s.ended(ctx, byID)
		if err != nil {
			return nil, err
		}
		out = append(out, ended...)
	}
	slices.SortStableFunc(out, func(a, b *ActionInfo) int { return a.CreatedAt.Compare(b.CreatedAt) })
	res := make([]ActionInfo, len(out))
	for i, ai := range out {
		res[i] = *ai
	}
	return res, nil
}

// ended reads the journal for actions applied and since released or
// expired, skipping those already listed.
func (s *Service) ended(ctx context.Context, listed map[string]*ActionInfo) ([]*ActionInfo, error) {
	seen := map[string]*ActionInfo{}
	var out []*ActionInfo
	for e, err := range s.Store.Journal(ctx) {
		if err != nil {
			return nil, err
		}
		if e.ActionID == "" || listed[e.ActionID] != nil {
			continue
		}
		ai := seen[e.ActionID]
		switch e.Event {
		case journal.ActionApplied:
			if ai == nil {
				ai = &ActionInfo{ActionID: e.ActionID, State: StateActive, Kind: Kind(e.Kind), Value: e.Value, Actor: e.Actor,
					Reason: e.Reason, Incident: e.Incident, CreatedAt: e.Time}
				if e.New != nil {
					ai.Actor, ai.ExpiresAt = e.New.Actor, e.New.ExpiresAt
				}
				seen[e.ActionID] = ai
				out = append(out, ai)
			}
			if !slices.Contains(ai.Targets, e.Target) {
				ai.Targets = append(ai.Targets, e.Target)
			}
		case journal.ActionReleased, journal.ActionExpired:
			if ai != nil {
				ai.State, ai.ExpiresAt = StateReleased, e.Time
				if e.Event == journal.ActionExpired {
					ai.State = StateExpired
				}
			}
		}
	}
	// An applied action absent from the active levers that the journal
	// does not show ending expired without being reaped yet.
	for _, ai := range out {
		if ai.State == StateActive {
			ai.State = StateExpired
		}
	}
	return out, nil
}
