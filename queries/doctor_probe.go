package queries

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// serviceLabelCandidates are where real setups put the service's name, in
// the order the doctor tries them after the pack's own label: behind an
// OpenTelemetry Collector scraped without honor_labels the service's job
// becomes exported_job; pods scraped by annotation (job kubernetes-pods)
// carry their app label; OTel's service.name may arrive as service_name.
var serviceLabelCandidates = []string{"exported_job", "app", "app_kubernetes_io_name", "service", "service_name", "job"}

// sharedJobRE matches job names that are a scrape of many services, never
// one service's name: annotation-based pod scrapes, a collector, a mesh.
var sharedJobRE = regexp.MustCompile(`^(kubernetes-(pods|service-endpoints|pods-slow)|.*otel.*collector.*|.*opentelemetry.*|.*collector|envoy-stats|istio-proxy|.*-mesh)$`)

// probe is one doctor run's bounded view of the server.
type probe struct {
	api    v1.API
	errf   func(op string, err error) error
	at     time.Time
	since  time.Time
	budget int
	used   int
	// Answers already had, by request: packs share metrics (envoy-istio
	// extends envoy), and the doctor asks about a side more than once.
	names  map[string][]string
	values map[string][]string
}

var errBudget = fmt.Errorf("request budget spent")

func (p *probe) spend() error {
	if p.used >= p.budget {
		return errBudget
	}
	p.used++
	return nil
}

// present returns which of names have series at the probe time, with the
// _total suffix drift folded back to the catalogue's name: one query whose
// answer has at most one row per metric name.
func (p *probe) present(ctx context.Context, names []string) (map[string]string, error) {
	if err := p.spend(); err != nil {
		return nil, err
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(strings.TrimSuffix(n, "_total"))
	}
	expr := fmt.Sprintf("count by (__name__) ({__name__=~%q})", "("+strings.Join(quoted, "|")+")(_total)?")
	v, _, _, err := p.api.Query(ctx, expr, p.at)
	if err != nil {
		return nil, p.errf("query", err)
	}
	got := map[string]bool{}
	if vec, ok := v.(model.Vector); ok {
		for _, s := range vec {
			got[string(s.Metric[model.MetricNameLabel])] = true
		}
	}
	out := map[string]string{} // catalogue name → name as stored
	for _, n := range names {
		base := strings.TrimSuffix(n, "_total")
		for _, cand := range []string{n, base, base + "_total"} {
			if got[cand] {
				out[n] = cand
				break
			}
		}
	}
	return out, nil
}

// labelNames returns the label names of the series selected in the window.
func (p *probe) labelNames(ctx context.Context, selectors ...string) ([]string, error) {
	key := strings.Join(selectors, "|")
	if out, ok := p.names[key]; ok {
		return out, nil
	}
	if err := p.spend(); err != nil {
		return nil, err
	}
	names, _, _, err := p.api.LabelNames(ctx, selectors, p.since, p.at)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != model.MetricNameLabel {
			out = append(out, string(n))
		}
	}
	if err == nil {
		p.names[key] = out
	}
	return out, p.errf("labels", err)
}

// labelValues returns the values label takes on the series selected.
func (p *probe) labelValues(ctx context.Context, label string, selectors ...string) ([]string, error) {
	key := label + "|" + strings.Join(selectors, "|")
	if out, ok := p.values[key]; ok {
		return out, nil
	}
	if err := p.spend(); err != nil {
		return nil, err
	}
	vs, _, _, err := p.api.LabelValues(ctx, label, selectors, p.since, p.at)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	if err == nil {
		p.values[key] = out
	}
	return out, p.errf("label values", err)
}

// findService picks, of the candidate labels in order, the first holding a
// value on the series selected that names service (by convention conv), or,
// with no service given, the first whose values are not all shared scrape jobs.
func (p *probe) findService(ctx context.Context, cands, selectors []string, service, conv string) (label, value string, err error) {
	names := valueMatcher(conv, service)
	for _, c := range cands {
		vs, err := p.labelValues(ctx, c, selectors...)
		if err != nil {
			return "", "", err
		}
		if service != "" {
			for _, v := range vs {
				if names(v) {
					return c, v, nil
				}
			}
			continue
		}
		if len(vs) > 0 && !allShared(vs) {
			return c, "", nil
		}
	}
	return "", "", nil
}

func allShared(vs []string) bool {
	for _, v := range vs {
		if !sharedJobRE.MatchString(v) {
			return false
		}
	}
	return true
}

// findDependency returns the value of label on the series selected that
// names dep, and the naming convention it takes.
func (p *probe) findDependency(ctx context.Context, label string, selectors []string, dep string) (value, form string, err error) {
	if dep == "" {
		return "", "", nil
	}
	vs, err := p.labelValues(ctx, label, selectors...)
	if err != nil {
		return "", "", err
	}
	for _, conv := range MatchConventions {
		names := valueMatcher(conv, dep)
		for _, v := range vs {
			if names(v) {
				return v, conv, nil
			}
		}
	}
	return "", "", nil
}
