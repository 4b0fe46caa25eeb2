package queries

import (
	"fmt"
	"strconv"
)

// RenderRecordedFleet is RenderFleet over what the catalogue's recording
// rules write (`stormctl query export --format rules`). Its Expr reads the
// fleet rules' reduction for top (Catalog.RulesWithFleet): Prometheus
// moves and evaluates O(top) series, whatever the fleet's size. Fallback
// ranks and counts the recorded series stormctl:<id>:<unit>{pack="<pack>"}
// instead, for when those rules are not loaded or keep another N; with no
// rules loaded at all the query has no data, and the no-data message names
// the recorded metric.
func (c *Catalog) RenderRecordedFleet(id, pack string, top int) (*Fleet, error) {
	r, err := c.Render(id, pack, Params{})
	if err != nil {
		return nil, err
	}
	q, _ := c.Query(id) // Render found it
	rec := *r
	rec.Expr = fmt.Sprintf("%s{pack=%s}", q.RecordName(), quote(r.Pack))
	rec.Metrics = []string{q.RecordName()}
	f := &Fleet{Rendered: &rec, Top: min(max(top, 1), MaxTop)}
	if f.Fallback, err = fleetExpr(rec.Expr, rec.Expr, rec.Threshold, f.Top, false); err == nil {
		f.RangeExpr, err = fleetExpr(rec.Expr, rec.Expr, rec.Threshold, f.Top, true)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s for pack %s as a recorded fleet query: %w", id, pack, err)
	}
	f.Expr = recordedFleetExpr(q, r.Pack, f.Top)
	f.FallbackNote = fmt.Sprintf("fleet rules not loaded (no %s{%s=%q}: stormctl query export --format rules --top %d)",
		q.FleetTopName(), FleetTopLabel, strconv.Itoa(f.Top), f.Top)
	return f, nil
}
