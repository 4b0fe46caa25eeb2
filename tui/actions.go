package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/components/dialog"
)

// Results of the commands the dialog asked for.
type (
	plannedMsg struct {
		plan dialog.Plan
		err  error // the plan itself failed: nothing to confirm
	}
	doneMsg struct {
		text string
		err  error
	}
	stepDoneMsg struct {
		id    string
		state playbooks.StepState
		snap  stepsSnapshot
		err   error
	}
)

// StepProgressMsg reports one poll of a running wait step; send it with
// tea.Program.Send from the playbook's Progress hook (see Progress).
type StepProgressMsg struct{ Step, Text string }

// Progress formats a playbook poll as a StepProgressMsg.
func Progress(step string, m playbooks.Measurement, met bool, err error) StepProgressMsg {
	if err != nil {
		return StepProgressMsg{Step: step, Text: "poll failed: " + err.Error()}
	}
	var vals []string
	for _, s := range m.Series {
		vals = append(vals, fmt.Sprintf("%.3g", s.Value))
	}
	text := m.Query + " = " + strings.Join(vals, ", ")
	if m.NoData != "" {
		text = m.Query + ": no data"
	}
	if met {
		text += " (met)"
	} else {
		text += " (waiting)"
	}
	return StepProgressMsg{Step: step, Text: text}
}

func keyIs(k tea.KeyMsg, b key.Binding) bool { return key.Matches(k, b) }

func (m *Model) canAct() bool {
	if m.deps.Actions == nil {
		if !m.ReadOnly {
			m.setStatus("no control plane: set --redis-url or STORMCTL_REDIS_URL to act", true)
		}
		return false
	}
	return true
}

func (m *Model) openApply() tea.Cmd {
	if !m.canAct() {
		return nil
	}
	var p dialog.Prefill
	if pn, ok := m.signals.Selected(); ok {
		p = dialog.Prefill{Service: pn.Service, Dependency: pn.Labels[queries.ParamDependency]}
	}
	m.dialog = dialog.NewApply(m.Common, p)
	m.sizeDialog()
	return nil
}

func (m *Model) openLever(mode dialog.Mode) tea.Cmd {
	l, ok := m.levers.Selected()
	if !ok || !m.canAct() {
		return nil
	}
	if mode == dialog.ModeRelease {
		m.dialog = dialog.NewRelease(m.Common, l)
	} else {
		m.dialog = dialog.NewExtend(m.Common, l)
	}
	m.sizeDialog()
	return nil
}

func (m *Model) runSelectedStep() tea.Cmd {
	st, ok := m.playbook.Selected()
	if !ok || m.pb == nil {
		return nil
	}
	if r := m.playbook.Running(); r != "" {
		m.setStatus("step "+r+" is still running", true)
		return nil
	}
	// An action its when: already rules out is journaled as skipped, with no
	// confirmation to ask for; one whose condition rests on a check still
	// to measure asks, and is skipped on confirming if the check says so.
	if st.Type == playbooks.Action && !m.pb.skips(st.ID) {
		if !m.canAct() {
			return nil
		}
		title := st.Title
		d, cmd := dialog.NewStep(m.Common, st.ID, title)
		m.dialog = d
		m.sizeDialog()
		return cmd
	}
	return m.runStep(st.ID, "", false)
}

func (m *Model) runStep(id, typed string, force bool) tea.Cmd {
	m.playbook.SetRunning(id)
	pb, ctx := m.pb, WithTyped(m.Ctx, typed)
	return func() tea.Msg {
		st, snap, err := pb.run(ctx, id, force)
		return stepDoneMsg{id: id, state: st, snap: snap, err: err}
	}
}

// actionMsg handles the dialog's requests and their results.
func (m *Model) actionMsg(msg tea.Msg) tea.Cmd {
	a, ctx, actor, incident := m.deps.Actions, m.Ctx, m.opts.Actor, m.opts.Incident
	withWho := func(s actions.Spec) actions.Spec {
		s.Actor, s.Incident = actor, incident
		return s
	}
	switch msg := msg.(type) {
	case dialog.Closed:
		m.dialog = nil
	case dialog.PlanRequest:
		return func() tea.Msg { return planOf(a.Plan(ctx, withWho(msg.Spec))) }
	case dialog.ApplyRequest:
		return func() tea.Msg {
			res, err := a.Apply(WithTyped(ctx, msg.Typed), withWho(msg.Spec))
			if pend := (*actions.PendingError)(nil); errors.As(err, &pend) {
				return doneMsg{text: pend.Error()} // nothing applied: say only that
			}
			return doneMsg{text: appliedText(res), err: err}
		}
	case dialog.ReleaseRequest:
		return func() tea.Msg {
			res, err := a.Release(ctx, msg.ActionID, actor, msg.Reason)
			return doneMsg{text: changedText("released", res), err: err}
		}
	case dialog.ExtendRequest:
		return func() tea.Msg {
			res, err := a.Extend(ctx, msg.ActionID, actor, msg.Reason, msg.TTL)
			return doneMsg{text: changedText("extended", res), err: err}
		}
	case dialog.StepPlanRequest:
		pb := m.pb
		return func() tea.Msg {
			lr, err := pb.plan(ctx, msg.Step, msg.Force)
			if lr == nil && err == nil {
				return plannedMsg{plan: dialog.Plan{Target: "release", Pending: "this step releases the lever it names, restoring what it superseded"}}
			}
			var raw *actions.Result
			if lr != nil {
				raw, _ = lr.Raw.(*actions.Result)
			}
			return planOf(raw, err)
		}
	case dialog.StepRunRequest:
		return m.runStep(msg.Step, msg.Typed, msg.Force)
	case plannedMsg:
		if m.dialog != nil {
			if msg.err != nil {
				m.dialog.SetResult("", msg.err)
			} else {
				m.dialog.SetPlan(msg.plan)
			}
		}
	case doneMsg:
		if m.dialog != nil {
			m.dialog.SetResult(msg.text, msg.err)
		}
		if msg.err != nil {
			m.setStatus(msg.err.Error(), true)
		} else {
			m.setStatus(msg.text, false)
		}
	case stepDoneMsg:
		m.playbook.SetRunning("")
		m.playbook.SetSteps(msg.snap.steps, msg.snap.next)
		text := fmt.Sprintf("step %s %s: %s", msg.id, msg.state.Status, msg.state.Outcome)
		if m.dialog != nil && m.dialog.Mode() == dialog.ModeStep {
			m.dialog.SetResult(text, msg.err)
		}
		if msg.err != nil {
			m.setStatus("step "+msg.id+": "+msg.err.Error(), true)
		} else {
			m.setStatus(text, false)
		}
	}
	return nil
}

// planOf turns a plan's result into what the dialog shows. A refusal or a
// pending approval is part of the plan; any other error means there is no
// plan to show.
func planOf(res *actions.Result, err error) plannedMsg {
	var ref *actions.RefusedError
	var pend *actions.PendingError
	isRef, isPend := errors.As(err, &ref), errors.As(err, &pend)
	if res == nil || (err != nil && !isRef && !isPend) {
		if err == nil {
			err = errors.New("the plan returned nothing")
		}
		return plannedMsg{err: err}
	}
	p := dialog.Plan{}
	for _, g := range res.Guards {
		p.Guards = append(p.Guards, dialog.Guard{Name: g.Guard, Status: g.Status, Detail: g.Detail})
	}
	var names []string
	for _, t := range res.Targets {
		names = append(names, t.Target)
		p.Evidence = append(p.Evidence, t.Evidence...)
	}
	p.Target = strings.Join(names, ",")
	if len(res.Targets) > 0 {
		p.Before, p.After = res.Targets[0].Before, res.Targets[0].After
	}
	switch {
	case isRef:
		p.Refusal = ref.Error()
		p.Forceable = ref.Guard == actions.GuardEvidence
	case isPend:
		p.Pending = "applying records a request: a second person must approve it (stormctl action approve)"
	}
	return plannedMsg{plan: p}
}

func appliedText(res *actions.Result) string {
	if res == nil {
		return ""
	}
	if res.RequestID != "" && len(res.Targets) == 0 {
		return "request " + res.RequestID + " recorded: waiting for a second person"
	}
	s := fmt.Sprintf("applied %s=%s (action %s)", res.Kind, res.Value, res.ActionID)
	if res.ExpiresAt != nil {
		s += ", expires " + res.ExpiresAt.Local().Format(time.TimeOnly)
	}
	return s
}

func changedText(verb string, res *actions.Result) string {
	if res == nil {
		return verb
	}
	return fmt.Sprintf("%s action %s (%s)", verb, res.ActionID, res.Kind)
}

// ErrorStatus is a message that shows text as an error in the status bar.
func ErrorStatus(text string) tea.Msg {
	return &common.ErrorMsg{Err: errors.New(text)}
}

// InfoStatus is a message that shows text in the status bar.
func InfoStatus(text string) tea.Msg { return common.StatusMsg(text) }
