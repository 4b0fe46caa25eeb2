package alertloop

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/alerts"
)

// GroupBy is the Alertmanager route's group_by the lab uses, as
// TestAlertmanagerEndToEnd's route does: one group per alert and call.
var GroupBy = []string{"alertname", "service", "dependency"}

// grouper is Alertmanager's dispatcher for one route, reduced to what a
// webhook receiver sees: alerts grouped by GroupBy; a group's first
// notification group_wait after its first alert, later ones at the next
// evaluation after a change (group_interval no longer than the
// evaluation interval); each notification holds every firing alert of
// the group and the alerts resolved since the last one.
type grouper struct {
	wait   time.Duration
	groups map[string]*group
}

type group struct {
	key     string
	labels  map[string]string
	alerts  map[string]*Alert // by fingerprint
	created time.Time
	sent    bool // the first notification went out
	dirty   bool
}

func newGrouper(wait time.Duration) *grouper {
	return &grouper{wait: wait, groups: map[string]*group{}}
}

// add files an alert that fired or resolved at now.
func (g *grouper) add(a *Alert, now time.Time) {
	gl := map[string]string{}
	for _, n := range GroupBy {
		if v := a.Labels.Get(n); v != "" {
			gl[n] = v
		}
	}
	// The route is the root route, "{}": Alertmanager's group key is the
	// route's key and the group labels.
	key := "{}:" + model.LabelSet(toLabelSet(gl)).String()
	grp := g.groups[key]
	if grp == nil {
		grp = &group{key: key, labels: gl, alerts: map[string]*Alert{}, created: now}
		g.groups[key] = grp
	}
	grp.alerts[fingerprint(a)] = a
	grp.dirty = true
}

// due returns the notifications to send at now, in group key order.
func (g *grouper) due(now time.Time, receiver string) []*alerts.Message {
	var out []*alerts.Message
	for _, key := range slices.Sorted(maps.Keys(g.groups)) {
		grp := g.groups[key]
		if !grp.dirty || (!grp.sent && now.Sub(grp.created) < g.wait) {
			continue
		}
		out = append(out, grp.message(receiver))
		grp.sent, grp.dirty = true, false
		for fp, a := range grp.alerts {
			if a.State == Inactive {
				delete(grp.alerts, fp)
			}
		}
		if len(grp.alerts) == 0 {
			delete(g.groups, key)
		}
	}
	return out
}

// message is the webhook body of a group (notify/webhook, payload 4).
func (grp *group) message(receiver string) *alerts.Message {
	m := &alerts.Message{Version: "4", GroupKey: grp.key, Receiver: receiver, Status: alerts.Resolved,
		GroupLabels: grp.labels, CommonLabels: map[string]string{}, CommonAnnotations: map[string]string{}}
	for _, fp := range slices.Sorted(maps.Keys(grp.alerts)) {
		a := grp.alerts[fp]
		wa := alerts.Alert{Status: alerts.Firing, Labels: a.Labels.Map(), Annotations: a.Annotations,
			StartsAt: a.FiredAt.UTC(), Fingerprint: fp}
		if a.State == Inactive {
			wa.Status, wa.EndsAt = alerts.Resolved, a.ResolvedAt.UTC()
		} else {
			m.Status = alerts.Firing
		}
		m.Alerts = append(m.Alerts, wa)
	}
	// Common labels and annotations: those every alert shares.
	for i, a := range m.Alerts {
		for _, kv := range []struct{ from, to map[string]string }{{a.Labels, m.CommonLabels}, {a.Annotations, m.CommonAnnotations}} {
			if i == 0 {
				maps.Copy(kv.to, kv.from)
				continue
			}
			for k, v := range kv.to {
				if kv.from[k] != v {
					delete(kv.to, k)
				}
			}
		}
	}
	return m
}

// fingerprint is Alertmanager's: the label set's model fingerprint.
func fingerprint(a *Alert) string {
	return fmt.Sprintf("%016x", uint64(model.LabelSet(toLabelSet(a.Labels.Map())).Fingerprint()))
}

func toLabelSet(m map[string]string) model.LabelSet {
	ls := make(model.LabelSet, len(m))
	for k, v := range m {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	return ls
}
