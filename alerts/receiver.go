package alerts

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/actions"
	"github.com/stormctl/stormctl/internal/sanitize"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
)

// Journal events of the receiver and the autopilot.
const (
	AlertFired      journal.Event = "alert.fired"
	AlertResolved   journal.Event = "alert.resolved"
	AutopilotPaused journal.Event = "autopilot.paused"
	AutopilotResume journal.Event = "autopilot.resumed"
)

// Actor is the identity the receiver and the autopilot act and journal as.
const Actor = "automation"

// Claims decide inside Redis which process acts on an event;
// *controlplane.Store implements them.
type Claims interface {
	Claim(ctx context.Context, name, value string, ttl time.Duration) (bool, error)
	Claimed(ctx context.Context, name string) (string, error)
	Unclaim(ctx context.Context, name, value string) error
	Settle(ctx context.Context, name, value, next string, ttl time.Duration) (bool, error)
}

// Receiver turns Alertmanager's alert groups into incidents, journal
// entries, notifications and autopilot actions, once per event however
// many replicas receive it and however often Alertmanager retries.
type Receiver struct {
	Claims  Claims
	Actions *actions.Service // incidents, the journal, and (autopilot) levers
	// Playbook names the playbook of a saved query (PlaybookFor).
	Playbook  func(queryID string) string
	Notifier  *Notifier  // nil: no notifications
	Autopilot *Autopilot // nil: no autopilot
	Metrics   *Metrics
	Log       *slog.Logger
	// EventTTL is how long an event is remembered as handled; Alertmanager
	// resends a firing group every repeat_interval (default 4h). Default 48h.
	EventTTL time.Duration
	// EventLease is how long one delivery holds an event while acting on
	// it (DefaultEventLease). A replica that dies mid-event, or loses Redis
	// before it can free the event, holds it no longer than this; then
	// Alertmanager's retry, on any replica, acts on it.
	EventLease time.Duration
}

// DefaultEventLease is Receiver.EventLease's default. Acting on one event
// is cut at three quarters of the lease, so a live holder always finishes
// (or frees the event) before the lease lets another delivery take it.
const DefaultEventLease = time.Minute

// MinLease is the shortest lease a receiver may be configured with: a
// notification's sender holds its notice on the same lease, and must be
// able to renew it between posts that each take up to noticeTimeout.
const MinLease = 2 * noticeTimeout

// Claim values of an event: held while a delivery acts on it, then kept
// for EventTTL as the record that it was acted on.
const (
	eventActing = "acting:"
	eventDone   = "done:"
)

// errInProgress answers a delivery of an event another delivery is still
// acting on: 503, so that Alertmanager tries again.
var errInProgress = errors.New("another delivery of this alert is still being acted on; try again")

// Outcome is what one webhook did.
type Outcome struct {
	Handled    int      `json:"handled"`    // events acted on
	Duplicates int      `json:"duplicates"` // events another delivery or replica already handled
	Incident   string   `json:"incident,omitempty"`
	Actions    []string `json:"actions,omitempty"` // autopilot action ids
}

// Handle acts on every alert of m whose event (group, fingerprint, startsAt,
// status) no delivery has acted on yet. An error leaves the failed event
// unclaimed, so Alertmanager's retry can act on it.
func (r *Receiver) Handle(ctx context.Context, m *Message) (Outcome, error) {
	var out Outcome
	lease := cmp.Or(r.EventLease, DefaultEventLease)
	for _, a := range m.Alerts {
		name := eventClaim(m.GroupKey, a)
		token := journal.NewID()
		ok, err := r.claimEvent(ctx, name, eventActing+token, lease)
		if err != nil {
			outcome := "error"
			if errors.Is(err, errInProgress) {
				outcome = "in_progress"
			}
			r.Metrics.event(a.Status, outcome)
			return out, err
		}
		if !ok {
			out.Duplicates++
			r.Metrics.event(a.Status, "duplicate")
			continue
		}
		actx, cancel := context.WithTimeout(ctx, lease*3/4)
		err = r.handle(actx, m, a, &out)
		cancel()
		uctx, cancel := afterwards(ctx)
		if err != nil {
			_ = r.Claims.Unclaim(uctx, name, eventActing+token)
			cancel()
			r.Metrics.event(a.Status, "error")
			return out, err
		}
		settled, serr := r.Claims.Settle(uctx, name, eventActing+token, eventDone+token, cmp.Or(r.EventTTL, 48*time.Hour))
		cancel()
		if !settled || serr != nil {
			// Acted on, but not recorded as such: a delivery after the
			// lease acts again (at least once, never lost).
			r.Log.Warn("alert event acted on but not recorded as done; a later delivery may act on it again", "event", name, "err", serr)
		}
		out.Handled++
		r.Metrics.event(a.Status, "handled")
	}
	return out, nil
}

// claimEvent takes event name for this delivery for lease: true when it is
// this delivery's to act on, false when an earlier delivery acted on it.
// While another delivery holds it, claimEvent waits for that one to finish
// or its lease to run out, up to a quarter of the lease (at most 10 s);
// then it is errInProgress.
func (r *Receiver) claimEvent(ctx context.Context, name, value string, lease time.Duration) (bool, error) {
	deadline := time.Now().Add(min(lease/4, 10*time.Second))
	for {
		ok, err := r.Claims.Claim(ctx, name, value, lease)
		if err != nil || ok {
			return ok, err
		}
		held, err := r.Claims.Claimed(ctx, name)
		switch {
		case err != nil:
			return false, err
		case held != "" && !strings.HasPrefix(held, eventActing):
			return false, nil
		case time.Now().After(deadline):
			return false, errInProgress
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Event is one alert as the receiver understood it.
type Event struct {
	Alert
	GroupKey  string
	Name      string // alertname
	Query     string // the saved query, "" for an alert not exported by stormctl
	Service   string
	Depend    string
	Playbook  string
	Incident  string
	Opened    bool // the incident was opened for this event
	Dashboard string
	Evidence  *journal.Evidence
}

// Target is service->dependency, service, or "" when the alert names neither.
func (e *Event) Target() string {
	switch {
	case e.Service != "" && e.Depend != "":
		return e.Service + "->" + e.Depend
	case e.Service != "":
		return e.Service
	}
	return e.Depend
}

func (r *Receiver) handle(ctx context.Context, m *Message, a Alert, out *Outcome) error {
	ev := r.event(m, a)
	title := fmt.Sprintf("%s on %s", ev.Name, cmp.Or(ev.Target(), "(no service)"))
	var err error
	if a.Status == Resolved {
		// A resolve never opens an incident: it belongs to the one the group fired into.
		ev.Incident, err = r.Claims.Claimed(ctx, groupClaim(m.GroupKey))
	} else {
		ev.Incident, ev.Opened, err = r.incidentFor(ctx, m.GroupKey, title)
	}
	if err != nil {
		return err
	}
	out.Incident = ev.Incident
	e := journal.Entry{Event: AlertFired, Actor: Actor, Incident: ev.Incident, Playbook: ev.Playbook,
		Target: sanitize.Line(ev.Target()), Reason: sanitize.Line(cmp.Or(a.Annotations["summary"], ev.Name)), Outcome: describeAlert(ev)}
	if a.Status == Resolved {
		e.Event = AlertResolved
	}
	if ev.Evidence != nil {
		e.Evidence = []journal.Evidence{*ev.Evidence}
	}
	if _, _, err := r.Actions.Journal.Append(ctx, e); err != nil {
		return fmt.Errorf("journal %s: %w", e.Event, err)
	}
	var done []string
	if a.Status == Firing && r.Autopilot != nil {
		res := r.Autopilot.Fired(ctx, ev)
		if res.ActionID != "" {
			out.Actions = append(out.Actions, res.ActionID)
		}
		done = append(done, res.Note)
	}
	// Queued before the event is settled: a replica killed after this
	// point has handed the notice to the outbox, and one killed before it
	// leaves the event to the retried delivery.
	return r.Notifier.Enqueue(ctx, eventClaim(m.GroupKey, a), alertNotice(ev, done))
}

// event reads the labels and annotations an alerting rule of
// `query export --alerts` sets.
func (r *Receiver) event(m *Message, a Alert) *Event {
	ev := &Event{Alert: a, GroupKey: m.GroupKey, Name: a.Labels["alertname"], Query: a.Labels[queries.AlertLabelQuery],
		Service: a.Labels["service"], Depend: a.Labels["dependency"], Dashboard: a.Annotations[queries.AlertAnnotDashboard]}
	if ev.Query != "" && r.Playbook != nil {
		ev.Playbook = r.Playbook(ev.Query)
	} else {
		ev.Playbook = sanitize.Line(a.Annotations[queries.AlertAnnotPlaybook])
	}
	if v, err := strconv.ParseFloat(a.Annotations[queries.AlertAnnotValue], 64); err == nil && ev.Query != "" {
		status := map[string]string{"critical": "crit", "warning": "warn"}[a.Labels["severity"]]
		if a.Status == Resolved || status == "" {
			status = "ok"
		}
		if isFinite(v) {
			ev.Evidence = &journal.Evidence{Query: ev.Query, Pack: a.Labels[queries.AlertLabelPack], Value: v,
				Threshold: a.Annotations[queries.AlertAnnotThreshold], Status: status, Time: a.StartsAt.UTC()}
		}
	}
	return ev
}

func isFinite(v float64) bool { return v-v == 0 }

// describeAlert is the alert as the journal's outcome gives it.
func describeAlert(ev *Event) string {
	var b strings.Builder
	b.WriteString(ev.Status)
	b.WriteString(" since " + ev.StartsAt.UTC().Format(time.RFC3339))
	if ev.Status == Resolved && !ev.EndsAt.IsZero() {
		b.WriteString(", resolved " + ev.EndsAt.UTC().Format(time.RFC3339))
	}
	keys := slices.Sorted(maps.Keys(ev.Labels))
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+ev.Labels[k])
	}
	b.WriteString("; labels " + strings.Join(pairs, ", "))
	if ev.Playbook != "" {
		b.WriteString("; playbook " + ev.Playbook)
	}
	return sanitize.Line(b.String())
}

// incidentFor returns the open incident of group key: the one opened or
// attached for the group before if it is still open, else the current
// incident, else a new one. One replica at a time decides (a claim in
// Redis), so two groups or two replicas never open two incidents at once.
func (r *Receiver) incidentFor(ctx context.Context, groupKey, title string) (id string, opened bool, err error) {
	group := groupClaim(groupKey)
	if id, err = r.Claims.Claimed(ctx, group); err != nil {
		return "", false, err
	}
	if id != "" && r.isOpen(ctx, id) {
		return id, false, nil
	}
	token := journal.NewID()
	if err := r.lock(ctx, "alert-incident", token); err != nil {
		return "", false, err
	}
	defer func() {
		uctx, cancel := afterwards(ctx)
		_ = r.Claims.Unclaim(uctx, "alert-incident", token)
		cancel()
	}()
	// Another replica may have decided while this one waited.
	if now, err := r.Claims.Claimed(ctx, group); err == nil && now != "" && now != id && r.isOpen(ctx, now) {
		return now, false, nil
	}
	cur, err := r.Actions.CurrentIncident(ctx)
	if err != nil {
		return "", false, err
	}
	if cur == nil {
		if cur, err = r.Actions.OpenIncident(ctx, sanitize.Line(title), Actor); err != nil {
			return "", false, err
		}
		opened = true
	}
	if id != "" {
		_ = r.Claims.Unclaim(ctx, group, id)
	}
	if _, err := r.Claims.Claim(ctx, group, cur.ID, 7*24*time.Hour); err != nil {
		return "", false, err
	}
	return cur.ID, opened, nil
}

func (r *Receiver) isOpen(ctx context.Context, id string) bool {
	incs, _ := r.Actions.Incidents(ctx)
	for _, inc := range incs {
		if inc.ID == id {
			return inc.IsOpen()
		}
	}
	return false
}

// afterwards is a context for freeing or settling a claim once ctx's work
// is over: ctx may be what ended (the request's), so it is not cancelled
// with it, and it is bounded on its own.
func afterwards(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}

// eventClaim names the claim of one event: an alert of a group, by its
// fingerprint, startsAt and status.
func eventClaim(groupKey string, a Alert) string {
	return "alert-event:" + digest(groupKey, a.Fingerprint, a.StartsAt.UTC().Format(time.RFC3339Nano), a.Status)
}

// groupClaim names the claim holding a group's incident.
func groupClaim(groupKey string) string { return "alert-group:" + digest(groupKey) }

// lock takes claim name, waiting up to 5 s for its holder to free it.
func (r *Receiver) lock(ctx context.Context, name, token string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := r.Claims.Claim(ctx, name, token, 10*time.Second)
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("another receiver held " + name + " for over 5s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// digest names an event or group in Redis keys: a hash, since group keys
// and fingerprints are outside text of any length.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
