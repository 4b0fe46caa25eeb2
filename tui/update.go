package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
	"github.com/stormctl/stormctl/tui/common"
	"github.com/stormctl/stormctl/tui/components/dialog"
	"github.com/stormctl/stormctl/tui/components/header"
	"github.com/stormctl/stormctl/tui/components/signals"
)

// Update handles one message. It never waits on I/O: every read and write
// is a command whose result arrives as another message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case tea.KeyMsg:
		return m, m.key(msg)
	case tickMsg:
		m.levers.Prune()
		if m.status != "" && m.Now().Sub(m.statusAt) > statusTTL {
			m.status = ""
		}
		return m, m.tick()
	case refreshTickMsg:
		if msg.seq == m.refreshSeq {
			return m, m.refresh()
		}
	case signalsMsg:
		m.refreshing, m.header.Refreshing = false, false
		if msg.gen != m.gen { // for targets left behind: ask for the new ones now
			m.refreshSeq++
			return m, m.refresh()
		}
		if m.signals.Fleet() {
			m.signals.SetFleet(true, signals.Summaries(m.targets, msg.results), "")
		}
		m.signals.SetPanels(signals.Build(m.targets, msg.results), msg.at)
		m.noteCuts(msg.results)
		m.header.Refreshed = msg.at
		m.header.Prom = promHealth(msg.results)
		return m, m.scheduleRefresh()
	case feedMsg:
		m.feedRetry = 0
		return m, waitChange(msg)
	case changeMsg:
		if msg.closed {
			msg.feed.stop()
			return m, m.resubscribeLater("the change feed closed")
		}
		m.levers.Apply(safeChange(msg.change))
		return m, waitChange(msg.feed)
	case resubscribeMsg:
		return m, m.subscribe()
	case leversMsg:
		if msg.err != nil {
			m.levers.SetStale(m.Now(), msg.err.Error())
			return m, m.fail("levers", msg.err)
		}
		m.levers.SetLevers(safeLevers(msg.levers))
		m.levers.SetStale(time.Time{}, "")
		m.levers.Prune()
		m.recovered("levers")
	case acksMsg:
		m.header.Redis = header.Health{Configured: true, Known: true, OK: msg.err == nil, RTT: msg.rtt}
		if msg.err == nil {
			m.levers.SetAcks(msg.seen, msg.live)
			m.recovered("approvals", "journal")
			if m.levers.Stale() {
				// Redis answers again: read the levers missed meanwhile.
				cmd := m.readLevers()
				return m, tea.Batch(cmd, m.opts.After(m.jitter(m.opts.AcksEvery), func(time.Time) tea.Msg { return acksTickMsg{} }))
			}
		} else {
			m.header.Redis.Err = msg.err.Error()
			m.levers.SetStale(m.Now(), msg.err.Error())
		}
		return m, m.opts.After(m.jitter(m.opts.AcksEvery), func(time.Time) tea.Msg { return acksTickMsg{} })
	case acksTickMsg:
		return m, m.readAcks()
	case approvalsMsg:
		if msg.err != nil {
			return m, m.fail("approvals", msg.err) // the last ones read stay listed
		}
		m.levers.SetApprovals(safeApprovals(msg.approvals))
		m.recovered("approvals")
	case tailMsg:
		if msg.err != nil {
			return m, tea.Batch(m.fail("journal", msg.err), m.refollowLater(msg.after))
		}
		m.journal.Add(safeEntries(msg.entries)...)
		m.noteAlertEntries(msg.entries)
		m.journal.AddUnreadable(msg.unreadable)
		m.recovered("journal")
		return m, m.follow(msg.after)
	case followStartMsg:
		return m, waitFollow(msg.ch, msg.after)
	case followMsg:
		return m, m.followed(msg)
	case refollowMsg:
		return m, m.follow(msg.after)
	case *common.ErrorMsg:
		text := msg.Err.Error()
		if msg.Source != "" {
			text = msg.Source + ": " + text
		}
		m.setStatus(text, true)
	case common.StatusMsg:
		m.setStatus(string(msg), false)
	case reportDoneMsg:
		return m, m.reportDone(msg)
	case StepProgressMsg:
		if msg.Step == m.playbook.Running() {
			m.playbook.SetProgress(msg.Text)
		}
	default:
		if cmd, ok := m.extraMsg(msg); ok {
			return m, cmd
		}
		return m, m.actionMsg(msg)
	}
	return m, nil
}

func (m *Model) fail(source string, err error) tea.Cmd {
	m.setStatus(source+": "+err.Error(), true)
	m.errSource = source
	return nil
}

// feedBackoff bounds the wait before reopening a lost change feed.
const feedBackoff = 30 * time.Second

func (m *Model) resubscribeLater(why string) tea.Cmd {
	m.feedRetry = min(max(2*m.feedRetry, time.Second), feedBackoff)
	m.setStatus(fmt.Sprintf("levers: %s; reconnecting in %s", why, m.feedRetry), true)
	m.errSource = "levers"
	return m.opts.After(m.jitter(m.feedRetry), func(time.Time) tea.Msg { return resubscribeMsg{} })
}

func (m *Model) refollowLater(after string) tea.Cmd {
	return m.opts.After(m.jitter(5*time.Second), func(time.Time) tea.Msg { return refollowMsg{after: after} })
}

func (m *Model) followed(msg followMsg) tea.Cmd {
	it, after := msg.item, msg.after
	if it.end {
		return m.refollowLater(after)
	}
	if it.pos != "" {
		after = it.pos
	}
	if it.unreadable {
		m.journal.AddUnreadable(1)
	}
	if it.err != nil {
		m.setStatus("journal: "+it.err.Error(), true)
		return waitFollow(msg.ch, after)
	}
	m.journal.Add(safeEntries([]journal.Entry{it.entry})...)
	m.noteAlertEntries([]journal.Entry{it.entry})
	var cmd tea.Cmd
	if (it.entry.Event == journal.ActionRequested || it.entry.Event == journal.ActionApproved) && m.deps.Actions != nil {
		cmd = m.readApprovals()
	}
	return tea.Batch(cmd, waitFollow(msg.ch, after))
}

// promHealth is Prometheus's state from one refresh: up if any query was
// answered, with the slowest answer as its round-trip time.
func promHealth(results []queries.Result) header.Health {
	h := header.Health{Configured: true, Known: len(results) > 0}
	for _, r := range results {
		if r.Stale || r.Err != nil {
			if h.Err == "" && r.Err != nil {
				h.Err = r.Err.Error()
			}
			continue
		}
		h.OK = true
		h.RTT = max(h.RTT, r.Took)
	}
	return h
}

func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	km := m.KeyMap
	switch {
	case k.String() == "ctrl+c":
		return tea.Quit
	case m.showHelp:
		if keyIs(k, km.Quit) {
			return tea.Quit
		}
		m.showHelp = false
		return nil
	case m.dialog != nil:
		return m.dialog.Update(k)
	case m.filtering:
		return m.filterKey(k)
	}
	switch {
	case keyIs(k, km.Quit):
		return tea.Quit
	case keyIs(k, km.Help):
		m.showHelp = true
	case keyIs(k, km.Filter):
		m.filtering = true
		return m.filter.Focus()
	case keyIs(k, km.NextFocus):
		m.cycleFocus(1)
	case keyIs(k, km.PrevFocus):
		m.cycleFocus(-1)
	case keyIs(k, km.Refresh):
		m.refreshSeq++ // a manual refresh replaces the scheduled one
		return m.refresh()
	case keyIs(k, km.Action):
		return m.openApply()
	case keyIs(k, km.Report):
		return m.writeReport()
	default:
		return m.sectionKey(k)
	}
	return nil
}

func (m *Model) sectionKey(k tea.KeyMsg) tea.Cmd {
	km := m.KeyMap
	switch m.focus {
	case FocusSignals:
		switch {
		case keyIs(k, km.Drill) && m.signals.Fleet():
			return m.drillInto()
		case keyIs(k, km.Group) && m.signals.Fleet():
			m.signals.ToggleGrouping()
			return nil
		case keyIs(k, km.Back) && m.drill != "":
			return m.setTargets(m.opts.Signals, "")
		}
		return m.signals.Update(k)
	case FocusLevers:
		switch {
		case keyIs(k, km.Release):
			return m.openLever(dialog.ModeRelease)
		case keyIs(k, km.Extend):
			return m.openLever(dialog.ModeExtend)
		}
		return m.levers.Update(k)
	case FocusPlaybook:
		if keyIs(k, km.RunStep) {
			return m.runSelectedStep()
		}
		return m.playbook.Update(k)
	case FocusJournal:
		return m.journal.Update(k)
	}
	return nil
}

func (m *Model) filterKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEnter:
		m.filtering = false
		m.filter.Blur()
		return m.drillToFiltered()
	case tea.KeyEsc:
		m.filtering = false
		m.filter.Blur()
		m.filter.SetValue("")
		m.applyFilter()
		return nil
	}
	var cmd tea.Cmd
	m.filter, cmd = m.filter.Update(k)
	m.applyFilter()
	return cmd
}

func (m *Model) applyFilter() {
	f := m.filter.Value()
	m.signals.SetFilter(f)
	m.levers.SetFilter(f)
	m.journal.SetFilter(f)
}
