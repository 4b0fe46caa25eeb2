// Package levers is the dashboard's levers section: every active lever
// with its holder, reason, time left (counting down locally) and how many
// provider instances have applied it, and the approval requests waiting
// for a second person.
package levers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/tui/common"
)

// Model is the levers section.
type Model struct {
	common.Common
	Focused bool

	levers    []lever.Lever
	seen      map[string]int
	live      int
	approvals []actions.Approval
	filter    string
	sel       int
	start     int
	// staleSince is when the control plane stopped answering (zero while
	// it answers); the levers shown are the last ones read.
	staleSince time.Time
	staleWhy   string
}

// SetStale marks the levers as the last read, the control plane having
// failed since since with why; a zero since clears the mark.
func (m *Model) SetStale(since time.Time, why string) {
	if since.IsZero() || m.staleSince.IsZero() {
		m.staleSince = since
	}
	m.staleWhy = why
}

// Stale reports whether the levers shown may be out of date.
func (m *Model) Stale() bool { return !m.staleSince.IsZero() }

// New returns an empty levers section.
func New(c common.Common) *Model { return &Model{Common: c, seen: map[string]int{}} }

// SetLevers replaces the levers with a full read.
func (m *Model) SetLevers(ls []lever.Lever) {
	m.levers = slices.Clone(ls)
	m.sort()
}

// Apply folds one change from the feed into the list: set changes carry
// the whole lever, del changes remove it. A change older than the lever
// held is ignored, so a late message cannot undo a newer one.
func (m *Model) Apply(c lever.Change) {
	i := slices.IndexFunc(m.levers, func(l lever.Lever) bool { return l.Kind == c.Kind && l.Target == c.Target })
	if i >= 0 && m.levers[i].Version > c.Version {
		return
	}
	switch {
	case c.Op == lever.OpSet && c.Lever != nil && i >= 0:
		m.levers[i] = *c.Lever
	case c.Op == lever.OpSet && c.Lever != nil:
		m.levers = append(m.levers, *c.Lever)
	case i >= 0:
		m.levers = slices.Delete(m.levers, i, i+1)
	}
	m.sort()
}

func (m *Model) sort() {
	slices.SortFunc(m.levers, func(a, b lever.Lever) int {
		return strings.Compare(lever.Member(a.Kind, a.Target), lever.Member(b.Kind, b.Target))
	})
	m.clamp()
}

// SetAcks records how many live instances applied each lever.
func (m *Model) SetAcks(seen map[string]int, live int) { m.seen, m.live = seen, live }

// SetApprovals records the approval requests; only pending ones are shown.
func (m *Model) SetApprovals(aps []actions.Approval) { m.approvals = aps }

// SetFilter shows only levers whose target contains f.
func (m *Model) SetFilter(f string) {
	m.filter = f
	m.clamp()
}

// Prune drops levers that have expired: expired means absent for every
// reader, whether or not a change message says so.
func (m *Model) Prune() {
	now := m.Now()
	m.levers = slices.DeleteFunc(m.levers, func(l lever.Lever) bool { return !now.Before(l.ExpiresAt) })
	m.clamp()
}

// Levers returns the levers shown after the filter.
func (m *Model) Levers() []lever.Lever {
	var out []lever.Lever
	for _, l := range m.levers {
		if m.filter == "" || strings.Contains(l.Target, m.filter) {
			out = append(out, l)
		}
	}
	return out
}

func (m *Model) clamp() { m.sel = min(m.sel, max(len(m.Levers())-1, 0)) }

// Selected returns the selected lever.
func (m *Model) Selected() (lever.Lever, bool) {
	ls := m.Levers()
	if m.sel >= len(ls) {
		return lever.Lever{}, false
	}
	return ls[m.sel], true
}

// Update moves the selection.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	m.sel = m.Move(msg, m.sel, len(m.Levers()))
	return nil
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.KeyMap.Up, m.KeyMap.Down, m.KeyMap.Release, m.KeyMap.Extend}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// View draws the section at its size.
func (m *Model) View() string {
	st, now := m.Styles, m.Now()
	ls := m.Levers()
	var lines []string
	if m.Stale() {
		lines = append(lines, st.Stale.Render(common.Fit(fmt.Sprintf("STALE since %s: Redis unreachable (%s); the last levers read",
			m.staleSince.Format("15:04:05"), m.staleWhy), m.Width-2)))
	}
	if len(ls) == 0 {
		lines = append(lines, st.Muted.Render("no levers active: normal operation"))
	}
	var pending []actions.Approval
	for _, ap := range m.approvals {
		if ap.State(now) == actions.RequestPending {
			pending = append(pending, ap)
		}
	}
	rows := m.Height - 2 - min(len(pending), 3)
	if len(pending) > 0 {
		rows--
	}
	if m.Stale() {
		rows++ // the stale line is counted in lines
	}
	// Two lines a lever: what and how long, then who, why and who saw it.
	m.start = common.Window(m.start, m.sel, max(rows/2, 1), len(ls))
	for i := m.start; i < len(ls) && len(lines)+1 < rows; i++ {
		l := ls[i]
		head := fmt.Sprintf("%s %s=%s", l.Kind, l.Target, l.Value)
		if i == m.sel && m.Focused {
			head = common.Select(st, head, 0)
		} else {
			head = st.Bold.Render(head)
		}
		seen := fmt.Sprintf("seen by %d/%d", m.seen[lever.Member(l.Kind, l.Target)], m.live)
		lines = append(lines, head+"  "+st.Warn.Render(common.Left(l.ExpiresAt.Sub(now))+" left"),
			"  "+seen+" · "+l.Actor+" · "+st.Muted.Render(l.Reason))
	}
	if len(pending) > 0 {
		lines = append(lines, st.Title.Render("pending approval:"))
		for _, ap := range pending[:min(len(pending), 3)] {
			lines = append(lines, fmt.Sprintf("  %s %s=%s by %s, request %s (%s left)", ap.Kind, ap.Target, ap.Value, ap.Actor,
				ap.ID, common.Left(ap.ExpiresAt.Sub(now))))
		}
	}
	title := fmt.Sprintf("Levers (%d)", len(ls))
	if m.Stale() {
		title += " STALE"
	}
	return m.Frame(title, lines, m.Focused)
}
