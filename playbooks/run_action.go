package playbooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/lever"
)

// Plan runs the guards of an action step without changing anything, so a
// responder sees the evidence and the diff before confirming. A release
// step has nothing to plan: it returns nil.
func (r *Run) Plan(ctx context.Context, id string, in Input) (*LeverResult, error) {
	s := r.pb.Step(id)
	switch {
	case s == nil:
		return nil, r.unknownStep(id)
	case s.Type != Action:
		return nil, &ParamError{Msg: fmt.Sprintf("step %s is a %s step, not an action", id, s.Type)}
	case s.Op == OpRelease:
		return nil, nil
	}
	req := r.leverRequest(s, in)
	req.Yes = false
	return r.env.Levers.Plan(ctx, req)
}

func (r *Run) action(ctx context.Context, s *Step, in Input) (StepState, error) {
	req := r.leverRequest(s, in)
	st := StepState{Reason: req.Reason, Forced: s.Force}
	// A step done before replays its first result through the idempotency
	// key: it is not held to the evidence of now.
	if r.states[s.ID].Status != Passed {
		if err := r.requirements(ctx, s, in); err != nil {
			return st, err
		}
	}
	if s.Op == OpRelease {
		res, err := r.env.Levers.Release(ctx, req)
		if err != nil {
			return st, err
		}
		st.Status, st.Plan, st.ActionID = Passed, res.Raw, res.ActionID
		st.Outcome = fmt.Sprintf("nothing to release: no %s lever on %s", req.Kind, req.Target)
		if res.Released {
			st.Outcome = fmt.Sprintf("released action %s (%s %s on %s)", res.ActionID, req.Kind, leverValue(res.Before), req.Target)
			if res.After != nil {
				st.Outcome += fmt.Sprintf("; restored %s of action %s", res.After.Value, res.After.ActionID)
			}
		}
		return st, nil
	}
	res, err := r.env.Levers.Apply(ctx, req)
	if res != nil {
		st.Plan, st.Evidence, st.ActionID, st.Forced = res.Raw, res.Evidence, res.ActionID, res.Forced
	}
	if err != nil {
		return st, err
	}
	st.Status = Passed
	if res.Replayed {
		st.Outcome = fmt.Sprintf("already applied by this step for incident %s (action %s); nothing changed", r.opts.Incident, res.ActionID)
		return st, nil
	}
	st.Outcome = fmt.Sprintf("applied %s=%s on %s (action %s)", req.Kind, req.Value, req.Target, res.ActionID)
	if res.After != nil {
		st.Outcome += ", expires " + res.After.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return st, nil
}

// requirements makes sure every check an action requires passed in this
// run within conditionMaxAge, evaluating again the ones that did not (a
// resumed run, or a check passed minutes ago), so a lever is never pulled
// on stale evidence.
func (r *Run) requirements(ctx context.Context, s *Step, in Input) error {
	for _, id := range s.Requires {
		if !r.current(id) {
			if _, err := r.RunStep(ctx, id, in); err != nil && !isCheckFailure(err) {
				return err
			}
		}
		if st := r.states[id]; st.Status != Passed {
			outcome := st.Outcome
			if st.Error != "" {
				outcome = st.Error
			}
			return &RequirementError{Step: s.ID, Required: id, Outcome: outcome}
		}
	}
	return nil
}

// leverRequest renders an action step. The idempotency key names the
// incident, playbook, step and lever, so re-running the step for the same
// incident returns the first result instead of acting twice.
func (r *Run) leverRequest(s *Step, in Input) LeverRequest {
	req := LeverRequest{Kind: s.Kind, Target: render(s.Target, r.params), Value: render(s.Value, r.params),
		TTL: s.TTL.D(), Reason: r.reason(s, in), Actor: r.opts.Actor, Incident: r.opts.Incident,
		Force: s.Force || in.Force, Supersede: s.Supersede, Yes: in.Yes,
		Playbook: r.pb.Name, PlaybookVersion: r.pb.Version, Step: s.ID}
	if r.opts.Incident != "" && s.Op != OpRelease {
		req.IdempotencyKey = strings.Join([]string{"playbook", r.opts.Incident, r.pb.Name, s.ID, s.Kind, req.Target, req.Value}, "/")
	}
	return req
}

// reason is the step's reason with the responder's words after it.
func (r *Run) reason(s *Step, in Input) string {
	reason := render(s.Reason, r.params)
	if reason == "" {
		reason = fmt.Sprintf("playbook %s, step %s", r.pb.Name, s.ID)
	}
	extra := in.Reason
	if extra == "" {
		extra = r.opts.Reason
	}
	if extra != "" {
		reason += " — " + extra
	}
	return reason
}

func leverValue(l *lever.Lever) string {
	if l == nil {
		return "(unknown value)"
	}
	return l.Value
}

// isCheckFailure reports an error that only says a check's expectation was
// unmet; the caller turns it into a refusal of the step that required it.
func isCheckFailure(err error) bool { return exit.Code(err) == exit.CheckFailed }
