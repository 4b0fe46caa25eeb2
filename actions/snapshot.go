package actions

import (
	"context"

	"github.com/stormctl/stormctl/controlplane"
)

// read takes, once per attempt and in one round trip, everything the
// guards and the write read from the control plane: the levers, their
// versions, the journal head, the incident, the actor's rate budget and
// the idempotency replays. A guarded apply is then this read and one
// script per target. The script re-checks what can move meanwhile (the
// evidence guard may wait seconds on Prometheus): a lever written since is
// refused as a conflict, a budget spent since as the rate limit, and a
// moved journal head is retried; none of them writes anything.
func (a *attempt) read(ctx context.Context) (*controlplane.Snapshot, error) {
	if a.snap != nil {
		return a.snap, nil
	}
	req := controlplane.SnapshotRequest{Kind: a.ks.Kind, Rate: a.rateCharge()}
	for _, t := range a.targets {
		req.Targets = append(req.Targets, t.Name)
		req.IdempotencyKeys = append(req.IdempotencyKeys, a.idemKey(t.Name))
	}
	switch {
	case a.approval != nil: // the request fixed the incident
	case a.spec.Incident == "":
		req.Records = []controlplane.RecordRef{{Collection: incidentsCollection}}
	default:
		req.Records = []controlplane.RecordRef{{Collection: incidentsCollection, ID: a.spec.Incident}}
	}
	snap, err := a.s.Store.Snapshot(ctx, req)
	if err != nil {
		return nil, err
	}
	a.snap, a.head = snap, snap.Head
	return snap, nil
}

// rateCharge is the budget this attempt's actor spends: the requester's
// on apply, the approver's on approve.
func (a *attempt) rateCharge() *controlplane.RateCharge {
	return &controlplane.RateCharge{Actor: a.actor, Limit: a.s.Policy.RateLimit()}
}
