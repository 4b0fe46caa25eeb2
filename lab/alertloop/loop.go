package alertloop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/alerts"
	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/lab"
	"github.com/stormctl/stormctl/lever"
	"github.com/stormctl/stormctl/playbooks"
	"github.com/stormctl/stormctl/queries"
)

// Defaults of a loop.
const (
	// DefaultEvery is the rules' evaluation interval, in simulated time.
	DefaultEvery = 5 * time.Second
	// DefaultGroupWait is Alertmanager's group_wait before a new group's
	// first notification, as a paging route sets it (Alertmanager's own
	// default is 30s).
	DefaultGroupWait = 10 * time.Second
	receiverName     = "stormctl-lab"
)

// DefaultAllow is the autopilot's allow list when none is given: retries,
// breakers and degraded modes of every service, the levers the storm
// playbooks pull first.
var DefaultAllow = map[string][]string{string(lever.Retries): {"*"}, string(lever.Breaker): {"*"}, string(lever.Degraded): {"*"}}

// Options configure a loop.
type Options struct {
	Lab *lab.Lab
	// Store is the lab's control plane; PromURL its served API, where the
	// guards and the playbook's checks read their evidence.
	Store       *controlplane.Store
	PromURL     string
	Policy      *actions.Policy // nil: the built-in policy
	PendingPath string
	// QueriesDirs and PlaybooksDirs add to the built-in catalogue and
	// playbooks; Playbooks maps a saved query to its playbook before the
	// built-in mapping (alerts.PlaybookFor).
	QueriesDirs, PlaybooksDirs []string
	Playbooks                  map[string]string
	// Autopilot turns the autopilot on with the allow list Allow (nil:
	// DefaultAllow) and lever TTL TTL; off, the receiver only journals.
	Autopilot bool
	Allow     map[string][]string
	// Modes adds to the degraded modes of the scenario's services (each
	// service with a degraded path has the mode its path is named after).
	Modes     map[string]string
	TTL       time.Duration
	Every     time.Duration
	GroupWait time.Duration
	Log       *slog.Logger
}

// Action is one lever the autopilot pulled, as the fleet got it.
type Action struct {
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	Value  string  `json:"value"`
	AtS    float64 `json:"at_s"`
	ID     string  `json:"action_id"`
}

// Report is what the loop did: the `autopilot` object of `lab run
// --autopilot -o json`.
type Report struct {
	Actions []Action `json:"actions"`
	// FirstSignalS is when the first alert on a retry signal fired
	// (lab.RetrySignals); LeverS when the first lever reached the fleet.
	FirstSignalS *float64 `json:"first_signal_s"`
	LeverS       *float64 `json:"lever_s"`
	// Fired is every alert that fired: "alertname service->dependency at s".
	Fired    []Fired `json:"fired"`
	Webhooks int     `json:"webhooks"`
}

// Fired is one alert that fired (or resolved, with ResolvedS).
type Fired struct {
	Alert     string   `json:"alert"`
	Query     string   `json:"query"`
	Target    string   `json:"target,omitempty"`
	AtS       float64  `json:"at_s"`
	ResolvedS *float64 `json:"resolved_s"`
}

// Loop is a lab with its alerting rules, receiver and autopilot.
type Loop struct {
	o       Options
	rules   *Rules
	group   *grouper
	srv     *alerts.Server
	pilot   *alerts.Autopilot
	token   string
	client  *http.Client
	signals []string
	seen    map[string]bool // lever action id@version already settled
	fired   map[*Alert]int  // index in report.Fired
	report  Report
}

// Start loads the rules as `query export --format rules --alerts --pack
// stormctl` prints them, with the scenario's thresholds (its own catalogue,
// as a team would tune the queries for its fleet), and starts the receiver
// on a loopback port of its own.
func Start(o Options) (*Loop, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.GroupWait < 0 {
		o.GroupWait = 0
	} else if o.GroupWait == 0 {
		o.GroupWait = DefaultGroupWait
	}
	if o.Allow == nil {
		o.Allow = DefaultAllow
	}
	cat, err := queries.Load(o.QueriesDirs...)
	if err != nil {
		return nil, fmt.Errorf("lab autopilot: %w", err)
	}
	for id, t := range o.Lab.Sim.Scenario().Thresholds {
		q, err := cat.Query(id)
		if err != nil {
			return nil, fmt.Errorf("lab autopilot: scenario thresholds: %w", err)
		}
		q.Threshold.Warn, q.Threshold.Crit = t.Warn, t.Crit
	}
	file, err := cat.AlertRules(queries.DefaultPack, queries.Params{}, alerts.PlaybookFor(o.Playbooks))
	if err != nil {
		return nil, fmt.Errorf("lab autopilot: %w", err)
	}
	rules, err := ParseRules(file)
	if err != nil {
		return nil, fmt.Errorf("lab autopilot: %w", err)
	}
	lp := &Loop{o: o, rules: rules, group: newGrouper(o.GroupWait), signals: lab.RetrySignals(), seen: map[string]bool{},
		fired: map[*Alert]int{}, client: &http.Client{Timeout: 30 * time.Second},
		report: Report{Actions: []Action{}, Fired: []Fired{}}} // [] in JSON when nothing happens
	if err := lp.startReceiver(cat); err != nil {
		return nil, err
	}
	return lp, nil
}

func (lp *Loop) startReceiver(cat *queries.Catalog) error {
	o := lp.o
	svc, err := o.Lab.NewActions(lab.ActionsOptions{Store: o.Store, PromURL: o.PromURL, Policy: o.Policy, PendingPath: o.PendingPath})
	if err != nil {
		return err
	}
	client, err := queries.NewClient(config.Prometheus{URL: o.PromURL}, func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("lab autopilot: %w", err)
	}
	set, err := playbooks.Load(cat, o.PlaybooksDirs...)
	if err != nil {
		return fmt.Errorf("lab autopilot: %w", err)
	}
	m := alerts.NewMetrics()
	rcv := &alerts.Receiver{Claims: o.Store, Actions: svc, Playbook: alerts.PlaybookFor(o.Playbooks), Metrics: m, Log: o.Log}
	if o.Autopilot {
		packFor := func(_, _ string) (string, map[string]string, error) { return queries.DefaultPack, nil, nil }
		// The verify step waits in wall time; the loop's levers live their
		// TTL of simulated time instead.
		lp.pilot = &alerts.Autopilot{Actions: svc, Playbooks: set.Get,
			Measurer: &playbooks.PromMeasurer{Catalog: cat, Runner: queries.NewRunner(client, queries.RunnerOptions{}), PackFor: packFor},
			Allow:    o.Allow, Modes: lp.modes(), TTL: o.TTL, Metrics: m, Log: o.Log, NoVerify: true}
		rcv.Autopilot = lp.pilot
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	lp.token = hex.EncodeToString(tok[:])
	lp.srv, err = alerts.Start(alerts.ServerOptions{Listen: "127.0.0.1:0", ManagementAddr: "127.0.0.1:0", Token: lp.token,
		Receiver: rcv, Log: o.Log})
	return err
}

// Close stops the receiver.
func (lp *Loop) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = lp.srv.Shutdown(ctx)
	lp.pilot.Close()
}

// Rules is how many alerting rules the loop evaluates.
func (lp *Loop) Rules() int { return lp.rules.Len() }

// Run simulates to the end (or until ctx ends): every evaluation interval
// it evaluates the rules at the simulated present, delivers what
// Alertmanager would send then, and makes every lever the autopilot
// pulled reach the fleet before the simulation moves on.
func (lp *Loop) Run(ctx context.Context) (*Report, error) {
	l := lp.o.Lab
	for t := l.Sim.Now() + lp.o.Every; t <= l.Sim.Until(); t += lp.o.Every {
		if err := l.Sim.RunTo(ctx, t); err != nil {
			return &lp.report, err
		}
		if err := lp.tick(ctx, t); err != nil {
			return &lp.report, err
		}
	}
	return &lp.report, l.Sim.Run(ctx)
}

func (lp *Loop) tick(ctx context.Context, t time.Duration) error {
	l := lp.o.Lab
	now := l.Epoch.Add(t)
	changed, err := lp.rules.Eval(ctx, l.DB.Engine, l.DB.Store, now)
	if err != nil {
		return err
	}
	for _, a := range changed {
		lp.record(a, t)
		lp.group.add(a, now)
	}
	for _, m := range lp.group.due(now, receiverName) {
		if err := lp.deliver(ctx, m); err != nil {
			return err
		}
	}
	return lp.settle(ctx, t)
}

// record notes an alert that fired or resolved.
func (lp *Loop) record(a *Alert, t time.Duration) {
	s := t.Seconds()
	if a.State == Inactive {
		if i, ok := lp.fired[a]; ok {
			lp.report.Fired[i].ResolvedS = &s
			delete(lp.fired, a)
		}
		return
	}
	query := a.Labels.Get(queries.AlertLabelQuery)
	f := Fired{Alert: a.Rule, Query: query, Target: target(a.Labels.Get("service"), a.Labels.Get("dependency")), AtS: s}
	lp.fired[a] = len(lp.report.Fired)
	lp.report.Fired = append(lp.report.Fired, f)
	if slices.Contains(lp.signals, query) && lp.report.FirstSignalS == nil {
		lp.report.FirstSignalS = &s
	}
}

func target(service, dependency string) string {
	switch {
	case service != "" && dependency != "":
		return service + "->" + dependency
	case service != "":
		return service
	}
	return dependency
}

// deliver posts one notification as Alertmanager's webhook_configs with a
// bearer token does.
func (lp *Loop) deliver(ctx context.Context, m *alerts.Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+lp.srv.Addr()+"/alertmanager", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Alertmanager/lab")
	req.Header.Set("Authorization", "Bearer "+lp.token)
	resp, err := lp.client.Do(req)
	if err != nil {
		return fmt.Errorf("lab autopilot: webhook: %w", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lab autopilot: webhook for %s: HTTP %d: %s", m.GroupKey, resp.StatusCode, bytes.TrimSpace(out))
	}
	lp.report.Webhooks++
	return nil
}

// settle makes every lever the autopilot holds that the fleet has not
// been given yet take effect now, and records it.
func (lp *Loop) settle(ctx context.Context, t time.Duration) error {
	held, err := lp.o.Store.Levers(ctx)
	if err != nil {
		return err
	}
	for _, lv := range held {
		key := fmt.Sprintf("%s@%d", lv.ActionID, lv.Version)
		if lv.Actor != alerts.Actor || lp.seen[key] {
			continue
		}
		lp.seen[key] = true
		if err := lp.o.Lab.Settle(ctx, lv.Kind, lv.Target, lv.Version, true); err != nil {
			return err
		}
		s := t.Seconds()
		lp.report.Actions = append(lp.report.Actions, Action{Kind: string(lv.Kind), Target: lv.Target, Value: lv.Value, AtS: s, ID: lv.ActionID})
		if lp.report.LeverS == nil {
			lp.report.LeverS = &s
		}
	}
	return nil
}

// WriteReport writes what the autopilot loop did after a lab summary.
// Targets come from alert labels, so they are escaped.
func WriteReport(out io.Writer, r *Report) error {
	w := new(bytes.Buffer)
	at := func(v *float64) string {
		if v == nil {
			return "never"
		}
		return fmt.Sprintf("%.0fs", *v)
	}
	fmt.Fprintf(w, "autopilot: first retry signal fired at %s, first lever at %s, %d webhooks\n", at(r.FirstSignalS), at(r.LeverS), r.Webhooks)
	for _, f := range r.Fired {
		fmt.Fprintf(w, "  alert %-28s %-32s fired %s, resolved %s\n", sanitize.Line(f.Alert), sanitize.Line(f.Target), at(&f.AtS), at(f.ResolvedS))
	}
	for _, a := range r.Actions {
		fmt.Fprintf(w, "  lever %s %s=%s at %.0fs (action %s)\n", sanitize.Line(a.Kind), sanitize.Line(a.Target), sanitize.Line(a.Value), a.AtS, sanitize.Line(a.ID))
	}
	_, err := out.Write(w.Bytes())
	return err
}

// modes is the degraded mode of each of the scenario's services that has a
// degraded path, then Options.Modes.
func (lp *Loop) modes() map[string]string {
	out := map[string]string{}
	for _, svc := range lp.o.Lab.Sim.Scenario().Services {
		if svc.Degraded != nil {
			out[svc.Name] = svc.Degraded.Name
		}
	}
	maps.Copy(out, lp.o.Modes)
	return out
}
