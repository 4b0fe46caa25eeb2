package queries

import (
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
