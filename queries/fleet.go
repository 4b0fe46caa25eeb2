package queries

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// FleetLabel is the label a fleet expression adds to every series it
// returns, to tell its parts apart: "worst", or a count (CountTotal,
// CountWarn, CountCrit).
const FleetLabel = "stormctl_fleet"

// Parts of a fleet result, as values of FleetLabel.
const (
	partWorst  = "worst"
	CountTotal = "total"
	CountWarn  = "warn" // series past warn, critical ones included
	CountCrit  = "crit"
)

// MaxTop bounds the series a fleet expression returns: a refresh moves
// what a screen can show, never the fleet.
const MaxTop = 500

// Fleet is a query reduced on the server for a whole fleet: one expression
// that returns the Top worst series (topk, or bottomk for a "below"
// threshold) with their values, and the count of series in all, past
// warn and past crit, so one request per query answers the fleet view
// whatever the fleet's size.
type Fleet struct {
	*Rendered     // the per-series query it reduces
	Top       int // how many worst series it returns
	// Expr is the fleet expression. The worst series are chosen at the
	// evaluation time (@ end()), so in a range query they keep the same
	// members over the whole range: full history for the rows shown only.
	Expr string
}

// RenderFleet renders query id like Render, then reduces it for a fleet of
// any size to its top worst series and the counts. top is clamped to
// [1, MaxTop].
func (c *Catalog) RenderFleet(id, pack string, p Params, top int) (*Fleet, error) {
	r, err := c.Render(id, pack, p)
	if err != nil {
		return nil, err
	}
	top = min(max(top, 1), MaxTop)
	expr, err := fleetExpr(r.Expr, r.Expr, r.Threshold, top)
	if err != nil {
		return nil, fmt.Errorf("render %s for pack %s as a fleet query: %w", id, pack, err)
	}
	return &Fleet{Rendered: r, Top: top, Expr: expr}, nil
}

// HeldFleet is the fleet expression of the sustained values (see
// Rendered.Sustained) of the series that are worst now, with the counts of
// series whose level held over the threshold's for: window.
func (f *Fleet) HeldFleet(step time.Duration) (string, error) {
	return fleetExpr(f.Rendered.Sustained(step), f.Rendered.Expr, f.Threshold, f.Top)
}

// fleetExpr builds, from values and the expression the worst are ranked
// by, one PromQL expression returning, told apart by FleetLabel:
//
//	values of the top worst series of rank, history over the whole range
//	count(values) and count(values past warn), count(values past crit)
func fleetExpr(values, rank string, th Threshold, top int) (string, error) {
	v, err := promql.ParseExpr(values)
	if err != nil {
		return "", err
	}
	rk, err := promql.ParseExpr(rank)
	if err != nil {
		return "", err
	}
	atEnd(rk)
	vEnd, _ := promql.ParseExpr(values) // parsed above
	atEnd(vEnd)
	fn := "topk"
	if th.Direction == Below {
		fn = "bottomk"
	}
	part := func(e, name string) string {
		return fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", e, FleetLabel, name)
	}
	out := part(fmt.Sprintf("(%s) and %s(%d, %s)", v, fn, top, rk), partWorst)
	out += "\nor " + part(fmt.Sprintf("count(%s)", vEnd), CountTotal)
	for _, l := range []struct {
		name  string
		limit *float64
	}{{CountWarn, th.Warn}, {CountCrit, th.Crit}} {
		if l.limit != nil {
			out += "\nor " + part(fmt.Sprintf("count((%s) %s %s)", vEnd, th.op(), formatFloat(*l.limit)), l.name)
		}
	}
	if _, err := promql.ParseExpr(out); err != nil {
		return "", fmt.Errorf("invalid PromQL: %w", err)
	}
	return out, nil
}

// atEnd pins every selector and subquery of e to the evaluation time
// (@ end()), so a range query evaluates it once rather than at every step
// and its topk chooses the same series for the whole range. Selectors
// inside a subquery follow the subquery's own time.
func atEnd(e parser.Expr) {
	var walk func(n parser.Node)
	walk = func(n parser.Node) {
		switch n := n.(type) {
		case *parser.SubqueryExpr:
			if n.Timestamp == nil && n.StartOrEnd == 0 {
				n.StartOrEnd = parser.END
			}
			return
		case *parser.VectorSelector:
			if n.Timestamp == nil && n.StartOrEnd == 0 {
				n.StartOrEnd = parser.END
			}
			return
		}
		for c := range parser.ChildrenIter(n) {
			walk(c)
		}
	}
	walk(e)
}

// FleetResult is a fleet query's answer: the worst series (FleetLabel
// removed), worst first, and the counts.
type FleetResult struct {
	Worst []Series
	// Total, Warn (past warn but not crit) and Crit count the series; Warn
	// and Crit are -1 when the threshold has no such level.
	Total, Warn, Crit int
}

// SplitFleet separates the parts of a fleet result and orders the worst
// series worst first by Rank.
func SplitFleet(f *Fleet, series []Series) FleetResult {
	out := FleetResult{Warn: -1, Crit: -1}
	if f.Threshold.Warn != nil {
		out.Warn = 0
	}
	if f.Threshold.Crit != nil {
		out.Crit = 0
	}
	pastWarn := 0
	for _, s := range series {
		n := count(s.Value)
		switch s.Labels[FleetLabel] {
		case partWorst:
			ls := make(map[string]string, len(s.Labels))
			for k, v := range s.Labels {
				if k != FleetLabel {
					ls[k] = v
				}
			}
			s.Labels = ls
			out.Worst = append(out.Worst, s)
		case CountTotal:
			out.Total = n
		case CountWarn:
			pastWarn = n
		case CountCrit:
			out.Crit = n
		}
	}
	if out.Warn >= 0 {
		out.Warn = max(pastWarn-max(out.Crit, 0), 0)
	}
	SortWorst(f.Threshold, out.Worst)
	return out
}

func count(v float64) int {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return int(v)
}

// String of a fleet result, for logs and tests: "3 crit, 11 warn of 2940".
func (r FleetResult) String() string {
	s := ""
	if r.Crit >= 0 {
		s += strconv.Itoa(r.Crit) + " crit, "
	}
	if r.Warn >= 0 {
		s += strconv.Itoa(r.Warn) + " warn, "
	}
	return s + "of " + strconv.Itoa(r.Total)
}
