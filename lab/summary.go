package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// Summary is the simulation's summary with the detection times of the
// saved queries, evaluated by the embedded engine over the stored samples.
func (l *Lab) Summary(ctx context.Context) (sim.Summary, error) {
	sum := l.Sim.Summary()
	cat, err := queries.Load()
	if err != nil {
		return sum, fmt.Errorf("lab summary: %w", err)
	}
	end := l.Sim.Now()
	if sum.DetectAmplification, err = l.firstCrit(ctx, cat, "amplification", queries.Params{Window: sim.Window}, end); err != nil {
		return sum, err
	}
	edge := queries.Params{Service: l.Sim.EdgeService(), Window: sim.Window}
	if sum.DetectEdgeErrorRate, err = l.firstCrit(ctx, cat, "edge_error_rate", edge, end); err != nil {
		return sum, err
	}
	if sum.Alerts, sum.LeadS, err = l.alerts(ctx, cat); err != nil {
		return sum, err
	}
	return sum, nil
}

// firstCrit returns the first simulated second at which the saved query id
// (stormctl pack) reaches its critical threshold, or nil.
func (l *Lab) firstCrit(ctx context.Context, cat *queries.Catalog, id string, p queries.Params, end time.Duration) (*float64, error) {
	r, err := cat.Render(id, queries.DefaultPack, p)
	if err != nil {
		return nil, fmt.Errorf("lab summary: %w", err)
	}
	mat, err := l.rangeQuery(ctx, id, r.Expr, end)
	if err != nil {
		return nil, err
	}
	var first *float64
	for _, series := range mat {
		for _, pt := range series.Floats {
			if r.Threshold.Evaluate(pt.F) != queries.Crit {
				continue
			}
			t := float64(pt.T-l.Epoch.UnixMilli()) / 1000
			if first == nil || t < *first {
				first = &t
			}
			break
		}
	}
	return first, nil
}
