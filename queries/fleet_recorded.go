package queries

import "fmt"

// RenderRecordedFleet is RenderFleet over the series the catalogue's
// recording rules write (Catalog.Rules, `stormctl query export --format
// rules`): stormctl:<id>:<unit>{pack="<pack>"}. Prometheus then ranks and
// counts series it has already computed instead of computing every rate()
// of the fleet at each refresh, so a refresh costs about the same for ten
// services as for a thousand. With no rules loaded the query has no data,
// and the no-data message names the recorded metric.
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
	if f.Expr, err = fleetExpr(rec.Expr, rec.Expr, rec.Threshold, f.Top, false); err == nil {
		f.RangeExpr, err = fleetExpr(rec.Expr, rec.Expr, rec.Threshold, f.Top, true)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s for pack %s as a recorded fleet query: %w", id, pack, err)
	}
	return f, nil
}
