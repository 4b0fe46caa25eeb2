package queries

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// ruleFile is the Prometheus rule-file format.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// RecordName is the recording-rule name of a query, e.g. stormctl:amplification:ratio.
func (q *Query) RecordName() string { return "stormctl:" + q.ID + ":" + q.Unit }

// Rules returns a Prometheus rule file for pack, or for every pack when pack
// is "": one group per pack (stormctl-<pack>), with a recording rule per
// query the pack answers (labelled pack=<pack>, so packs do not collide) and
// an alerting rule for each of warn and crit, with the threshold's for:,
// severity warning or critical, and annotations from the catalogue. p's
// filters and window are baked into the expressions.
func (c *Catalog) Rules(pack string, p Params) ([]byte, error) {
	return c.rules(pack, p, 0, true)
}

func marshalRules(f ruleFile) ([]byte, error) {
	return yaml.MarshalWithOptions(f, yaml.UseLiteralStyleIfMultiline(true))
}

func queryRules(q *Query, r *Rendered) []rule {
	labels := map[string]string{"pack": r.Pack}
	if r.Bound != "" {
		labels["bound"] = r.Bound
	}
	rules := []rule{{Record: q.RecordName(), Expr: r.Expr, Labels: labels}}
	levels := []struct {
		limit    *float64
		severity string
	}{{r.Threshold.Warn, "warning"}, {r.Threshold.Crit, "critical"}}
	for _, l := range levels {
		if l.limit == nil {
			continue
		}
		rl := rule{
			Alert:  alertName(q.ID, l.severity),
			Expr:   fmt.Sprintf("%s{pack=%s} %s %s", q.RecordName(), quote(r.Pack), r.Threshold.op(), formatFloat(*l.limit)),
			Labels: map[string]string{"severity": l.severity, "pack": r.Pack},
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s is {{ $value | humanize }} (%s %s %s){{ range $k, $v := $labels }} %s{{ end }}",
					q.Title, l.severity, r.Threshold.op(), formatFloat(*l.limit), "{{ $k }}={{ $v }}"),
				"description": description(q, r),
			},
		}
		if r.Threshold.For > 0 {
			rl.For = promDuration(r.Threshold.For)
		}
		rules = append(rules, rl)
	}
	return rules
}

func description(q *Query, r *Rendered) string {
	parts := []string{q.Meaning, "What to do: " + q.Action}
	if r.Bound != "" {
		parts = append(parts, fmt.Sprintf("This value is a %s bound.", r.Bound))
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	// Prometheus expands annotations as templates; the catalogue's prose is not one.
	return strings.NewReplacer("{{", "{{ `{{` }}").Replace(strings.Join(parts, "\n"))
}

// alertName turns retry_ratio and critical into StormctlRetryRatioCritical.
func alertName(id, severity string) string {
	var b strings.Builder
	b.WriteString("Stormctl")
	for _, w := range append(strings.Split(id, "_"), severity) {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// Labels and annotations of the alerting rules (AlertRules) that the
// Alertmanager receiver reads back.
const (
	AlertLabelQuery      = "stormctl_query" // the saved query's id
	AlertLabelPack       = "pack"
	AlertAnnotPlaybook   = "playbook"       // the playbook to run, "" for none
	AlertAnnotDashboard  = "dashboard"      // the command that opens the dashboard on it
	AlertAnnotValue      = "stormctl_value" // the query's value when the rule fired
	AlertAnnotThreshold  = "stormctl_threshold"
	AlertAnnotUnit       = "stormctl_unit"
	alertServiceLabel    = ParamService
	alertDependencyLabel = ParamDependency
)

// AlertName is the alerting rule name of a saved query, e.g.
// StormctlRetryRatio for retry_ratio.
func AlertName(queryID string) string { return alertName(queryID, "") }

// AlertRules returns a Prometheus rule file with one alerting rule per
// saved query that pack (every pack when "") answers and that has a
// threshold: the query's own expression past its crit threshold (warn
// when it has none) for the threshold's for:, labelled stormctl_query,
// pack, severity, and service and dependency copied from the pack's label
// names, so Alertmanager groups and routes them alike whatever exported
// the metrics. Annotations carry the query's value, the playbook that
// playbook names for the query ("" leaves it out) and the command that
// opens the dashboard on the service with that playbook. The rules read
// the raw metrics, so they need no recording rules beside them.
func (c *Catalog) AlertRules(pack string, p Params, playbook func(queryID string) string) ([]byte, error) {
	packs, err := c.packsNamed(pack)
	if err != nil {
		return nil, err
	}
	var f ruleFile
	for _, pk := range packs {
		g := ruleGroup{Name: "stormctl-" + pk.Name + "-alerts"}
		for _, q := range c.queries {
			r, err := c.Render(q.ID, pk.Name, p)
			var unsupported *UnsupportedError
			if errors.As(err, &unsupported) {
				continue
			}
			if err != nil {
				return nil, err
			}
			pb := ""
			if playbook != nil {
				pb = playbook(q.ID)
			}
			if rl, ok := alertRule(q, r, pk, p, pb); ok {
				g.Rules = append(g.Rules, rl)
			}
		}
		if len(g.Rules) > 0 {
			f.Groups = append(f.Groups, g)
		}
	}
	return marshalRules(f)
}

// alertRule is q's alerting rule for r; false when q has no threshold.
func alertRule(q *Query, r *Rendered, pk *Pack, p Params, playbook string) (rule, bool) {
	limit, severity := r.Threshold.Crit, "critical"
	if limit == nil {
		limit, severity = r.Threshold.Warn, "warning"
	}
	if limit == nil {
		return rule{}, false
	}
	rd := renderer{q: q, pk: pk, p: p}
	labels := map[string]string{AlertLabelQuery: q.ID, AlertLabelPack: r.Pack, "severity": severity}
	dash := []string{"stormctl dash"}
	for _, param := range []string{alertServiceLabel, alertDependencyLabel} {
		if !q.declares(param) {
			continue
		}
		_, label, err := rd.param(param)
		if err != nil {
			continue
		}
		ref := "{{ $labels." + label + " }}"
		labels[param] = ref
		if param == alertServiceLabel {
			dash = append(dash, "--service "+ref)
		}
		if playbook != "" {
			dash = append(dash, "-p "+param+"="+ref)
		}
	}
	if playbook != "" {
		dash = append(dash[:1], append([]string{"--playbook " + playbook}, dash[1:]...)...)
	}
	rl := rule{
		Alert:  AlertName(q.ID),
		Expr:   fmt.Sprintf("(\n%s) %s %s", strings.TrimRight(r.Expr, "\n")+"\n", r.Threshold.op(), formatFloat(*limit)),
		Labels: labels,
		Annotations: map[string]string{
			"summary": fmt.Sprintf("%s is {{ $value | humanize }} (%s %s %s)",
				q.Title, severity, r.Threshold.op(), formatFloat(*limit)),
			"description":       description(q, r),
			AlertAnnotValue:     "{{ $value }}",
			AlertAnnotThreshold: r.Threshold.op() + " " + formatFloat(*limit),
			AlertAnnotUnit:      q.Unit,
			AlertAnnotDashboard: strings.Join(dash, " "),
		},
	}
	if playbook != "" {
		rl.Annotations[AlertAnnotPlaybook] = playbook
	}
	if r.Threshold.For > 0 {
		rl.For = promDuration(r.Threshold.For)
	}
	return rl, true
}

// packsNamed is every pack for "", else the one named pack.
func (c *Catalog) packsNamed(pack string) ([]*Pack, error) {
	if pack == "" {
		return c.packs, nil
	}
	pk, err := c.Pack(pack)
	if err != nil {
		return nil, err
	}
	return []*Pack{pk}, nil
}
