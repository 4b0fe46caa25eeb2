package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormctl/stormctl/controlplane"
)

// identity reads, once per attempt, who Redis says we are and whether that
// binds the actor (per-person users) or not (one shared user).
func (a *attempt) identity(ctx context.Context) (controlplane.Identity, error) {
	if a.ident != nil {
		return *a.ident, nil
	}
	id, err := a.s.Store.Identity(ctx)
	if err != nil {
		return id, err
	}
	a.ident = &id
	return id, nil
}

// advisory is what a plan, a result or a policy refusal says when roles
// and approvals rest on a typed name: "" once the actor is bound, or
// before the identity was read.
func (a *attempt) advisory() string {
	if a.ident == nil {
		return ""
	}
	return a.ident.Advisory()
}

// withAdvisory adds the advisory to a refusal of the policy or approval
// guard: under a shared user, those rules are only as good as --actor.
func (a *attempt) withAdvisory(v verdict) verdict {
	if adv := a.advisory(); v.refuse != nil && adv != "" {
		v.refuse.Hint = joinNote(v.refuse.Hint, adv)
	}
	return v
}

// sameRedisUser refuses an approval by the Redis user who made the
// request, whatever --actor says, when users are per-person: the
// two-person rule compares authenticated identities.
func (a *attempt) sameRedisUser(id controlplane.Identity) verdict {
	req := a.approval.RequesterUser
	if id.Shared || id.User == "" || req == "" || id.User != req {
		return verdict{}
	}
	return refusal("a different person must approve, logged in to Redis with their own credentials",
		"request %s was made as Redis user %s (actor %s), and you are Redis user %s: nobody approves their own request, whatever --actor says",
		a.approval.ID, req, a.approval.Actor, id.User)
}

// identityRefused says whether err is a write Redis refused because the
// authenticated user may not act as the claimed actor; the control plane
// has journaled it under the authenticated user already, and journaling it
// again as the claimed actor would be refused the same way.
func identityRefused(err error) bool {
	var ie *controlplane.IdentityError
	return errors.As(err, &ie)
}

// approvedNote is the approval entry's outcome: who approved whose
// request, as which Redis users.
func (a *attempt) approvedNote(ap *Approval) string {
	note := fmt.Sprintf("approved request %s of %s", ap.ID, ap.Actor)
	if ap.RequesterUser != "" && ap.ApproverUser != "" {
		note += fmt.Sprintf(" (Redis users %s → %s)", ap.RequesterUser, ap.ApproverUser)
	}
	if adv := a.advisory(); adv != "" {
		note += "; advisory: one shared Redis user"
	}
	return note
}
