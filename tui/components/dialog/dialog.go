// Package dialog is the dashboard's action dialog. It never acts itself:
// it collects what the responder asks for, shows the plan (guards,
// evidence, diff) the dashboard fetched, asks for the target to be typed,
// and hands each step back to the dashboard as a request message.
package dialog

import (
	"errors"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/tui/common"
)

// Mode is what the dialog is for.
type Mode int

// Dialog modes.
const (
	ModeApply   Mode = iota // pull a lever: form, plan, confirm
	ModeStep                // run a playbook action step: plan, confirm
	ModeRelease             // release the selected lever
	ModeExtend              // extend the selected lever
)

// Stage is where the dialog stands.
type Stage int

// Dialog stages.
const (
	StageForm Stage = iota
	StagePlanning
	StagePlan
	StageApplying
	StageResult
)

// Requests the dialog hands to the dashboard, which runs them as commands
// and answers with SetPlan or SetResult.
type (
	// PlanRequest asks for the plan of an ad-hoc action.
	PlanRequest struct{ Spec actions.Spec }
	// ApplyRequest applies it, confirmed by Typed.
	ApplyRequest struct {
		Spec  actions.Spec
		Typed string
	}
	// StepPlanRequest asks for the plan of a playbook action step, forced
	// when the responder chose to act without evidence.
	StepPlanRequest struct {
		Step  string
		Force bool
	}
	// StepRunRequest runs the step, confirmed by Typed.
	StepRunRequest struct {
		Step, Typed string
		Force       bool
	}
	// ReleaseRequest releases action ActionID.
	ReleaseRequest struct{ ActionID, Reason string }
	// ExtendRequest extends action ActionID to now + TTL.
	ExtendRequest struct {
		ActionID, Reason string
		TTL              time.Duration
	}
	// Closed says the dialog was closed.
	Closed struct{}
)

// Guard is one guard's verdict in a plan.
type Guard struct{ Name, Status, Detail string }

// Plan is what the dashboard shows before anything is written.
type Plan struct {
	Guards        []Guard
	Evidence      []journal.Evidence
	Before, After *lever.Lever
	// Target is what the responder types to confirm.
	Target string
	// Refusal is set when the guards would refuse: nothing can be confirmed.
	Refusal string
	// Forceable says --force would let the refused action through (the
	// evidence guard): the dialog offers to plan it again, forced.
	Forceable bool
	// Pending is set when applying records a request for a second person.
	Pending string
}

// Prefill seeds an ad-hoc action from the selected signal.
type Prefill struct{ Service, Dependency string }

// Field indexes of the form.
const (
	fieldKind = iota
	fieldTarget
	fieldValue
	fieldTTL
	fieldReason
)

// Model is the dialog.
type Model struct {
	common.Common
	mode    Mode
	stage   Stage
	kind    int // index into actions.Specs
	inputs  []textinput.Model
	focus   int
	confirm textinput.Model
	prefill Prefill
	lever   lever.Lever
	step    string
	title   string

	plan     *Plan
	result   string
	failed   bool
	problem  string // a form or confirmation problem, shown under the fields
	planSpec actions.Spec
	// force is set once the responder chose to act without evidence; the
	// action still waits for the evidence (bounded) and is journaled forced.
	force bool
	// planTail is how many of the plan's last lines must show: the
	// refusal or the confirmation, and the keys that leave.
	planTail int
}

func newInput(placeholder string) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.CharLimit = 256
	ti.Cursor.SetMode(cursor.CursorStatic)
	return ti
}

// newInputs are the form's inputs by field; the kind is a selector, and
// its input is never shown.
func newInputs() []textinput.Model {
	return []textinput.Model{newInput(""), newInput("service or service->dependency"), newInput("value"),
		newInput("e.g. 15m"), newInput("why (journaled)")}
}

// NewApply opens the dialog to pull a lever, seeded from the selection.
func NewApply(c common.Common, p Prefill) *Model {
	m := &Model{Common: c, mode: ModeApply, prefill: p, title: "Pull a lever"}
	m.inputs = newInputs()
	m.inputs[fieldTTL].SetValue("15m")
	m.setKind(0)
	m.focusField(fieldReason)
	return m
}

// NewStep opens the dialog for playbook action step id; its plan is asked
// for at once.
func NewStep(c common.Common, id, title string) (*Model, tea.Cmd) {
	m := &Model{Common: c, mode: ModeStep, step: id, title: "Playbook step " + id + ": " + title, stage: StagePlanning}
	return m, send(StepPlanRequest{Step: id})
}

// NewRelease opens the dialog to release l.
func NewRelease(c common.Common, l lever.Lever) *Model {
	m := &Model{Common: c, mode: ModeRelease, lever: l, title: "Release " + string(l.Kind) + " " + l.Target + "=" + l.Value}
	m.inputs = newInputs()
	m.focusField(fieldReason)
	return m
}

// NewExtend opens the dialog to extend l.
func NewExtend(c common.Common, l lever.Lever) *Model {
	m := &Model{Common: c, mode: ModeExtend, lever: l, title: "Extend " + string(l.Kind) + " " + l.Target + "=" + l.Value}
	m.inputs = newInputs()
	m.inputs[fieldTTL].SetValue("15m")
	m.focusField(fieldTTL)
	return m
}

// Stage returns the dialog's stage.
func (m *Model) Stage() Stage { return m.stage }

// Mode returns the dialog's mode.
func (m *Model) Mode() Mode { return m.mode }

func send(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

// fields are the form's fields in the current mode.
func (m *Model) fields() []int {
	switch m.mode {
	case ModeApply:
		return []int{fieldKind, fieldTarget, fieldValue, fieldTTL, fieldReason}
	case ModeExtend:
		return []int{fieldTTL, fieldReason}
	case ModeRelease:
		return []int{fieldReason}
	}
	return nil
}

func (m *Model) focusField(f int) {
	m.focus = f
	for i := range m.inputs {
		if i == f {
			m.inputs[i].Focus()
		} else {
			m.inputs[i].Blur()
		}
	}
}

func (m *Model) moveField(d int) {
	fs := m.fields()
	for i, f := range fs {
		if f == m.focus {
			m.focusField(fs[(i+d+len(fs))%len(fs)])
			return
		}
	}
}

// setKind selects a lever kind and fits the target and value to it.
func (m *Model) setKind(i int) {
	m.kind = (i + len(actions.Specs)) % len(actions.Specs)
	ks := actions.Specs[m.kind]
	svc, dep := m.prefill.Service, m.prefill.Dependency
	target := svc
	switch {
	case ks.Form != lever.ServiceOnly && svc != "" && dep != "":
		target = svc + "->" + dep
	case ks.Form == lever.DependencyOrEdge && dep != "":
		target = dep
	}
	m.inputs[fieldTarget].SetValue(target)
	m.inputs[fieldValue].SetValue(map[lever.Kind]string{lever.Retries: "off", lever.Breaker: "open", lever.
		Autoscaling: "frozen", lever.Degraded: "on", lever.Shed: "50"}[ks.Kind])
}

// SetPlan shows the plan the dashboard fetched.
func (m *Model) SetPlan(p Plan) {
	m.plan, m.stage, m.problem = &p, StagePlan, ""
	m.confirm = newInput("")
	m.confirm.Focus()
}

// SetResult shows how the request ended.
func (m *Model) SetResult(text string, err error) {
	m.stage, m.result, m.failed = StageResult, text, err != nil
	if err != nil {
		m.result = err.Error()
		var ref *actions.RefusedError
		if errors.As(err, &ref) {
			m.result = "refused by the " + ref.Guard + " guard: " + ref.Reason
			if ref.Hint != "" {
				m.result += " (" + ref.Hint + ")"
			}
		}
	}
}

// Update handles a key; it returns a request for the dashboard, if any.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	km := m.KeyMap
	if key.Matches(k, km.Cancel) {
		return m.back()
	}
	switch m.stage {
	case StageForm:
		return m.updateForm(k)
	case StagePlan:
		return m.updatePlan(k)
	case StageResult:
		if key.Matches(k, km.Submit) {
			return send(Closed{})
		}
	}
	return nil
}

// back goes one stage back, or closes the dialog.
func (m *Model) back() tea.Cmd {
	if m.stage == StagePlan && m.mode == ModeApply {
		m.stage, m.plan, m.force = StageForm, nil, false
		return nil
	}
	return send(Closed{})
}

func (m *Model) updateForm(k tea.KeyMsg) tea.Cmd {
	km := m.KeyMap
	switch {
	case key.Matches(k, km.Submit):
		return m.submitForm()
	case key.Matches(k, km.NextField):
		m.moveField(1)
		return nil
	case key.Matches(k, km.PrevField):
		m.moveField(-1)
		return nil
	case m.focus == fieldKind && key.Matches(k, km.CycleLeft):
		m.setKind(m.kind - 1)
		return nil
	case m.focus == fieldKind && key.Matches(k, km.CycleRight):
		m.setKind(m.kind + 1)
		return nil
	case m.focus == fieldKind:
		return nil
	}
	var cmd tea.Cmd
	m.inputs[m.focus], cmd = m.inputs[m.focus].Update(k)
	return cmd
}

func (m *Model) value(f int) string { return strings.TrimSpace(m.inputs[f].Value()) }

func (m *Model) submitForm() tea.Cmd {
	var ttl time.Duration
	if m.mode == ModeApply || m.mode == ModeExtend {
		d, err := time.ParseDuration(m.value(fieldTTL))
		if err != nil || d <= 0 {
			m.problem = "TTL: a duration such as 15m"
			return nil
		}
		ttl = d
	}
	m.problem = ""
	switch m.mode {
	case ModeRelease:
		m.stage = StageApplying
		return send(ReleaseRequest{ActionID: m.lever.ActionID, Reason: m.value(fieldReason)})
	case ModeExtend:
		m.stage = StageApplying
		return send(ExtendRequest{ActionID: m.lever.ActionID, Reason: m.value(fieldReason), TTL: ttl})
	}
	m.planSpec = actions.Spec{Kind: string(actions.Specs[m.kind].Kind), Target: m.value(fieldTarget),
		Value: m.value(fieldValue), TTL: ttl, Reason: m.value(fieldReason)}
	m.stage = StagePlanning
	return send(PlanRequest{Spec: m.planSpec})
}

func (m *Model) updatePlan(k tea.KeyMsg) tea.Cmd {
	if m.plan.Refusal != "" {
		switch {
		case key.Matches(k, m.KeyMap.Submit):
			return m.back()
		case m.plan.Forceable && !m.force && key.Matches(k, m.KeyMap.Force):
			return m.planForced()
		}
		return nil
	}
	if !key.Matches(k, m.KeyMap.Submit) {
		var cmd tea.Cmd
		m.confirm, cmd = m.confirm.Update(k)
		return cmd
	}
	typed := strings.TrimSpace(m.confirm.Value())
	if typed != m.plan.Target {
		m.problem = "type " + m.plan.Target + " exactly to confirm"
		return nil
	}
	m.stage, m.problem = StageApplying, ""
	if m.mode == ModeStep {
		return send(StepRunRequest{Step: m.step, Typed: typed, Force: m.force})
	}
	return send(ApplyRequest{Spec: m.planSpec, Typed: typed})
}

// planForced asks for the plan again with --force, as the refusal offered.
func (m *Model) planForced() tea.Cmd {
	m.force, m.stage, m.plan = true, StagePlanning, nil
	if m.mode == ModeStep {
		return send(StepPlanRequest{Step: m.step, Force: true})
	}
	m.planSpec.Force = true
	return send(PlanRequest{Spec: m.planSpec})
}

// ShortHelp implements help.KeyMap: the keys of the current stage.
func (m *Model) ShortHelp() []key.Binding {
	km := m.KeyMap
	switch {
	case m.stage == StageForm && m.mode == ModeApply:
		return km.DialogHelp()
	case m.stage == StageForm:
		return []key.Binding{km.NextField, km.Submit, km.Cancel}
	}
	return []key.Binding{km.Submit, km.Cancel}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }
