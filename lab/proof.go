package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/queries"
)

// Edge5xxMinutes counts the whole minutes of the run (0–1 min, 1–2 min,
// …) in which more than share of the edge's answers were 5xx: the saved
// edge_error_rate query over one minute, evaluated at the end of each.
func (l *Lab) Edge5xxMinutes(ctx context.Context, share float64) (int, error) {
	cat, err := queries.Load()
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	r, err := cat.Render("edge_error_rate", queries.DefaultPack, queries.Params{Service: l.Sim.EdgeService(), Window: time.Minute})
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	end := l.Sim.Now().Truncate(time.Minute)
	if end < time.Minute {
		return 0, nil
	}
	q, err := l.DB.Engine.NewRangeQuery(ctx, l.DB.Store, nil, r.Expr, l.Epoch.Add(time.Minute), l.Epoch.Add(end), time.Minute)
	if err != nil {
		return 0, fmt.Errorf("lab: edge_error_rate: %w", err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return 0, fmt.Errorf("lab: edge_error_rate: %w", res.Err)
	}
	mat, ok := res.Value.(promql.Matrix)
	if !ok {
		return 0, fmt.Errorf("lab: edge_error_rate: got %s, want a matrix", res.Value.Type())
	}
	over := map[int64]bool{}
	for _, s := range mat {
		for _, pt := range s.Floats {
			if pt.F > share {
				over[pt.T] = true
			}
		}
	}
	return len(over), nil
}
