package tui

import (
	"context"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/tui/common"
	alertsview "github.com/stormctl/stormctl/tui/components/alerts"
	"github.com/stormctl/stormctl/tui/components/dialog"
	"github.com/stormctl/stormctl/tui/components/header"
	"github.com/stormctl/stormctl/tui/components/journal"
	"github.com/stormctl/stormctl/tui/components/levers"
	"github.com/stormctl/stormctl/tui/components/playbook"
	"github.com/stormctl/stormctl/tui/components/signals"
	"github.com/stormctl/stormctl/tui/keymap"
	"github.com/stormctl/stormctl/tui/styles"
)

// Options say what the dashboard shows and for whom.
type Options struct {
	Context, Actor string
	// Incident is the incident the dashboard acts for ("" none).
	Incident string
	ReadOnly bool
	// Advisory is set when Redis does not bind the actor (one shared
	// user): the header says that roles and approvals are advisory.
	Advisory string
	Signals  signals.Plan
	// Refresh is the mean interval between panel refreshes, jittered by
	// ±20% so that many dashboards do not query in step; default 10s.
	Refresh time.Duration
	// AcksEvery is how often "seen by N instances" and Redis's health are
	// read; default 5s.
	AcksEvery time.Duration
	// LossEvery is how often the journal's position is checked for a
	// loss; default DefaultLossEvery.
	LossEvery time.Duration
	// AlertsEvery is how often Alertmanager and the autopilot are read
	// while they answer; default DefaultAlertsEvery.
	AlertsEvery time.Duration
	// Clock, if set, is a second clock for the header: `stormctl demo`
	// shows the lab's time and when its fault starts.
	Clock func() string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand returns a float in [0, 1) for jitter; default math/rand/v2.
	Rand func() float64
	// After schedules fn's message after d; default tea.Tick. Tests pass
	// one that hands the timers to them to fire.
	After func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd
}

// Section is a focusable part of the dashboard.
type Section int

// Sections in focus order.
const (
	FocusSignals Section = iota
	FocusLevers
	FocusPlaybook
	FocusJournal
	sectionCount
)

var sectionNames = [...]string{"signals", "levers", "playbook", "journal"}

func (s Section) String() string { return sectionNames[s] }

// Model is the dashboard.
type Model struct {
	common.Common
	opts    Options
	deps    Deps
	pb      *lockedPlaybook
	targets []signals.Target

	header   *header.Model
	signals  *signals.Model
	levers   *levers.Model
	playbook *playbook.Model
	journal  *journal.Model
	dialog   *dialog.Model
	help     help.Model

	focus     Section
	lower     Section // the section shown under the signals when narrow
	showHelp  bool
	filtering bool
	filter    textinput.Model

	status    string
	statusErr bool
	statusAt  time.Time
	// errSource is what the error in the status bar came from (levers,
	// approvals, journal), so that its recovery clears it.
	errSource string

	refreshSeq int
	refreshing bool
	reporting  bool // a report is being written
	feedRetry  time.Duration

	// gen counts target changes (drilling into a service and back): a
	// refresh of older targets is dropped when it arrives.
	gen   int
	drill string

	banner banner // the journal loss and the cut answers (banner.go)

	// The alerts section (alerts.go): Alertmanager's alerts, the
	// incident of each by its labels, and the wait before the next read.
	alerts        *alertsview.Model
	alertIncident map[string]string
	alertsRetry   time.Duration
}

// New builds the dashboard. ctx bounds every command it starts: cancel it
// after the program ends to stop the feeds.
func New(ctx context.Context, deps Deps, opts Options) *Model {
	if opts.Refresh <= 0 {
		opts.Refresh = 10 * time.Second
	}
	if opts.AcksEvery <= 0 {
		opts.AcksEvery = 5 * time.Second
	}
	if opts.AlertsEvery <= 0 {
		opts.AlertsEvery = DefaultAlertsEvery
	}
	if opts.LossEvery <= 0 {
		opts.LossEvery = DefaultLossEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = defaultRand
	}
	if opts.After == nil {
		opts.After = tea.Tick
	}
	if opts.ReadOnly {
		deps.Actions = nil
	}
	c := common.Common{Ctx: ctx, Styles: styles.DefaultStyles(), KeyMap: keymap.DefaultKeyMap(opts.ReadOnly),
		Now: opts.Now, ReadOnly: opts.ReadOnly}
	c.KeyMap.Report.SetEnabled(deps.Report != nil)
	m := &Model{Common: c, opts: opts, deps: deps, help: help.New(), lower: FocusLevers}
	m.header = header.New(c)
	m.header.Context, m.header.Actor, m.header.Incident = opts.Context, opts.Actor, opts.Incident
	m.header.ReadOnly, m.header.Clock, m.header.Advisory = opts.ReadOnly, opts.Clock, opts.Advisory != ""
	m.header.Prom.Configured, m.header.Redis.Configured = deps.Querier != nil, deps.Store != nil
	m.signals, m.levers, m.journal = signals.New(c), levers.New(c), journal.New(c)
	m.alerts = alertsview.New(c)
	if deps.Playbook != nil {
		m.pb = &lockedPlaybook{p: deps.Playbook}
		pb := deps.Playbook.Playbook()
		m.playbook = playbook.New(c, pb.Name, pb.Title)
		m.playbook.SetTexts(noteTexts(deps.Playbook))
		snap := m.pb.snapshot()
		m.playbook.SetSteps(snap.steps, snap.next)
		m.lower = FocusPlaybook
	} else {
		m.playbook = playbook.New(c, "", "")
	}
	if opts.Signals.Catalog != nil {
		m.targets = opts.Signals.Targets()
		m.signals.SetFleet(opts.Signals.Fleet(), nil, "")
	}
	m.filter = textinput.New()
	m.filter.Prompt = "/ "
	m.filter.Placeholder = "service"
	m.setFocus(FocusSignals)
	m.SetSize(80, 24)
	return m
}

// Init starts the refresh loop, the change feed, the journal follow and
// the local clock.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.tick(), m.refresh()}
	if m.deps.Store != nil {
		cmds = append(cmds, m.subscribe(), m.readAcks())
	}
	if m.deps.Loss != nil {
		cmds = append(cmds, m.checkLoss())
	}
	if m.alertsShown() {
		cmds = append(cmds, m.readAlerts())
	}
	if m.deps.Alerts != nil && m.deps.Journal != nil {
		cmds = append(cmds, m.readAlertHistory())
	}
	if m.deps.Journal != nil {
		cmds = append(cmds, m.tailJournal())
	}
	if m.deps.Actions != nil {
		cmds = append(cmds, m.readApprovals())
	}
	if m.deps.Querier == nil {
		m.setStatus("no Prometheus configured: set --prometheus-url or STORMCTL_PROMETHEUS_URL", true)
	}
	return tea.Batch(cmds...)
}

// Focus returns the focused section.
func (m *Model) Focus() Section { return m.focus }

// Dialog returns the open dialog, nil if none.
func (m *Model) Dialog() *dialog.Model { return m.dialog }

func (m *Model) setFocus(s Section) {
	m.focus = s
	m.signals.Focused = s == FocusSignals
	m.levers.Focused = s == FocusLevers
	m.playbook.Focused = s == FocusPlaybook
	m.journal.Focused = s == FocusJournal
	if s != FocusSignals {
		m.lower = s
	}
}

func (m *Model) cycleFocus(d int) {
	s := m.focus
	for range sectionCount {
		s = (s + Section(d) + sectionCount) % sectionCount
		if s != FocusPlaybook || m.playbook.Loaded() {
			break
		}
	}
	m.setFocus(s)
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statusErr, m.statusAt, m.errSource = s, isErr, m.Now(), ""
}

// recovered clears the status bar's error if it came from one of sources,
// which have just answered again: a stale error would say it still fails.
func (m *Model) recovered(sources ...string) {
	if m.statusErr && m.errSource != "" && slices.Contains(sources, m.errSource) {
		m.setStatus(m.errSource+": reconnected", false)
	}
}

// statusTTL is how long a message stays in the status bar.
const statusTTL = 15 * time.Second

// noteTexts are the texts of a playbook's note steps, with the run's
// parameters inserted when the run can do that.
func noteTexts(p Playbook) map[string]string {
	texts := map[string]string{}
	r, renders := p.(interface{ StepText(id string) string })
	for _, s := range p.Playbook().Steps {
		if s.Type != playbooks.Note {
			continue
		}
		texts[s.ID] = s.Text
		if renders {
			texts[s.ID] = r.StepText(s.ID)
		}
	}
	return texts
}
