package playbooks

import (
	"context"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// ActionLevers pulls a step's levers through an actions.Service, with every
// guard. The journal entries the service writes for a step (planned,
// refused, applied, released) carry the playbook, its version and the step,
// so the exported timeline shows them under the playbook.
type ActionLevers struct {
	Service *actions.Service
}

var _ Levers = ActionLevers{}

// Plan implements Levers.
func (a ActionLevers) Plan(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	res, err := a.stamped(r).Plan(ctx, spec(r))
	return result(res), err
}

// Apply implements Levers.
func (a ActionLevers) Apply(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	res, err := a.stamped(r).Apply(ctx, spec(r))
	return result(res), err
}

// Release implements Levers: it releases the action that holds the lever
// (kind, target) now, which restores the lever that action superseded.
func (a ActionLevers) Release(ctx context.Context, r LeverRequest) (*LeverResult, error) {
	svc := a.stamped(r)
	held, _, _, err := svc.Store.Get(ctx, lever.Kind(r.Kind), r.Target)
	if err != nil || held == nil {
		return &LeverResult{}, err
	}
	res, err := svc.Release(ctx, held.ActionID, r.Actor, r.Reason)
	out := result(res)
	if out != nil {
		out.Released = err == nil
		out.Before = held
	}
	return out, err
}

// CurrentIncident implements Levers.
func (a ActionLevers) CurrentIncident(ctx context.Context) (string, error) {
	inc, err := a.Service.CurrentIncident(ctx)
	if err != nil || inc == nil {
		return "", err
	}
	return inc.ID, nil
}

// stamped is the service with its journal writes attributed to the step.
func (a ActionLevers) stamped(r LeverRequest) *actions.Service {
	return a.Service.Annotated(func(e *journal.Entry) {
		e.Playbook, e.PlaybookVersion, e.Step = r.Playbook, r.PlaybookVersion, r.Step
	})
}

func spec(r LeverRequest) actions.Spec {
	return actions.Spec{Kind: r.Kind, Target: r.Target, Value: r.Value, TTL: r.TTL, Reason: r.Reason, Actor: r.Actor,
		Incident: r.Incident, Force: r.Force, Supersede: r.Supersede, Yes: r.Yes, IdempotencyKey: r.IdempotencyKey}
}

func result(res *actions.Result) *LeverResult {
	if res == nil {
		return nil
	}
	out := &LeverResult{ActionID: res.ActionID, Replayed: res.Replayed, Forced: res.Forced, Raw: res}
	for _, g := range res.Guards {
		out.Guards = append(out.Guards, Guard{Name: g.Guard, Status: g.Status, Detail: g.Detail})
	}
	if len(res.Targets) > 0 {
		t := res.Targets[0]
		out.Before, out.After, out.Evidence = t.Before, t.After, t.Evidence
	}
	return out
}
