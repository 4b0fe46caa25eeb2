// Package alertloop runs a lab scenario with stormctl's alerting rules,
// its Alertmanager receiver and its autopilot in the loop: the rules that
// `stormctl query export --format rules --alerts` prints are evaluated by
// the lab's PromQL engine every evaluation interval of simulated time, as
// Prometheus evaluates them (pending until for: has passed, firing, then
// resolved); firing and resolved alerts are grouped and delivered as
// Alertmanager would, as webhook bodies of payload version 4, to the real
// receiver (alerts.Server) on the lab's control plane; the levers its
// autopilot pulls reach the simulated fleet through the flags provider at
// the simulated instant they were pulled.
//
// It is a package of its own, not part of lab, because alerts imports
// playbooks, whose tests run against lab.
package alertloop

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
)

// Alert states, as Prometheus names them.
const (
	Pending  = "pending"
	Firing   = "firing"
	Inactive = "inactive"
)

// Alert is one instance of an alerting rule: one label set its expression
// returned.
type Alert struct {
	Rule        string // the rule's name (alertname)
	Labels      labels.Labels
	Annotations map[string]string
	Value       float64
	State       string
	// ActiveAt is when the expression first returned the label set;
	// FiredAt when it had for the rule's whole for: (zero while pending);
	// ResolvedAt when it stopped returning it after firing.
	ActiveAt, FiredAt, ResolvedAt time.Time
}

// rule is one alerting rule of a rule file.
type rule struct {
	name        string
	expr        string
	hold        time.Duration
	labels      map[string]string
	annotations map[string]string
	active      map[uint64]*Alert
}

// Rules are the alerting rules of one rule file with their alerts' state.
type Rules struct {
	rules []*rule
}

// ParseRules reads a Prometheus rule file as Prometheus does (rulefmt,
// with its validation); recording rules are left out: the exported
// alerting rules read the raw metrics.
func ParseRules(data []byte) (*Rules, error) {
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("alerting rules: %w", errs[0])
	}
	rs := &Rules{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			rs.rules = append(rs.rules, &rule{name: r.Alert, expr: r.Expr, hold: time.Duration(r.For),
				labels: r.Labels, annotations: r.Annotations, active: map[uint64]*Alert{}})
		}
	}
	if len(rs.rules) == 0 {
		return nil, fmt.Errorf("alerting rules: the file has none")
	}
	return rs, nil
}

// Len is how many alerting rules there are.
func (rs *Rules) Len() int { return len(rs.rules) }

// Eval evaluates every rule at ts over q with engine and returns the
// alerts whose state changed to firing or from firing to inactive (the
// ones Prometheus sends to Alertmanager as new or resolved). A label set
// that stops being returned while pending is forgotten and sent nowhere:
// an alert that resolves before its for: causes nothing.
func (rs *Rules) Eval(ctx context.Context, engine *promql.Engine, q storage.Queryable, ts time.Time) ([]*Alert, error) {
	var changed []*Alert
	for _, r := range rs.rules {
		c, err := r.eval(ctx, engine, q, ts)
		if err != nil {
			return changed, err
		}
		changed = append(changed, c...)
	}
	return changed, nil
}

// eval is Prometheus's AlertingRule.Eval (rules/alerting.go) without
// keep_firing_for, query offset, limit or resend retention, which the
// exported rules do not use.
func (r *rule) eval(ctx context.Context, engine *promql.Engine, q storage.Queryable, ts time.Time) ([]*Alert, error) {
	qry, err := engine.NewInstantQuery(ctx, q, nil, r.expr, ts)
	if err != nil {
		return nil, fmt.Errorf("alert %s: %w", r.name, err)
	}
	res := qry.Exec(ctx)
	qry.Close()
	if res.Err != nil {
		return nil, fmt.Errorf("alert %s: %w", r.name, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		return nil, fmt.Errorf("alert %s: %w", r.name, err)
	}
	seen := map[uint64]bool{}
	for _, smpl := range vec {
		lbs, ann := r.expand(ctx, smpl, ts)
		h := lbs.Hash()
		if seen[h] {
			return nil, fmt.Errorf("alert %s: vector contains metrics with the same labelset after applying alert labels", r.name)
		}
		seen[h] = true
		if a, ok := r.active[h]; ok && a.State != Inactive {
			a.Value, a.Annotations = smpl.F, ann
			continue
		}
		r.active[h] = &Alert{Rule: r.name, Labels: lbs, Annotations: ann, Value: smpl.F, State: Pending, ActiveAt: ts}
	}
	var changed []*Alert
	for h, a := range r.active {
		if !seen[h] {
			if a.State == Firing {
				a.State, a.ResolvedAt = Inactive, ts
				changed = append(changed, a)
			}
			delete(r.active, h)
			continue
		}
		if a.State == Pending && ts.Sub(a.ActiveAt) >= r.hold {
			a.State, a.FiredAt = Firing, ts
			changed = append(changed, a)
		}
	}
	return changed, nil
}

// expand gives the alert's labels and annotations for one sample, with
// the rule's templates expanded as Prometheus expands them.
func (r *rule) expand(ctx context.Context, smpl promql.Sample, ts time.Time) (labels.Labels, map[string]string) {
	data := template.AlertTemplateData(smpl.Metric.Map(), nil, "", smpl)
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	expand := func(text string) string {
		t := template.NewTemplateExpander(ctx, defs+text, "__alert_"+r.name, data, model.Time(timestamp.FromTime(ts)),
			noQueries, &url.URL{}, nil)
		out, err := t.Expand()
		if err != nil {
			return "<error expanding template: " + strings.ReplaceAll(err.Error(), "\n", " ") + ">"
		}
		return out
	}
	lb := labels.NewBuilder(smpl.Metric)
	lb.Del(model.MetricNameLabel)
	for k, v := range r.labels {
		lb.Set(k, expand(v))
	}
	lb.Set(labels.AlertName, r.name)
	ann := make(map[string]string, len(r.annotations))
	for k, v := range r.annotations {
		ann[k] = expand(v)
	}
	return lb.Labels(), ann
}

// noQueries answers the query template function, which the exported
// annotations do not use.
func noQueries(context.Context, string, time.Time) (promql.Vector, error) {
	return nil, fmt.Errorf("the lab's alerting rules run no queries from templates")
}
