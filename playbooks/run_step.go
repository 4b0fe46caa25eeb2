package playbooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
)

// RunStep runs step id now and journals its outcome, whatever its state:
// a step done before runs again, and an action step applied before for the
// same incident is a no-op through its idempotency key. A step whose when
// condition does not hold is skipped. The error, for a step that stops the
// run, is a *StepError with the exit code of its cause.
func (r *Run) RunStep(ctx context.Context, id string, in Input) (StepState, error) {
	s := r.pb.Step(id)
	if s == nil {
		return StepState{}, r.unknownStep(id)
	}
	if s.Type == Ask && in.Answer != "" && len(s.Choices) > 0 && !slices.Contains(s.Choices, in.Answer) {
		return StepState{}, &ParamError{Msg: fmt.Sprintf("answer %q is not one of %v", in.Answer, s.Choices)}
	}
	if err := r.Start(ctx); err != nil {
		return StepState{}, err
	}
	if err := r.refresh(ctx, s, in); err != nil {
		return r.record(ctx, s, StepState{}, err)
	}
	if ok, why := r.when(s); !ok {
		return r.record(ctx, s, StepState{Status: Skipped, Outcome: why}, nil)
	}
	var st StepState
	var err error
	switch s.Type {
	case Check:
		st, err = r.check(ctx, s)
	case Wait:
		st, err = r.wait(ctx, s)
	case Action:
		st, err = r.action(ctx, s, in)
	case Note:
		st = StepState{Status: Passed, Outcome: "shown"}
	case Ask:
		st, err = r.ask(s, in)
	}
	return r.record(ctx, s, st, err)
}

// Skips says whether step id would be skipped for its when: on what this
// run knows now, with no check to measure again first (see refresh): the
// dashboard journals such an action as skipped instead of asking to
// confirm it, and the autopilot passes over it.
func (r *Run) Skips(id string) bool {
	s := r.pb.Step(id)
	if s == nil || s.When == nil {
		return false
	}
	if !r.decided(s) {
		return false
	}
	ok, _ := r.when(s)
	return !ok
}

// decided says whether step s's when: can be answered without measuring:
// the check it rests on, directly or through the step it is the else of,
// is current.
func (r *Run) decided(s *Step) bool {
	c := r.pb.Step(conditionOf(s))
	switch {
	case c == nil:
		return true
	case c.Type == Check:
		return r.current(c.ID)
	case r.elseOfUndecided(s):
		return r.decided(c)
	}
	return true
}

// elseOfUndecided says whether s is the else of (when: {skipped: X}) a
// step X this run has not decided and no earlier run skipped: X's
// condition now decides for s, not that an earlier run ran X or that no
// run has reached it. A skip recorded earlier stands, since a resumed run
// does not go back to X: s, the conservative branch, then runs.
func (r *Run) elseOfUndecided(s *Step) bool {
	id, want := s.When.condition()
	x, st := r.pb.Step(id), r.states[id]
	return want == Skipped && x != nil && x.When != nil && !r.fresh[id] && (st == nil || st.Status != Skipped)
}

func conditionOf(s *Step) string {
	id, _ := s.When.condition()
	return id
}

// current says whether this run evaluated step id within conditionMaxAge.
func (r *Run) current(id string) bool {
	st := r.states[id]
	return r.fresh[id] && st.At != nil && r.env.Clock.Now().Sub(*st.At) <= conditionMaxAge
}

// conditionMaxAge is how old a check's result may be for a when: to rest
// on it: about one rate window, the span the saved queries measure over.
const conditionMaxAge = time.Minute

// refresh evaluates, before step s decides on its when:, the check its
// condition names unless this run evaluated it within conditionMaxAge
// (and, first, the check that check's own condition names): a check
// recorded by an earlier run for the incident, or minutes ago while the
// responder looked elsewhere, says nothing about now, and one never run
// should not make the step skip for that alone. A check that fails is an
// outcome, not an error.
func (r *Run) refresh(ctx context.Context, s *Step, in Input) error {
	if s.When == nil {
		return nil
	}
	c := r.pb.Step(conditionOf(s))
	if c != nil && c.Type != Check && r.elseOfUndecided(s) {
		return r.refresh(ctx, c, in)
	}
	if c == nil || c.Type != Check || r.current(c.ID) {
		return nil
	}
	if _, err := r.RunStep(ctx, c.ID, in); err != nil && !isCheckFailure(err) {
		return err
	}
	return nil
}

// when says whether the step's condition holds, and if not, why.
func (r *Run) when(s *Step) (bool, string) {
	if s.When == nil {
		return true, ""
	}
	if name := s.When.Param; name != "" {
		if r.params[name] == "" {
			return false, "when: parameter " + name + " is not given"
		}
		return true, ""
	}
	id, want := s.When.condition()
	if r.elseOfUndecided(s) {
		if ok, _ := r.when(r.pb.Step(id)); ok {
			return false, fmt.Sprintf("when: step %s would run now, so this, its else, does not", id)
		}
		return true, ""
	}
	st := r.states[id]
	switch {
	case st == nil || st.Status == Pending:
		return false, fmt.Sprintf("when: step %s has not run", id)
	case st.Status != want:
		return false, fmt.Sprintf("when: step %s %s, not %s", id, st.Status, want)
	}
	return true, ""
}

func (r *Run) measure(ctx context.Context, s *Step) (Measurement, error) {
	params := make(map[string]string, len(s.Params))
	key := s.Query
	for _, k := range sortedKeys(s.Params) {
		params[k] = render(s.Params[k], r.params)
		key += "|" + k + "=" + params[k]
	}
	req := MeasureRequest{Query: s.Query, Params: params}
	switch {
	case s.For > 0:
		req.Window, req.Over = s.For.D(), s.expect.overTime(true)
	case s.Within > 0:
		req.Window, req.Over = s.Within.D(), s.expect.overTime(false)
	}
	if req.Over != "" {
		key += "|" + req.Over + "=" + req.Window.String()
	}
	req.Key = "playbook|" + key
	return r.env.Measurer.Measure(ctx, req)
}

func (r *Run) check(ctx context.Context, s *Step) (StepState, error) {
	m, err := r.measure(ctx, s)
	if err != nil {
		return StepState{}, fmt.Errorf("could not evaluate %s: %w", s.Query, err)
	}
	met, ev, summary := judge(s, m)
	if met {
		return StepState{Status: Passed, Outcome: summary, Evidence: ev}, nil
	}
	if s.OnFail == "continue" {
		return StepState{Status: Failed, Outcome: OutcomeContinued, Error: summary, Evidence: ev}, nil
	}
	return StepState{Evidence: ev}, &exit.CheckFailedError{Msg: summary}
}

// wait polls until the expectation holds or the timeout passes, sleeping a
// jittered interval between polls so that many responders waiting on the
// same query do not poll Prometheus in step. With for:, it holds only once
// the whole window has passed since the wait began.
func (r *Run) wait(ctx context.Context, s *Step) (StepState, error) {
	clock := r.env.Clock
	start := clock.Now()
	deadline := start.Add(s.Timeout.D())
	var (
		ev      []journal.Evidence
		summary string
		lastErr error
	)
	for {
		m, err := r.measure(ctx, s)
		met := false
		if lastErr = err; err == nil {
			met, ev, summary = judge(s, m)
		}
		// A wait's for: window must lie after the wait began: calm before
		// the lever was pulled proves nothing about after.
		if met && clock.Now().Sub(start) < s.For.D() {
			met = false
		}
		if r.env.Progress != nil {
			r.env.Progress(s.ID, m, met, err)
		}
		if met {
			took := clock.Now().Sub(start).Round(time.Second)
			return StepState{Status: Passed, Outcome: fmt.Sprintf("%s (after %s)", summary, took), Evidence: ev}, nil
		}
		now := clock.Now()
		if !now.Before(deadline) {
			break
		}
		every := s.Every.D()
		d := every/2 + time.Duration(r.env.Rand.Int64N(int64(every)+1))
		if err := clock.Sleep(ctx, min(d, deadline.Sub(now))); err != nil {
			return StepState{Evidence: ev}, err
		}
	}
	msg := fmt.Sprintf("%s did not reach %s within %s", s.Query, s.expect, s.Timeout.D())
	switch {
	case lastErr != nil:
		msg += fmt.Sprintf("; the last poll failed: %v", lastErr)
	case summary != "":
		msg += "; last: " + summary
	}
	if s.OnFail == "continue" {
		return StepState{Status: Failed, Outcome: OutcomeContinued, Error: msg, Evidence: ev}, nil
	}
	return StepState{Evidence: ev}, &exit.CheckFailedError{Msg: msg}
}

func (r *Run) ask(s *Step, in Input) (StepState, error) {
	answer := in.Answer
	if answer == "" {
		answer = s.Default
	}
	q := render(s.Question, r.params)
	if answer == "" {
		return StepState{Status: Skipped, Outcome: fmt.Sprintf("not answered: %q", q)}, nil
	}
	return StepState{Status: Passed, Answer: answer, Outcome: fmt.Sprintf("%q answered %q", q, answer)}, nil
}

// record journals a step's outcome and keeps its state. A step error
// stops the run and comes back as a *StepError.
func (r *Run) record(ctx context.Context, s *Step, st StepState, stepErr error) (StepState, error) {
	now := r.env.Clock.Now().UTC()
	st.ID, st.Type, st.Title, st.RollbackOf = s.ID, s.Type, s.Title, s.rollbackOf
	st.Actor, st.At, st.Version, st.Earlier = r.opts.Actor, &now, r.pb.Version, false
	if stepErr != nil {
		st.Status, st.Outcome, st.Error = Failed, OutcomeStopped, stepErr.Error()
	}
	ev := map[Status]journal.Event{Passed: journal.PlaybookPassed, Failed: journal.PlaybookFailed, Skipped: journal.PlaybookSkipped}[st.Status]
	e := r.entry(ev, s.ID)
	e.Time, e.Outcome, e.Error, e.Evidence, e.ActionID = now, st.Outcome, st.Error, st.Evidence, st.ActionID
	switch s.Type {
	case Action:
		e.Kind, e.Target, e.Value = s.Kind, render(s.Target, r.params), render(s.Value, r.params)
		e.TTL, e.Reason, e.Forced = journal.Duration(s.TTL), st.Reason, st.Forced
	case Ask:
		e.Value = st.Answer
	}
	_, _, jerr := r.env.Journal.Append(context.WithoutCancel(ctx), e)
	*r.states[s.ID] = st
	r.fresh[s.ID] = true
	if r.env.StepDone != nil {
		r.env.StepDone(st)
	}
	if jerr != nil {
		jerr = fmt.Errorf("step %s %s, but it could not be journaled: %w", s.ID, st.Status, jerr)
	}
	if stepErr != nil && jerr != nil {
		stepErr = errors.Join(stepErr, jerr)
	}
	if stepErr != nil {
		return st, &StepError{Step: s.ID, Err: stepErr}
	}
	return st, jerr
}

// Skip journals step id as skipped by the responder, with why.
func (r *Run) Skip(ctx context.Context, id, why string) (StepState, error) {
	s := r.pb.Step(id)
	if s == nil {
		return StepState{}, r.unknownStep(id)
	}
	if err := r.Start(ctx); err != nil {
		return StepState{}, err
	}
	return r.record(ctx, s, StepState{Status: Skipped, Outcome: why}, nil)
}
