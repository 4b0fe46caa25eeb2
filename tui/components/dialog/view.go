package dialog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/tui/common"
)

var guardIcons = map[string]string{actions.StatusPassed: "✓", actions.StatusRefused: "✗", actions.StatusForced: "!",
	actions.StatusPending: "…", actions.StatusSkipped: "–", actions.StatusNotAsked: "·", actions.StatusReplayed: "="}

// View draws the dialog in a frame Width wide and at most Height high.
func (m *Model) View() string {
	var lines []string
	switch m.stage {
	case StageForm:
		lines = m.formLines()
	case StagePlanning:
		lines = []string{m.Styles.Muted.Render("running every guard (a plan writes nothing but its journal entry)…")}
	case StagePlan:
		lines = fitTail(m.planLines(), m.planTail, max(m.Height-2, 1))
	case StageApplying:
		lines = []string{m.Styles.Warn.Render("writing…")}
	case StageResult:
		style := m.Styles.Passed
		if m.failed {
			style = m.Styles.Refused
		}
		for _, l := range strings.Split(lipgloss.NewStyle().Width(max(m.Width-2, 10)).Render(m.result), "\n") {
			lines = append(lines, style.Render(l))
		}
		lines = append(lines, "", m.Styles.Muted.Render("enter or esc: close"))
	}
	h := min(len(lines)+2, m.Height)
	return common.Frame(m.Styles, m.title, lines, m.Width, h, true)
}

func (m *Model) formLines() []string {
	st := m.Styles
	var lines []string
	if m.mode == ModeRelease || m.mode == ModeExtend {
		l := m.lever
		lines = append(lines, fmt.Sprintf("held by %s (action %s): %s", l.Actor, l.ActionID, l.Reason))
		if m.mode == ModeRelease {
			restore := "normal operation"
			if l.Previous != nil {
				restore = "the lever it superseded: " + l.Previous.Value + " of " + l.Previous.Actor
			}
			lines = append(lines, "releasing restores "+restore, "")
		} else {
			lines = append(lines, fmt.Sprintf("%s left; the kind's maximum TTL applies", common.Left(l.ExpiresAt.Sub(m.Now()))), "")
		}
	}
	label := func(f int, name, val string) {
		mark := "  "
		if f == m.focus {
			mark = "▸ "
		}
		lines = append(lines, mark+st.Label.Render(fmt.Sprintf("%-7s", name))+" "+val)
	}
	for _, f := range m.fields() {
		switch f {
		case fieldKind:
			ks := actions.Specs[m.kind]
			label(f, "kind", fmt.Sprintf("‹ %s › %s", ks.Kind, st.Muted.Render(ks.Values+", max "+ks.MaxTTL.String())))
		case fieldTarget:
			label(f, "target", m.inputs[f].View())
		case fieldValue:
			label(f, "value", m.inputs[f].View())
		case fieldTTL:
			label(f, "ttl", m.inputs[f].View())
		case fieldReason:
			label(f, "reason", m.inputs[f].View())
		}
	}
	if m.problem != "" {
		lines = append(lines, st.Refused.Render(m.problem))
	}
	next := "enter: plan (nothing is written)"
	if m.mode != ModeApply {
		next = "enter: " + map[Mode]string{ModeRelease: "release", ModeExtend: "extend"}[m.mode]
	}
	return append(lines, "", st.Muted.Render(next+" · tab: next field · esc: close"))
}

func (m *Model) planLines() []string {
	st, p := m.Styles, m.plan
	lines := []string{st.Bold.Render("guards")}
	for _, g := range p.Guards {
		icon, style := guardIcons[g.Status], st.Muted
		switch g.Status {
		case actions.StatusPassed:
			style = st.Passed
		case actions.StatusRefused:
			style = st.Refused
		case actions.StatusForced, actions.StatusPending:
			style = st.Warn
		}
		lines = append(lines, fmt.Sprintf(" %s %-13s %s", style.Render(icon), g.Name, st.Muted.Render(g.Detail)))
	}
	if len(p.Evidence) > 0 {
		lines = append(lines, st.Bold.Render("evidence"))
		for _, e := range p.Evidence {
			lines = append(lines, fmt.Sprintf(" %s = %s (%s; %s)", e.Query, strconv.FormatFloat(e.Value, 'g', 4, 64), e.Status, e.Threshold))
		}
	}
	lines = append(lines, st.Bold.Render("change"), " before: "+leverText(p.Before), " after:  "+leverText(p.After))
	start := len(lines)
	defer func() { m.planTail = len(lines) - start }()
	switch {
	case p.Refusal != "":
		lines = append(lines, "")
		// The reason is what the responder must read: wrapped, never cut.
		for _, l := range strings.Split(lipgloss.NewStyle().Width(max(m.Width-2, 10)).Render(p.Refusal), "\n") {
			lines = append(lines, st.Refused.Render(l))
		}
		lines = append(lines, st.Muted.Render("nothing was written but the journal's record of the plan · enter/esc: back"))
		if p.Forceable && !m.force {
			lines = append(lines, st.Warn.Render("f: plan again with --force (journaled as forced; still waits for the evidence, bounded)"))
		}
	default:
		if p.Pending != "" {
			lines = append(lines, "", st.Warn.Render(p.Pending))
		}
		lines = append(lines, "", "Type "+st.Bold.Render(p.Target)+" to confirm: "+m.confirm.View())
		if m.problem != "" {
			lines = append(lines, st.Refused.Render(m.problem))
		}
		lines = append(lines, st.Muted.Render("enter: apply · esc: back"))
	}
	return lines
}

func leverText(l *lever.Lever) string {
	if l == nil {
		return "absent (normal operation)"
	}
	return fmt.Sprintf("%s %s=%s by %s until %s", l.Kind, l.Target, l.Value, l.Actor, l.ExpiresAt.Local().Format("15:04:05"))
}

// fitTail cuts lines to n by dropping lines before the last tail ones (the
// guards and evidence, shown in full by stormctl action plan), so that the
// refusal or the confirmation, and the keys that leave, always show.
func fitTail(lines []string, tail, n int) []string {
	if len(lines) <= n {
		return lines
	}
	keep := min(tail, n)
	head := max(n-keep-1, 0)
	out := append([]string{}, lines[:head]...)
	if n > keep {
		out = append(out, "…")
	}
	return append(out, lines[len(lines)-keep:]...)
}
