package playbooks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormctl/stormctl/journal"
)

// Status is where a step stands in a run.
type Status string

// Step statuses.
const (
	Pending Status = "pending"
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Outcomes of a failed step, as journaled: they say whether the run went on.
const (
	OutcomeStopped   = "stopped the run"
	OutcomeContinued = "failed; the run continued (on_fail: continue)"
)

// StepState is a step's status in a run, with what it found or did.
type StepState struct {
	ID         string     `json:"id"`
	Type       StepType   `json:"type"`
	Title      string     `json:"title,omitempty"`
	RollbackOf string     `json:"rollback_of,omitempty"`
	Status     Status     `json:"status"`
	Outcome    string     `json:"outcome,omitempty"`
	Error      string     `json:"error,omitempty"`
	Actor      string     `json:"actor,omitempty"`
	At         *time.Time `json:"at,omitempty"`
	// Earlier is true when the state comes from the journal: a previous
	// run of this playbook for the same incident.
	Earlier  bool               `json:"earlier,omitempty"`
	Version  string             `json:"version,omitempty"`
	Evidence []journal.Evidence `json:"evidence,omitempty"`
	ActionID string             `json:"action_id,omitempty"`
	Reason   string             `json:"reason,omitempty"`
	Forced   bool               `json:"forced,omitempty"`
	Answer   string             `json:"answer,omitempty"`
	// Plan is the actions package's result of an action step, for -o json.
	Plan any `json:"result,omitempty"`
}

// Done reports whether a run has nothing left to do for the step: it
// passed, was skipped, or failed without stopping the run.
func (s StepState) Done() bool {
	return s.Status == Passed || s.Status == Skipped || (s.Status == Failed && s.Outcome == OutcomeContinued)
}

// RunOptions say who runs which playbook for which incident.
type RunOptions struct {
	Params map[string]string // as given; NewRun checks them and adds defaults
	// Incident scopes resumption and idempotency: a run for an incident
	// skips the steps its journal says are done, and an action step applied
	// once for it is never applied twice. "" runs without either.
	Incident string
	Actor    string
	// Reason is the responder's own words, added to every action's reason.
	Reason string
}

// Env is the world a run acts on.
type Env struct {
	Measurer Measurer
	Levers   Levers
	Journal  Journal
	Clock    Clock      // default SystemClock
	Rand     *rand.Rand // jitter of wait polls; default seeded at random
	// Progress, if set, hears every poll of a wait step.
	Progress func(step string, m Measurement, met bool, err error)
	// StepDone, if set, hears every step's outcome once it is journaled.
	StepDone func(StepState)
}

// Input is what the responder supplies for one step.
type Input struct {
	Reason string // added to an action's reason (overrides RunOptions.Reason)
	Answer string // the answer to an ask step; "" takes its default
	Yes    bool   // confirm an action without a terminal
	Force  bool   // act without supporting evidence, journaled as forced (--force)
}

// Run executes one playbook step by step. A terminal UI drives it with
// Steps, Next, Plan and RunStep; a script uses RunAll. It is not safe for
// concurrent use.
type Run struct {
	pb      *Playbook
	params  map[string]string
	opts    RunOptions
	env     Env
	states  map[string]*StepState
	fresh   map[string]bool // steps run by this invocation
	from    int
	started bool
}

// NewRun checks the parameters (exit 2 on a bad one) and prepares a run.
func NewRun(pb *Playbook, opts RunOptions, env Env) (*Run, error) {
	params, err := pb.Resolve(opts.Params)
	if err != nil {
		return nil, err
	}
	if env.Clock == nil {
		env.Clock = SystemClock{}
	}
	if env.Rand == nil {
		env.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	r := &Run{pb: pb, params: params, opts: opts, env: env, states: map[string]*StepState{}, fresh: map[string]bool{}}
	for _, s := range pb.Steps {
		r.states[s.ID] = &StepState{ID: s.ID, Type: s.Type, Title: s.Title, RollbackOf: s.rollbackOf, Status: Pending}
	}
	return r, nil
}

// Playbook returns the playbook being run.
func (r *Run) Playbook() *Playbook { return r.pb }

// Params returns the resolved parameters.
func (r *Run) Params() map[string]string { return r.params }

// Render fills a step field's {{ .params.NAME }} with this run's values.
func (r *Run) Render(s string) string { return render(s, r.params) }

// Incident returns the incident the run is for, "" if none.
func (r *Run) Incident() string { return r.opts.Incident }

// Steps returns every step's state, in playbook order.
func (r *Run) Steps() []StepState {
	out := make([]StepState, len(r.pb.Steps))
	for i, s := range r.pb.Steps {
		out[i] = *r.states[s.ID]
	}
	return out
}

// State returns one step's state.
func (r *Run) State(id string) (StepState, bool) {
	st, ok := r.states[id]
	if !ok {
		return StepState{}, false
	}
	return *st, true
}

// Resume marks the steps that earlier runs for the incident recorded in
// the journal; entries of other incidents and playbooks are ignored.
func (r *Run) Resume(entries []journal.Entry) {
	if r.opts.Incident == "" {
		return
	}
	for id, st := range History(r.pb, r.opts.Incident, entries) {
		if cur, ok := r.states[id]; ok && !r.fresh[id] {
			*cur = st
		}
	}
}

// From makes Next start at step id: earlier steps are left as they are.
func (r *Run) From(id string) error {
	for i, s := range r.pb.Steps {
		if s.ID == id {
			r.from = i
			return nil
		}
	}
	return r.unknownStep(id)
}

func (r *Run) unknownStep(id string) error {
	return &ParamError{Msg: fmt.Sprintf("playbook %s has no step %q (steps: %s)", r.pb.Name, id, joinIDs(r.pb.Steps))}
}

// Next returns the next step a forward run would take: the first one from
// the start (or From) that is not done and does not only undo another
// step. nil means the playbook is complete.
func (r *Run) Next() *Step {
	for _, s := range r.pb.Steps[r.from:] {
		if s.rollbackOf == "" && !r.states[s.ID].Done() {
			return s
		}
	}
	return nil
}

// RunAll runs every remaining step unattended (answers take their
// defaults, actions are confirmed with Yes) and journals the run's start
// and finish. It stops at the first step that fails, with that step's
// error: exit 4 for a check, the guard's code for a refused action.
func (r *Run) RunAll(ctx context.Context, in Input) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	var err error
	for s := r.Next(); s != nil && err == nil; s = r.Next() {
		_, err = r.RunStep(ctx, s.ID, in)
	}
	if ferr := r.Finish(ctx, err); err == nil {
		err = ferr
	}
	return err
}

// Start journals playbook.started, once per run.
func (r *Run) Start(ctx context.Context) error {
	if r.started {
		return nil
	}
	e := r.entry(journal.PlaybookStarted, "")
	e.Value, e.Reason, e.Outcome = r.paramText(), r.opts.Reason, "started"
	if _, _, err := r.env.Journal.Append(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("journal the start of playbook %s: %w", r.pb.Name, err)
	}
	r.started = true
	return nil
}

// Finish journals playbook.finished: completed, or where and why it
// stopped. It does nothing for a run that never started. Like every
// journal write of a run, it is made even when ctx has been canceled (an
// interrupted run is recorded as stopped).
func (r *Run) Finish(ctx context.Context, stopped error) error {
	if !r.started {
		return nil
	}
	e := r.entry(journal.PlaybookFinished, "")
	e.Value = r.paramText()
	switch next := r.Next(); {
	case stopped != nil:
		e.Outcome, e.Error = "stopped", stopped.Error()
	case next == nil:
		e.Outcome = "completed"
	default:
		e.Outcome = "paused before step " + next.ID
	}
	if _, _, err := r.env.Journal.Append(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("journal the end of playbook %s: %w", r.pb.Name, err)
	}
	r.started = false
	return nil
}

func (r *Run) entry(ev journal.Event, step string) journal.Entry {
	return journal.Entry{Event: ev, Actor: r.opts.Actor, Incident: r.opts.Incident, Playbook: r.pb.Name,
		PlaybookVersion: r.pb.Version, Step: step}
}

// paramText is "dependency=payments service=checkout", for the journal.
func (r *Run) paramText() string {
	s := ""
	for _, k := range sortedKeys(r.params) {
		if s != "" {
			s += " "
		}
		s += k + "=" + r.params[k]
	}
	return s
}

func joinIDs(steps []*Step) string {
	s := ""
	for i, st := range steps {
		if i > 0 {
			s += ", "
		}
		s += st.ID
	}
	return s
}
