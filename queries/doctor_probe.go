package queries

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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

// labelNames returns the label names of metric's series in the window.
func (p *probe) labelNames(ctx context.Context, metric string) ([]string, error) {
	if err := p.spend(); err != nil {
		return nil, err
	}
	names, _, _, err := p.api.LabelNames(ctx, []string{selectorOf(metric)}, p.since, p.at)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != model.MetricNameLabel {
			out = append(out, string(n))
		}
	}
	return out, p.errf("labels", err)
}

// labelValues returns the values label takes on metric's series.
func (p *probe) labelValues(ctx context.Context, label, metric string) ([]string, error) {
	if err := p.spend(); err != nil {
		return nil, err
	}
	vs, _, _, err := p.api.LabelValues(ctx, label, []string{selectorOf(metric)}, p.since, p.at)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out, p.errf("label values", err)
}

func selectorOf(metric string) string {
	return fmt.Sprintf("{__name__=%q}", metric)
}

// findService picks the label that carries service on metric: the first
// candidate holding a value that names it (by the pack's convention), or,
// with no service given, the pack's label unless its values are shared
// scrape jobs, then the first other candidate present.
func (p *probe) findService(ctx context.Context, pk *Pack, metric, service string, names []string) (label, value string, err error) {
	def := pk.Labels[ParamService]
	if def == "" {
		def = ParamService
	}
	var cands []string
	for _, c := range append([]string{def}, serviceLabelCandidates...) {
		if slices.Contains(names, c) && !slices.Contains(cands, c) {
			cands = append(cands, c)
		}
	}
	for _, c := range cands {
		vs, err := p.labelValues(ctx, c, metric)
		if err != nil {
			return "", "", err
		}
		if service != "" {
			names := valueMatcher(pk.Match[ParamService], service)
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

// findDependency checks that the pack's dependency label is on metric and,
// given a dependency, which value names it and in which form.
func (p *probe) findDependency(ctx context.Context, pk *Pack, metric, dep string) (value, form string, err error) {
	label := pk.Labels[ParamDependency]
	if label == "" {
		label = ParamDependency
	}
	if dep == "" {
		return "", "", nil
	}
	vs, err := p.labelValues(ctx, label, metric)
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
