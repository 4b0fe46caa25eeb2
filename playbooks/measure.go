package playbooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/queries"
)

// PromMeasurer evaluates saved queries through the shared query runner, so
// checks and waits get its bounded concurrency, one evaluation in flight
// per query and backoff with jitter when Prometheus struggles.
type PromMeasurer struct {
	Catalog *queries.Catalog
	Runner  *queries.Runner
	// PackFor picks the pack (the step's pack param, else the service's)
	// and label overrides for a service.
	PackFor func(pack, service string) (string, map[string]string, error)
	// Step is the subquery resolution of a for: window; default 15s.
	Step time.Duration
}

// Measure implements Measurer.
func (p *PromMeasurer) Measure(ctx context.Context, m MeasureRequest) (Measurement, error) {
	out := Measurement{Query: m.Query}
	pack, labels, err := p.PackFor(m.Params["pack"], m.Params[queries.ParamService])
	if err != nil {
		return out, err
	}
	out.Pack = pack
	qp := queries.Params{Service: m.Params[queries.ParamService], Dependency: m.Params[queries.ParamDependency],
		Pool: m.Params[queries.ParamPool], Labels: labels}
	if w := m.Params[queries.ParamWindow]; w != "" {
		if qp.Window, err = queries.ParseWindow(w); err != nil {
			return out, err
		}
	}
	r, err := p.Catalog.Render(m.Query, pack, qp)
	if err != nil {
		return out, err
	}
	out.Expr = r.Expr
	if m.Window > 0 && m.Over != "" {
		step := p.Step
		if step <= 0 {
			step = 15 * time.Second
		}
		out.Expr = fmt.Sprintf("%s((%s)[%s:%s])", m.Over, r.Expr, model.Duration(m.Window), model.Duration(step))
	}
	res := p.Runner.Run(ctx, queries.Request{Key: m.Key, Expr: out.Expr, Metrics: r.Metrics})
	out.At = res.At
	switch {
	case res.Err != nil:
		return out, res.Err
	case res.Stale:
		return out, errors.New("only a stale result is available")
	case res.NoData != nil:
		out.NoData = res.NoData.Message
		return out, nil
	}
	for _, s := range res.Series {
		out.Series = append(out.Series, SeriesValue{Labels: s.Labels, Value: s.Value})
	}
	return out, nil
}
