package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
)

// AutopilotRefused journals a firing alert the autopilot did not act on
// before reaching the guards (paused, kind not allowed, no action step);
// the guards journal their own refusals.
const AutopilotRefused journal.Event = "autopilot.refused"

// DefaultAutopilotTTL is the TTL of a lever the autopilot pulls: short,
// so a responder decides what happens after it.
const DefaultAutopilotTTL = 10 * time.Minute

// Autopilot runs a firing alert's playbook unattended, as Actor, up to its
// first lever step whose when: holds (chooseAction), and pulls that lever
// through every guard of actions/ (the step's required checks are the
// evidence that must hold now), only for the services and kinds Allow
// lists, with a TTL of at most TTL. The playbook's first wait step after
// the action verifies it: holding keeps the lever, not holding extends it
// once, still not holding releases it to the responders.
type Autopilot struct {
	Actions   *actions.Service
	Playbooks func(name string) (*playbooks.Playbook, error)
	Measurer  playbooks.Measurer
	// Allow maps a lever kind to the services it may be pulled for ("*": any).
	Allow map[string][]string
	// Modes maps a service to its degraded mode: the playbooks' parameter
	// mode when the alert's labels give none and Allow lets the autopilot
	// pull degraded for the service.
	Modes    map[string]string
	TTL      time.Duration
	Notifier *Notifier
	Metrics  *Metrics
	Log      *slog.Logger
	// NoVerify skips the verify step (the lab's loop verifies in its own time).
	NoVerify bool

	wg     sync.WaitGroup
	mu     sync.Mutex
	cancel []context.CancelFunc
}

// Decision is what the autopilot did about one firing alert.
type Decision struct {
	Outcome  string // applied, requested, refused, paused, not_allowed, no_action, error
	ActionID string
	Kind     string
	Target   string
	Value    string
	Until    time.Time
	Note     string // one line for the notification
}

// autopilotCollection holds the autopilot's pause state in the control plane.
const autopilotCollection = "autopilot"

// State is the autopilot's pause state as stored.
type State struct {
	Paused bool      `json:"paused"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// ReadState reads the pause state from the control plane.
func ReadState(ctx context.Context, svc *actions.Service) (State, string, error) {
	raw, err := svc.Store.Record(ctx, autopilotCollection, "state")
	if err != nil || raw == "" {
		return State{}, raw, err
	}
	var st State
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		// A damaged record pauses: acting unattended needs a clear yes.
		return State{Paused: true, Reason: "state record unreadable: " + err.Error()}, raw, nil
	}
	return st, raw, nil
}

// SetPaused pauses or resumes the autopilot for every receiver at once and
// journals it (autopilot.paused / autopilot.resumed) in the same script.
func SetPaused(ctx context.Context, svc *actions.Service, paused bool, actor, reason string) (State, error) {
	for range 5 {
		_, raw, err := ReadState(ctx, svc)
		if err != nil {
			return State{}, err
		}
		st := State{Paused: paused, By: actor, At: svc.Clock.Now().UTC(), Reason: reason}
		next, _ := json.Marshal(st)
		e := journal.Entry{Event: AutopilotResume, Time: st.At, Actor: actor, Reason: reason, Outcome: "autopilot resumed"}
		if paused {
			e.Event, e.Outcome = AutopilotPaused, "autopilot paused: no lever is pulled unattended until resumed"
		}
		_, err = svc.Store.SwapRecord(ctx, autopilotCollection, "state", raw, string(next), e)
		var moved interface{ ExitCode() int }
		if errors.As(err, &moved) && moved.ExitCode() == exit.Conflict {
			continue // another pause or resume landed first: read again
		}
		return st, err
	}
	return State{}, errors.New("autopilot state kept changing; try again")
}

// Fired decides and acts on one firing alert.
func (p *Autopilot) Fired(ctx context.Context, ev *Event) Decision {
	d := p.fired(ctx, ev)
	p.Metrics.decision(d.Outcome)
	switch d.Outcome {
	case "paused", "not_allowed":
		e := journal.Entry{Event: AutopilotRefused, Actor: Actor, Incident: ev.Incident, Playbook: ev.Playbook,
			Kind: d.Kind, Target: d.Target, Value: d.Value, Reason: ev.Name + " fired", Outcome: d.Note}
		if _, _, err := p.Actions.Journal.Append(ctx, e); err != nil {
			p.Log.Error("autopilot: journal refusal", "err", err)
		}
	}
	return d
}

func (p *Autopilot) fired(ctx context.Context, ev *Event) Decision {
	if ev.Playbook == "" {
		return Decision{Outcome: "no_action"}
	}
	st, _, err := ReadState(ctx, p.Actions)
	if err != nil {
		return Decision{Outcome: "error", Note: "autopilot could not read its state: " + err.Error()}
	}
	pb, err := p.Playbooks(ev.Playbook)
	if err != nil {
		return Decision{Outcome: "error", Note: "autopilot: " + err.Error()}
	}
	steps := leverSteps(pb)
	if len(steps) == 0 {
		return Decision{Outcome: "no_action", Note: "autopilot: playbook " + pb.Name + " has no action step"}
	}
	step := steps[0]
	params := p.params(pb, ev)
	levers := &cappedLevers{Levers: playbooks.ActionLevers{Service: p.Actions}, ttl: cmpDur(p.TTL, DefaultAutopilotTTL)}
	run, err := playbooks.NewRun(pb, playbooks.RunOptions{Params: params, Incident: ev.Incident, Actor: Actor,
		Reason: fmt.Sprintf("autopilot: %s fired at %s", ev.Name, ev.StartsAt.UTC().Format(time.RFC3339))},
		playbooks.Env{Measurer: p.Measurer, Levers: levers, Journal: p.Actions.Journal})
	d := Decision{Kind: step.Kind}
	if err != nil {
		d.Outcome, d.Note = "not_allowed", "autopilot: the alert does not give the playbook's parameters: "+err.Error()
		return d
	}
	d.Target, d.Value = run.Render(step.Target), run.Render(step.Value)
	switch {
	case st.Paused:
		d.Outcome, d.Note = "paused", fmt.Sprintf("autopilot is paused (by %s: %s): %s %s=%s not pulled", st.By, st.Reason, d.Kind, d.Target, d.Value)
		return d
	case !slices.ContainsFunc(steps, func(s *playbooks.Step) bool { return p.allows(s.Kind, run.Render(s.Target), ev.Service) }):
		return notAllowed(d, ev.Service)
	}
	step, verify, err := chooseAction(ctx, run, pb)
	switch {
	case err != nil:
		d.Outcome, d.Note = "refused", fmt.Sprintf("autopilot did not pull %s on %s: %v", d.Kind, d.Target, err)
		return d
	case step == nil:
		d.Outcome, d.Note = "no_action", "autopilot: no action step of playbook "+pb.Name+" applies now"
		return d
	}
	d.Kind, d.Target, d.Value = step.Kind, run.Render(step.Target), run.Render(step.Value)
	if !p.allows(d.Kind, d.Target, ev.Service) {
		return notAllowed(d, ev.Service)
	}
	_, err = run.RunStep(ctx, step.ID, playbooks.Input{Yes: true})
	res := levers.last
	var pending *actions.PendingError
	switch {
	case errors.As(err, &pending):
		d.Outcome, d.Note = "requested", fmt.Sprintf("autopilot requested %s=%s on %s: the kind needs approval (%v)", d.Kind, d.Value, d.Target, err)
		return d
	case err != nil:
		d.Outcome, d.Note = "refused", fmt.Sprintf("autopilot did not pull %s=%s on %s: %v", d.Kind, d.Value, d.Target, err)
		return d
	case res == nil:
		d.Outcome, d.Note = "error", "autopilot: the step applied nothing"
		return d
	}
	d.Outcome, d.ActionID = "applied", res.ActionID
	if res.After != nil {
		d.Until = res.After.ExpiresAt
	}
	d.Note = fmt.Sprintf("autopilot applied %s=%s on %s (action %s)", d.Kind, d.Value, d.Target, d.ActionID)
	if res.Replayed {
		d.Note = fmt.Sprintf("autopilot: %s=%s on %s was already applied for this incident (action %s); nothing changed", d.Kind, d.Value, d.Target, d.ActionID)
		return d
	}
	_ = p.Notifier.Enqueue(ctx, leverNoticeKey(d, "applied"), leverNotice(ev, d, "applied"))
	if verify != nil && !p.NoVerify {
		p.verify(ev, run, verify, d)
	}
	return d
}

// isLever says whether s applies a lever in the playbook's own flow (not
// a release, not a rollback).
func isLever(s *playbooks.Step) bool {
	return s.Type == playbooks.Action && s.Op != playbooks.OpRelease && s.RollbackOf() == ""
}

// leverSteps are pb's lever steps, in order.
func leverSteps(pb *playbooks.Playbook) []*playbooks.Step {
	var out []*playbooks.Step
	for _, s := range pb.Steps {
		if isLever(s) {
			out = append(out, s)
		}
	}
	return out
}

// chooseAction walks run's playbook as a responder would, up to its first
// lever step whose when: holds: checks run and are journaled, notes and
// questions are passed over (nobody is there to read or answer them), and a
// lever step whose condition does not hold is journaled as skipped, so
// that a later step's when: {skipped: ...} can be its else. A wait step
// before any lever ends the walk with nothing to pull, unless its when:
// does not hold (it verifies a lever not chosen). verify is the first wait
// step after the chosen one whose when: holds.
func chooseAction(ctx context.Context, run *playbooks.Run, pb *playbooks.Playbook) (act, verify *playbooks.Step, err error) {
	for _, s := range pb.Steps {
		switch {
		case s.Type == playbooks.Wait && run.Skips(s.ID): // another lever's verify
		case act != nil:
			if s.Type == playbooks.Wait {
				return act, s, nil
			}
		case s.Type == playbooks.Wait:
			return nil, nil, nil
		case s.Type == playbooks.Check:
			if _, err := run.RunStep(ctx, s.ID, playbooks.Input{Yes: true}); err != nil {
				return nil, nil, err
			}
		case !isLever(s): // notes, questions, releases and rollbacks
		case !run.Skips(s.ID):
			act = s
		default:
			if _, err := run.RunStep(ctx, s.ID, playbooks.Input{Yes: true}); err != nil {
				return nil, nil, err // journals the step as skipped
			}
		}
	}
	return act, nil, nil
}

// params are the playbook's parameters the alert's labels give, and the
// service's degraded mode where the autopilot may pull degraded for it.
func (p *Autopilot) params(pb *playbooks.Playbook, ev *Event) map[string]string {
	params := map[string]string{}
	for _, prm := range pb.Parameters {
		if v := ev.Labels[prm.Name]; v != "" {
			params[prm.Name] = v
		}
	}
	if m := p.Modes[ev.Service]; m != "" && params["mode"] == "" && p.allows(string(lever.Degraded), ev.Service, ev.Service) {
		params["mode"] = m
	}
	return params
}

// notAllowed is d refused because the policy's autopilot list does not
// name its kind for its service.
func notAllowed(d Decision, service string) Decision {
	d.Outcome, d.Note = "not_allowed", fmt.Sprintf("autopilot may not pull %s for %s (policy autopilot: %s): not pulled", d.Kind, serviceOf(d.Target, service), d.Kind)
	return d
}

func (p *Autopilot) allows(kind, target, service string) bool {
	svcs := p.Allow[kind]
	return slices.Contains(svcs, "*") || slices.Contains(svcs, serviceOf(target, service))
}

// serviceOf is the service a target acts for: the caller of
// service->dependency, else the alert's service, else the target itself.
func serviceOf(target, service string) string {
	if s, _, ok := strings.Cut(target, "->"); ok {
		return s
	}
	if service != "" {
		return service
	}
	return target
}

func cmpDur(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

// cappedLevers lowers every apply's TTL to the autopilot's and keeps the
// last result, for the decision's action id and expiry.
type cappedLevers struct {
	playbooks.Levers
	ttl  time.Duration
	last *playbooks.LeverResult
}

func (c *cappedLevers) Apply(ctx context.Context, r playbooks.LeverRequest) (*playbooks.LeverResult, error) {
	if r.TTL <= 0 || r.TTL > c.ttl {
		r.TTL = c.ttl
	}
	res, err := c.Levers.Apply(ctx, r)
	c.last = res
	return res, err
}

// leverNoticeKey is the idempotency key of the notice that the autopilot
// did what to action d.
func leverNoticeKey(d Decision, what string) string { return "action:" + d.ActionID + ":" + what }

// leverNotice tells what the autopilot did to a lever and how to undo it.
func leverNotice(ev *Event, d Decision, what string) Notice {
	n := Notice{Event: "action." + what, Alert: ev.Name, Target: d.Target, Incident: ev.Incident, Playbook: ev.Playbook,
		Actor: Actor, Dashboard: ev.Dashboard, Time: time.Now().UTC(), Done: []string{d.Note}}
	if what != "released" {
		n.Until = d.Until
		n.Undo = fmt.Sprintf("stormctl action release %s --reason %q", d.ActionID, "responder takes over from autopilot")
	}
	return n
}

// Close stops the verifications in flight and waits for them.
func (p *Autopilot) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, c := range p.cancel {
		c()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
