package kubernetes

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stormctl/stormctl/controlplane"
	"github.com/stormctl/stormctl/flags"
	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/lever"
)

// PassReport sums up one pass.
type PassReport struct {
	Levers    int      // live levers read
	Writes    int      // objects written
	Applied   int      // lever applications that changed an object
	Restored  int      // lever restorations
	Conflicts []string // fields another writer changed
	Problems  []string // failures, as `stormctl status` shows them
	// Holds counts the objects each lever holds changed, by kind
	// ("retries:checkout->payments" → "httproute" → 2), for "seen by".
	Holds    map[string]map[string]int
	outcomes []objectOutcome
}

// hold counts obj for each lever that holds it (not the refused ones).
func (r *PassReport) hold(obj *unstructured.Unstructured, claims []claim) {
	for _, c := range claims {
		if c.keep {
			continue
		}
		m := lever.Member(c.lever.Kind, c.lever.Target)
		if r.Holds == nil {
			r.Holds = map[string]map[string]int{}
		}
		if r.Holds[m] == nil {
			r.Holds[m] = map[string]int{}
		}
		r.Holds[m][shortNames[obj.GroupVersionKind()]]++
	}
}

func (r *PassReport) add(o objectOutcome) {
	r.outcomes = append(r.outcomes, o)
	if o.wrote {
		r.Writes++
	}
	r.Applied += len(o.applied)
	r.Restored += len(o.restored)
	for _, c := range o.conflicts {
		r.Conflicts = append(r.Conflicts, o.object+": "+c.detail)
	}
	for _, f := range o.failures {
		r.Problems = append(r.Problems, f.msg)
	}
}

// record journals what the pass changed (each failure and conflict once
// while it lasts), acknowledges the levers it acted on in full (acted), and
// writes the status report.
func (a *Actuator) record(ctx context.Context, levers []lever.Lever, acted map[string]bool, rep *PassReport) {
	// A pass stopped after its writes still journals them: the next pass,
	// finding the objects as wanted, would journal nothing, and the changes
	// would be missing from the journal. Bounded, so a stop still ends.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	failed := map[string]bool{}
	now := map[string]bool{}
	for _, o := range rep.outcomes {
		for _, x := range o.applied {
			a.journal(ctx, journal.ActuationApplied, x.lever, x.member, x.action, o.object, x.changes, x.detail, "")
		}
		for _, x := range o.restored {
			a.journal(ctx, journal.ActuationRestored, x.lever, x.member, x.action, o.object, x.changes, "", "")
		}
		for _, x := range o.conflicts {
			key := "conflict|" + o.object + "|" + x.member + "|" + x.detail
			now[key] = true
			if a.once(key) {
				a.journal(ctx, journal.ActuationConflict, x.lever, x.member, x.action, o.object, nil, "conflict", x.detail)
			}
		}
		for _, f := range o.failures {
			member := f.member
			if f.lever != nil {
				member = lever.Member(f.lever.Kind, f.lever.Target)
			}
			failed[member] = true
			key := "failed|" + f.object + "|" + member + "|" + f.msg
			now[key] = true
			if a.once(key) {
				action := ""
				if f.lever != nil {
					action = f.lever.ActionID
				}
				a.journal(ctx, journal.ActuationFailed, f.lever, member, action, f.object, nil, "failed", f.msg)
			}
		}
	}
	a.mu.Lock()
	// A failure or conflict that ended may be journaled again if it recurs.
	for k := range a.seen {
		if !now[k] {
			delete(a.seen, k)
		}
	}
	applied := map[string]int64{}
	for _, l := range levers {
		m := lever.Member(l.Kind, l.Target)
		if acted[m] && !failed[m] {
			applied[m] = l.Version
		}
	}
	a.applied = applied
	a.state = passState{at: time.Now(), problems: slices.Clone(rep.Problems), conflicts: slices.Clone(rep.Conflicts), holds: rep.Holds}
	a.mu.Unlock()
	a.heartbeat(ctx)
}

// once reports whether key is new, remembering it.
func (a *Actuator) once(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[key] {
		return false
	}
	a.seen[key] = true
	return true
}

func (a *Actuator) journal(ctx context.Context, ev journal.Event, l *lever.Lever, member, action, object string, changes []FieldChange, outcome, msg string) {
	e := journal.Entry{Event: ev, Actor: a.opts.Actor, ActionID: action, Object: object, Outcome: outcome, Error: msg}
	if l != nil {
		e.Kind, e.Target, e.Value, e.Incident = string(l.Kind), l.Target, l.Value, l.Incident
	} else if k, t, err := lever.ParseMember(member); err == nil {
		e.Kind, e.Target = string(k), t
	}
	for _, c := range changes {
		e.Changes = append(e.Changes, journal.FieldChange{Path: c.Path, Before: string(c.Before), After: string(c.After)})
	}
	a.opts.Metrics.actuations.WithLabelValues(strings.TrimPrefix(string(ev), "actuation.")).Inc()
	if _, err := a.opts.Store.Append(ctx, e); err != nil {
		a.opts.Log.Error("journal append failed", "event", ev, "object", object, "err", err)
	}
}

// passState is the last pass's outcome, for the status report and /readyz.
type passState struct {
	at        time.Time
	problems  []string
	conflicts []string
	holds     map[string]map[string]int
}

// statusTTL is how long a report outlives the actuator's last heartbeat.
const statusTTL = 45 * time.Second

// heartbeat acknowledges the applied levers ("seen by") and rewrites the
// status report.
func (a *Actuator) heartbeat(ctx context.Context) {
	a.mu.Lock()
	applied := make(map[string]int64, len(a.applied))
	for k, v := range a.applied {
		applied[k] = v
	}
	st := controlplane.ComponentStatus{Component: Component, Instance: a.opts.Instance, Time: time.Now().UTC(),
		Problems: append(slices.Clone(a.state.problems), a.state.conflicts...), Holds: a.state.holds}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s := a.opts.Store
	if err := flags.Acknowledge(ctx, s.Client(), s.Keys().Keys, a.opts.Instance, applied, statusTTL, time.Now()); err != nil {
		a.opts.Log.Warn("acknowledge failed", "err", err)
	}
	if err := s.SetStatus(ctx, st, statusTTL); err != nil {
		a.opts.Log.Warn("status report failed", "err", err)
	}
}

// withdraw removes the acknowledgements on a clean stop; the status report
// expires by itself.
func (a *Actuator) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s := a.opts.Store
	_ = flags.Withdraw(ctx, s.Client(), s.Keys().Keys, a.opts.Instance)
}
