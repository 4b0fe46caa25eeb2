package queries

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/stormctl/stormctl/internal/exit"
)

// DefaultPack answers when no pack is given: stormctl's own metric contract.
const DefaultPack = "stormctl"

// Rendered is one query ready to send to Prometheus.
type Rendered struct {
	QueryID, Pack, Expr string
	Unit                string // the query's unit
	// Metrics are the metric names Expr reads, so "no data" can name the one missing.
	Metrics   []string
	Bound     string // "", "lower" or "upper": the value is a bound, not exact
	Note      string // caveat to show with every result
	Threshold Threshold
}

// UnsupportedError says a pack cannot answer a query, why, and which packs can. It exits 2.
type UnsupportedError struct {
	QueryID, Pack, Reason string
	Packs                 []string // packs that answer QueryID
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("the %s pack cannot answer %s: %s", e.Pack, e.QueryID, e.Reason)
	if len(e.Packs) > 0 {
		msg += "; packs that can: " + strings.Join(e.Packs, ", ")
	}
	return msg
}

// ExitCode implements exit.Coder.
func (e *UnsupportedError) ExitCode() int { return exit.Usage }

// promql parses PromQL the way Prometheus does by default.
var promql = parser.NewParser(parser.Options{})

// Render fills the template of query id in pack (DefaultPack when empty)
// with p. User values only ever reach the PromQL as escaped string literals
// in exact-match (=) label matchers, after validation: an invalid value is a
// *ParamError. A pack that cannot answer the query gives an *UnsupportedError.
func (c *Catalog) Render(id, pack string, p Params) (*Rendered, error) {
	q, err := c.Query(id)
	if err != nil {
		return nil, err
	}
	if pack == "" {
		pack = DefaultPack
	}
	pk, err := c.Pack(pack)
	if err != nil {
		return nil, err
	}
	pq := q.packQuery(pk)
	if pq == nil || pq.Unsupported != "" {
		reason := pk.otherwise
		if pq != nil {
			reason = pq.Unsupported
		}
		if reason == "" {
			reason = "the pack has no query for it"
		}
		return nil, &UnsupportedError{QueryID: id, Pack: pack, Reason: reason, Packs: q.Answers()}
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	expr, err := pq.render(q, pk, p)
	if err != nil {
		return nil, fmt.Errorf("render %s for pack %s: %w", id, pack, err)
	}
	if _, err := promql.ParseExpr(expr); err != nil {
		return nil, fmt.Errorf("render %s for pack %s: invalid PromQL: %w", id, pack, err)
	}
	return &Rendered{
		QueryID: id, Pack: pack, Expr: expr, Unit: q.Unit,
		Metrics: append([]string(nil), pq.Metrics...),
		Bound:   pq.Bound, Note: pq.Note, Threshold: q.Threshold,
	}, nil
}

// Sustained returns PromQL whose value is past the threshold only if the
// query's value was past it for the whole of Threshold.For: the minimum over
// that time for "above" thresholds, the maximum for "below", sampled every
// step (0: Prometheus's default resolution). Evaluate its values with
// Threshold.Evaluate. With no For it is Expr itself.
func (r *Rendered) Sustained(step time.Duration) string {
	if r.Threshold.For <= 0 {
		return r.Expr
	}
	fn := "min_over_time"
	if r.Threshold.Direction == Below {
		fn = "max_over_time"
	}
	s := ""
	if step > 0 {
		s = promDuration(step)
	}
	return fmt.Sprintf("%s((%s)[%s:%s])", fn, r.Expr, promDuration(r.Threshold.For), s)
}

// render executes the template. Templates see no values, only functions:
//
//	sel "service" "dependency" `reason="throttled"`  → {service="a",dependency="b",reason="throttled"}
//	by "service" "dependency" "le"                    → by (service, dependency, le)
//	labels "service"                                  → service   (for on(...), ignoring(...))
//	window                                            → 5m
//
// Params map to the pack's label names (Params.Labels, then Pack.Labels);
// "service:destination_workload" names the label explicitly. Every other
// label name a template writes (static matchers such as `reporter="source"`,
// by/labels arguments such as "le", explicit labels) is renamed the same way,
// keyed by the name itself, so a setup whose exporter spells a label
// differently needs no new template. Unset params are left out of sel; any
// argument containing = is a static matcher. A param value is matched
// exactly, or by the pack's naming convention (Pack.Match) when it has one.
func (pq *PackQuery) render(q *Query, pk *Pack, p Params) (string, error) {
	r := renderer{q: q, pk: pk, p: p}
	t, err := pq.tmpl.Clone()
	if err != nil {
		return "", err
	}
	t.Funcs(template.FuncMap{"sel": r.sel, "by": r.by, "labels": r.labels, "window": r.window})
	var b limitedBuilder
	if err := t.Execute(&b, struct{}{}); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// maxExprLen caps what a template may produce: catalogue files are user
// input, and text/template can loop.
const maxExprLen = 64 << 10

type limitedBuilder struct{ strings.Builder }

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxExprLen {
		return 0, fmt.Errorf("template output exceeds %d bytes", maxExprLen)
	}
	return b.Builder.Write(p)
}

// placeholderFuncs lets templates parse before a render binds the real functions.
var placeholderFuncs = template.FuncMap{
	"sel":    func(...string) (string, error) { return "", nil },
	"by":     func(...string) (string, error) { return "", nil },
	"labels": func(...string) (string, error) { return "", nil },
	"window": func() (string, error) { return "", nil },
}

type renderer struct {
	q  *Query
	pk *Pack
	p  Params
}

// param resolves a template argument naming a param, optionally with an
// explicit label ("service:destination_workload").
func (r renderer) param(arg string) (param, label string, err error) {
	param, label, explicit := strings.Cut(arg, ":")
	if !r.q.declares(param) {
		return "", "", fmt.Errorf("param %q is not in this query's params %v", param, r.q.Params)
	}
	if explicit {
		if !labelNameRE.MatchString(label) {
			return "", "", fmt.Errorf("%q is not a label name", label)
		}
		return param, r.rename(label), nil
	}
	if l := r.p.Labels[param]; l != "" {
		return param, l, nil
	}
	if l := r.pk.Labels[param]; l != "" {
		return param, l, nil
	}
	return param, param, nil
}

func (r renderer) sel(args ...string) (string, error) {
	var ms []string
	for _, a := range args {
		if strings.Contains(a, "=") {
			m, err := r.static(a)
			if err != nil {
				return "", err
			}
			ms = append(ms, m)
			continue
		}
		param, label, err := r.param(a)
		if err != nil {
			return "", err
		}
		if v := r.p.value(param); v != "" {
			ms = append(ms, r.matcher(param, label, v))
		}
	}
	if len(ms) == 0 {
		return "", nil
	}
	return "{" + strings.Join(ms, ",") + "}", nil
}

func (r renderer) labels(args ...string) (string, error) {
	ls := make([]string, 0, len(args))
	for _, a := range args {
		param, _, _ := strings.Cut(a, ":")
		if !isLabelParam(param) {
			if !labelNameRE.MatchString(a) {
				return "", fmt.Errorf("%q is neither a param nor a label name", a)
			}
			ls = append(ls, r.rename(a))
			continue
		}
		_, label, err := r.param(a)
		if err != nil {
			return "", err
		}
		ls = append(ls, label)
	}
	return strings.Join(ls, ", "), nil
}

func (r renderer) by(args ...string) (string, error) {
	ls, err := r.labels(args...)
	return "by (" + ls + ")", err
}

func (r renderer) window() (string, error) {
	w := r.q.Window
	if r.p.Window != 0 && r.q.declares(ParamWindow) {
		w = r.p.Window
	}
	if w <= 0 {
		return "", fmt.Errorf("the query uses window but sets no default window")
	}
	return promDuration(w), nil
}
