package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"

	"github.com/stormctl/stormctl/controlplane"
)

// GuardIdempotency names the check that an idempotency key answers only
// the request it was first used for. It is not one of the ordered guards:
// it runs before them, and its refusal exits 2.
const GuardIdempotency = "idempotency"

// requestHash binds an idempotency key to what was asked, as payment APIs
// do: the kind, the targets, the value, the TTL, the incident and the
// overrides. A retried step hashes the same; the key reused for anything
// else does not. How the reason is worded is not part of what the request
// does. Who asks is checked apart (controlplane.CheckReplay): a key
// answers only the actor who first used it, so another actor's reuse is
// refused, journaled, and changes nothing. An approval's key is bound by
// its request id already, so it has no hash.
func (a *attempt) requestHash() string {
	if a.spec.IdempotencyKey == "" || a.approval != nil {
		return ""
	}
	targets := make([]string, 0, a.total)
	if a.kindOK {
		if ts, err := a.ks.ParseTargets(a.spec.Target); err == nil {
			for _, t := range ts {
				targets = append(targets, t.Name)
			}
		}
	}
	if len(targets) == 0 {
		targets = append(targets, a.spec.Target)
	}
	slices.Sort(targets)
	kind := a.spec.Kind
	if a.kindOK {
		kind = string(a.ks.Kind)
	}
	b, _ := json.Marshal(struct {
		Kind      string   `json:"kind"`
		Targets   []string `json:"targets"`
		Value     string   `json:"value"`
		TTL       int64    `json:"ttl_ns"`
		Incident  string   `json:"incident"`
		Force     bool     `json:"force"`
		Supersede bool     `json:"supersede"`
		Count     int      `json:"count"`
	}{kind, targets, a.value, int64(a.spec.TTL), a.spec.Incident, a.spec.Force, a.spec.Supersede, a.spec.Targets})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// keyReused turns a key that answered another request into a journaled
// refusal; ok is false for any other error.
func (a *attempt) keyReused(ctx context.Context, err error) (error, bool) {
	var reused *controlplane.KeyReusedError
	if !errors.As(err, &reused) {
		return err, false
	}
	a.guards = append(a.guards, GuardResult{Guard: GuardIdempotency, Status: StatusRefused, Detail: reused.Error()})
	return a.journalRefusal(ctx, &RefusedError{Guard: GuardIdempotency, Reason: reused.Error(),
		Hint: "retry with the same arguments to get the first result, or pass a new --idempotency-key"}), true
}

// settleExpiry gives a result the expiry of the levers actually written
// (or replayed), so that a replay returns exactly what the first apply did.
func settleExpiry(r *Result) {
	if len(r.Targets) == 0 || r.Targets[0].After == nil {
		return
	}
	exp := r.Targets[0].After.ExpiresAt.UTC()
	r.ExpiresAt = &exp
}
