package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/internal/sanitize"
)

// LossChecker notices a control-plane journal that went back (fewer
// entries, an older head: a failover to a replica that had not caught up);
// *controlplane.LossDetector is one. It remembers the furthest position
// seen, journals the loss once, and keeps returning it: the text for the
// banner, "" while the journal is whole.
type LossChecker interface {
	CheckLoss(ctx context.Context) (string, error)
}

// DefaultLossEvery is how often the dashboard checks the journal's
// position: a loss shows within seconds, at the cost of one XLEN and one
// XREVRANGE per check.
const DefaultLossEvery = 2 * time.Second

type (
	lossMsg struct {
		loss string
		err  error
	}
	lossTickMsg struct{}
)

// checkLoss asks the detector once; its answer schedules the next check.
func (m *Model) checkLoss() tea.Cmd {
	d, ctx := m.deps.Loss, m.Ctx
	return func() tea.Msg {
		l, err := d.CheckLoss(ctx)
		return lossMsg{loss: l, err: err}
	}
}

// lossChecked records a check's answer. An error leaves the banner as it
// was: Redis being down is the header's and the levers' news, and the
// detector still holds any loss it found before. A new loss re-reads the
// levers: those listed may be among the lost, and services already read
// them as absent.
func (m *Model) lossChecked(msg lossMsg) tea.Cmd {
	var reread tea.Cmd
	switch {
	case msg.loss != "":
		text := sanitize.Line(msg.loss)
		if text != m.banner.loss && m.deps.Store != nil {
			reread = m.readLevers()
		}
		m.banner.loss = text
	case msg.err == nil:
		m.banner.loss = ""
	}
	m.layout()
	return tea.Batch(reread, m.opts.After(m.jitter(m.opts.LossEvery), func(time.Time) tea.Msg { return lossTickMsg{} }))
}
