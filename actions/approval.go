package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/journal"
)

// RequestTTL is how long an approval request waits for a second person.
const RequestTTL = time.Hour

// requestsCollection holds approval requests in the control plane.
const requestsCollection = "requests"

// Request statuses.
const (
	RequestPending  = "pending"
	RequestApproved = "approved"
)

// Approval is a request for an action that needs a second person. The
// action id is fixed when it is requested, so the journal links the two.
type Approval struct {
	ID        string             `json:"id"`
	ActionID  string             `json:"action_id"`
	Kind      Kind               `json:"kind"`
	Target    string             `json:"target"`
	Value     string             `json:"value"`
	TTL       journal.Duration   `json:"ttl"`
	Reason    string             `json:"reason"`
	Actor     string             `json:"actor"`
	Incident  string             `json:"incident,omitempty"`
	Force     bool               `json:"force,omitempty"`
	Supersede bool               `json:"supersede,omitempty"`
	Targets   int                `json:"targets,omitempty"`
	Evidence  []journal.Evidence `json:"evidence,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
	ExpiresAt time.Time          `json:"expires_at"`
	Status    string             `json:"status"`
	// ApprovedBy and ApprovedAt are set once a second person approved.
	ApprovedBy string     `json:"approved_by,omitempty"`
	ApprovedAt *time.Time `json:"approved_at,omitempty"`
	// RequesterUser and ApproverUser are the Redis users the server
	// authenticated (ACL WHOAMI); with per-person users the two-person
	// rule compares them, whatever --actor said.
	RequesterUser string `json:"requester_redis_user,omitempty"`
	ApproverUser  string `json:"approver_redis_user,omitempty"`
}

// State is the request's status now: pending, approved or expired.
func (ap *Approval) State(now time.Time) string {
	if ap.Status == RequestPending && !now.Before(ap.ExpiresAt) {
		return "expired"
	}
	return ap.Status
}

func (ap *Approval) spec() Spec {
	return Spec{Kind: string(ap.Kind), Target: ap.Target, Value: ap.Value, TTL: time.Duration(ap.TTL), Reason: ap.Reason,
		Actor: ap.Actor, Incident: ap.Incident, Force: ap.Force, Supersede: ap.Supersede, Targets: ap.Targets}
}

// Request runs the guards up to approval and records a request for a
// second person, journaled as action.requested.
func (s *Service) Request(ctx context.Context, spec Spec) (*Result, *Approval, error) {
	a := s.begin(spec, modeRequest)
	ref, err := a.run(ctx)
	if err != nil {
		return nil, nil, a.failed(ctx, err)
	}
	if ref != nil {
		return a.result(modeRequest), nil, a.journalRefusal(ctx, ref)
	}
	ap, err := a.request(ctx)
	if err != nil {
		return nil, nil, err
	}
	res := a.result(modeRequest)
	res.RequestID = ap.ID
	return res, ap, nil
}

func (a *attempt) newApproval() *Approval {
	now := a.s.Clock.Now().UTC()
	ap := &Approval{ID: journal.NewID(), ActionID: a.id, Kind: a.ks.Kind, Target: strings.Join(a.names(), ","), Value: a.value,
		TTL: journal.Duration(a.spec.TTL), Reason: a.spec.Reason, Actor: a.actor, Incident: a.incident, Force: a.spec.Force,
		Supersede: a.spec.Supersede, Targets: a.spec.Targets, CreatedAt: now, ExpiresAt: now.Add(RequestTTL), Status: RequestPending}
	if a.ident != nil {
		ap.RequesterUser = a.ident.User
	}
	for _, t := range a.targets {
		ap.Evidence = append(ap.Evidence, a.evidence[t.Name]...)
	}
	return ap
}

func (a *attempt) request(ctx context.Context) (*Approval, error) {
	ap := a.newApproval()
	raw, err := json.Marshal(ap)
	if err != nil {
		return nil, err
	}
	e := a.entry(journal.ActionRequested, ap.Target)
	e.Evidence = ap.Evidence
	e.Outcome = "pending approval: request " + ap.ID
	if _, err := a.s.Store.SwapRecord(ctx, requestsCollection, ap.ID, "", string(raw), e); err != nil {
		return nil, a.failed(ctx, err)
	}
	return ap, nil
}

// Approve applies request id as approver, who must be someone other than
// the requester. The guards run again now (evidence may have changed),
// with the approver's confirmation and rate budget. Approving again after
// a failure retries the apply; it never applies twice.
func (s *Service) Approve(ctx context.Context, id, approver string, yes bool) (*Result, error) {
	approver, actorErr := actorInput(approver)
	ap, raw, err := s.approval(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	switch {
	case ap == nil:
		return nil, &NotFoundError{What: "approval request", ID: id, Detail: "see `stormctl action list --all`"}
	case ap.State(now) == "expired":
		return nil, &NotFoundError{What: "approval request", ID: id, Detail: "it expired at " + ap.ExpiresAt.UTC().Format(time.RFC3339) + "; request it again"}
	case ap.Status == RequestApproved && ap.ApprovedBy != approver:
		return nil, &NotFoundError{What: "approval request", ID: id, Detail: "it was already approved by " + ap.ApprovedBy}
	}
	spec := ap.spec()
	spec.Yes = yes
	a := s.begin(spec, modeApprove)
	a.id, a.actor, a.approval, a.approvalRaw = ap.ActionID, approver, ap, raw
	a.inputErrs["actor"] = actorErr // the approver acts now; the request checked the requester
	return s.apply(ctx, a)
}

// approve marks the request approved and journals action.approved, in one
// script; a second approver racing this one gets a conflict.
func (a *attempt) approve(ctx context.Context) error {
	ap := *a.approval
	now := a.s.Clock.Now().UTC()
	ap.Status, ap.ApprovedBy, ap.ApprovedAt = RequestApproved, a.actor, &now
	if a.ident != nil {
		ap.ApproverUser = a.ident.User
	}
	raw, err := json.Marshal(ap)
	if err != nil {
		return err
	}
	e := a.entry(journal.ActionApproved, ap.Target)
	e.Outcome = a.approvedNote(&ap)
	sealed, err := a.s.Store.SwapRecord(ctx, requestsCollection, ap.ID, a.approvalRaw, string(raw), e)
	if err != nil {
		return a.failed(ctx, err)
	}
	a.approval, a.head = &ap, sealed.Hash
	return nil
}

func (s *Service) approval(ctx context.Context, id string) (*Approval, string, error) {
	raw, err := s.Store.Record(ctx, requestsCollection, id)
	if err != nil || raw == "" {
		return nil, "", err
	}
	var ap Approval
	if err := json.Unmarshal([]byte(raw), &ap); err != nil {
		return nil, "", fmt.Errorf("approval request %s: %w", id, err)
	}
	return &ap, raw, nil
}

// Approvals lists every approval request, oldest first.
func (s *Service) Approvals(ctx context.Context) ([]Approval, error) {
	all, err := s.Store.Records(ctx, requestsCollection)
	if err != nil {
		return nil, err
	}
	out := make([]Approval, 0, len(all))
	for _, id := range sortedKeys(all) {
		var ap Approval
		if json.Unmarshal([]byte(all[id]), &ap) == nil {
			out = append(out, ap)
		}
	}
	return out, nil
}
