package tui

import (
	"math/rand/v2"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/queries"
)

// Messages of the dashboard's own commands.
type (
	tickMsg        time.Time
	refreshTickMsg struct{ seq int }
	signalsMsg     struct {
		results []queries.Result
		at      time.Time
		gen     int // the targets' generation it answers
	}
	leversMsg struct {
		levers []lever.Lever
		err    error
	}
	feedMsg struct {
		ch   <-chan lever.Change
		stop func()
	}
	changeMsg struct {
		feed   feedMsg
		change lever.Change
		closed bool
	}
	resubscribeMsg struct{}
	acksMsg        struct {
		seen map[string]int
		live int
		rtt  time.Duration
		err  error
	}
	acksTickMsg  struct{}
	approvalsMsg struct {
		approvals []actions.Approval
		err       error
	}
	tailMsg struct {
		entries    []journal.Entry
		unreadable int // records that did not parse as entries
		after      string
		err        error
	}
	followStartMsg struct {
		ch    <-chan followItem
		after string
	}
	followMsg struct {
		ch    <-chan followItem
		item  followItem
		after string
	}
	refollowMsg struct{ after string }
)

type followItem struct {
	entry      journal.Entry
	pos        string
	err        error
	unreadable bool // err is the record's, not the stream's
	end        bool
}

func defaultRand() float64 { return rand.Float64() }

// jitter spreads d by ±20%.
func (m *Model) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*m.opts.Rand()))
}

func (m *Model) tick() tea.Cmd {
	return m.opts.After(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// refresh starts one refresh of every panel unless one is in flight; the
// next is scheduled when it ends, so refreshes never pile up behind a
// slow Prometheus.
func (m *Model) refresh() tea.Cmd {
	if m.deps.Querier == nil || len(m.targets) == 0 || m.refreshing {
		return nil
	}
	m.refreshing, m.header.Refreshing = true, true
	m.refreshSeq++
	now := m.Now()
	reqs := m.requests(now)
	q, ctx, gen := m.deps.Querier, m.Ctx, m.gen
	return func() tea.Msg { return signalsMsg{results: q.RunAll(ctx, reqs), at: now, gen: gen} }
}

func (m *Model) scheduleRefresh() tea.Cmd {
	seq := m.refreshSeq
	return m.opts.After(m.jitter(m.opts.Refresh), func(time.Time) tea.Msg { return refreshTickMsg{seq: seq} })
}

// subscribe opens the change feed, then reads every lever: a change made
// between the two is in the read or arrives on the feed.
func (m *Model) subscribe() tea.Cmd {
	s, ctx := m.deps.Store, m.Ctx
	return tea.Sequence(
		func() tea.Msg {
			ch, stop := s.Subscribe(ctx)
			return feedMsg{ch: ch, stop: stop}
		},
		func() tea.Msg {
			ls, err := s.Levers(ctx)
			return leversMsg{levers: ls, err: err}
		})
}

func waitChange(f feedMsg) tea.Cmd {
	return func() tea.Msg {
		c, ok := <-f.ch
		return changeMsg{feed: f, change: c, closed: !ok}
	}
}

func (m *Model) readAcks() tea.Cmd {
	s, ctx, now := m.deps.Store, m.Ctx, m.Now
	return func() tea.Msg {
		start := now()
		seen, live, err := s.Acks(ctx)
		return acksMsg{seen: seen, live: live, rtt: now().Sub(start), err: err}
	}
}

func (m *Model) readApprovals() tea.Cmd {
	a, ctx := m.deps.Actions, m.Ctx
	return func() tea.Msg {
		aps, err := a.Approvals(ctx)
		return approvalsMsg{approvals: aps, err: err}
	}
}

// tailLen is how many journal entries the dashboard starts with.
const tailLen = 50

func (m *Model) tailJournal() tea.Cmd {
	j, ctx := m.deps.Journal, m.Ctx
	return func() tea.Msg {
		recs, err := j.Tail(ctx, tailLen)
		msg := tailMsg{err: err, after: "0"}
		for _, r := range recs {
			if e, err := journal.Parse(r.Data); err == nil {
				msg.entries = append(msg.entries, e)
			} else {
				msg.unreadable++
			}
			msg.after = r.Pos
		}
		return msg
	}
}

// follow streams entries after the given stream position into a channel
// the dashboard drains one message at a time.
func (m *Model) follow(after string) tea.Cmd {
	j, ctx := m.deps.Journal, m.Ctx
	return func() tea.Msg {
		ch := make(chan followItem, 16)
		go func() {
			defer close(ch)
			for r, err := range j.Follow(ctx, after) {
				it := followItem{pos: r.Pos, err: err}
				if err == nil {
					it.entry, it.err = journal.Parse(r.Data)
					it.unreadable = it.err != nil
				}
				select {
				case ch <- it:
				case <-ctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		return followStartMsg{ch: ch, after: after}
	}
}

func waitFollow(ch <-chan followItem, after string) tea.Cmd {
	return func() tea.Msg {
		it, ok := <-ch
		if !ok {
			it.end = true
		}
		return followMsg{ch: ch, item: it, after: after}
	}
}

// readLevers reads every lever once, e.g. after Redis answers again.
func (m *Model) readLevers() tea.Cmd {
	s, ctx := m.deps.Store, m.Ctx
	return func() tea.Msg {
		ls, err := s.Levers(ctx)
		return leversMsg{levers: ls, err: err}
	}
}
