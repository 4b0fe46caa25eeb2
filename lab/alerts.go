package lab

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/stormctl/stormctl/lab/sim"
	"github.com/stormctl/stormctl/queries"
)

// retrySignals are the saved queries that see retries; lead_s is how long
// the first of them fired before edge_error_rate.
var retrySignals = []string{"amplification", "retry_ratio", "retries_per_request", "throttle_retries"}

// alertStep is the evaluation interval of the lab's alerts.
const alertStep = time.Second

// alerts evaluates every saved query of the stormctl pack over the whole
// run, as an alerting rule evaluated every second would.
func (l *Lab) alerts(ctx context.Context, cat *queries.Catalog) ([]sim.Alert, *float64, error) {
	end := l.Sim.Now()
	calmFrom, calmTo := sim.Window, l.Sim.Scenario().FirstFault()
	var out []sim.Alert
	fired := map[string]*float64{}
	sc := l.Sim.Scenario()
	for id := range sc.Thresholds {
		if _, err := cat.Query(id); err != nil {
			return nil, nil, fmt.Errorf("lab summary: scenario %s: thresholds: %w", sc.Name, err)
		}
	}
	for _, q := range cat.Queries() {
		if pq := q.Packs[queries.DefaultPack]; pq == nil || pq.Unsupported != "" {
			continue
		}
		p := queries.Params{}
		if q.ID == "edge_error_rate" {
			p.Service = l.Sim.EdgeService()
		}
		r, err := cat.Render(q.ID, queries.DefaultPack, p)
		if err != nil {
			return nil, nil, fmt.Errorf("lab summary: %w", err)
		}
		if t, ok := sc.Thresholds[q.ID]; ok {
			r.Threshold.Warn, r.Threshold.Crit = t.Warn, t.Crit
		}
		mat, err := l.rangeQuery(ctx, q.ID, r.Expr, end)
		if err != nil {
			return nil, nil, err
		}
		a := judge(q.ID, r.Threshold, mat, l.Epoch, calmFrom, calmTo)
		fired[q.ID] = a.FirstFiring
		out = append(out, a)
	}
	var retry *float64
	for _, id := range retrySignals {
		if t := fired[id]; t != nil && (retry == nil || *t < *retry) {
			retry = t
		}
	}
	var lead *float64
	if edge := fired["edge_error_rate"]; retry != nil && edge != nil {
		v := *edge - *retry
		lead = &v
	}
	return out, lead, nil
}

// judge finds the first warning and firing of one query's series, and its
// worst value in calm, [calmFrom, calmTo).
func judge(id string, th queries.Threshold, mat promql.Matrix, epoch time.Time, calmFrom, calmTo time.Duration) sim.Alert {
	a := sim.Alert{Query: id, Calm: string(queries.OK)}
	at := func(ms int64) float64 { return float64(ms-epoch.UnixMilli()) / 1000 }
	earlier := func(cur *float64, t float64) *float64 {
		if cur == nil || t < *cur {
			return &t
		}
		return cur
	}
	calm := queries.LevelOK
	for _, series := range mat {
		avg := trailing{span: max(calmSpan, th.For.Seconds())}
		crit := -1.0 // since when the series has been crit; -1: not now
		for _, pt := range series.Floats {
			t, lv := at(pt.T), th.Level(pt.F)
			switch {
			case lv < queries.LevelCrit:
				crit = -1
			case crit < 0:
				crit = t
			}
			inCalm := t >= calmFrom.Seconds() && t < calmTo.Seconds()
			if inCalm && !math.IsNaN(pt.F) && (a.CalmWorst == nil || th.Worse(pt.F, *a.CalmWorst)) {
				v := pt.F
				a.CalmWorst = &v
			}
			if m := th.Level(avg.add(t, pt.F)); inCalm && m > calm {
				calm, a.Calm = m, m.String()
			}
			if crit >= 0 && t-crit >= th.For.Seconds() && (a.FirstFiring == nil || t < *a.FirstFiring) {
				a.FirstFiring, a.Series = &t, series.Metric.String()
			}
			if lv >= queries.LevelWarn {
				a.FirstWarn = earlier(a.FirstWarn, t)
			}
		}
	}
	return a
}

// calmSpan is the shortest time calm values are averaged over: a gauge
// sampled at one instant (pods in use) is noisy, and what a responder sees
// on a dashboard in calm is its level, not one sample.
const calmSpan = 20.0

// trailing is the mean of the values of the last span seconds, NaN skipped.
type trailing struct {
	span float64
	ts   []float64
	vs   []float64
	sum  float64
}

func (w *trailing) add(t, v float64) float64 {
	if !math.IsNaN(v) {
		w.ts, w.vs, w.sum = append(w.ts, t), append(w.vs, v), w.sum+v
	}
	for len(w.ts) > 0 && w.ts[0] <= t-w.span {
		w.sum -= w.vs[0]
		w.ts, w.vs = w.ts[1:], w.vs[1:]
	}
	if len(w.vs) == 0 {
		return math.NaN()
	}
	return w.sum / float64(len(w.vs))
}

// rangeQuery evaluates expr every alertStep from the epoch to end.
func (l *Lab) rangeQuery(ctx context.Context, id, expr string, end time.Duration) (promql.Matrix, error) {
	q, err := l.DB.Engine.NewRangeQuery(ctx, l.DB.Store, nil, expr, l.Epoch, l.Epoch.Add(end), alertStep)
	if err != nil {
		return nil, fmt.Errorf("lab summary: %s: %w", id, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("lab summary: %s: %w", id, res.Err)
	}
	mat, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("lab summary: %s: got %s, want a matrix", id, res.Value.Type())
	}
	return mat, nil
}
