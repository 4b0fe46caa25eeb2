package queries

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// FleetLabel is the label a fleet expression adds to every series it
// returns, to tell its parts apart: "worst" on the worst series, and on
// the counts the level counted (count_values): "0" ok, "1" the first
// level past the threshold, "2" the second, "NaN" no value.
const FleetLabel = "stormctl_fleet"

const partWorst = "worst"

// MaxTop bounds the series a fleet expression returns: a refresh moves
// what a screen can show, never the fleet.
const MaxTop = 500

// Fleet is a query reduced on the server for a whole fleet: one expression
// that returns the Top worst series (topk, or bottomk for a "below"
// threshold) with their values, and the number of series at each level
// of the threshold, so one request per query answers the fleet view
// whatever the fleet's size.
type Fleet struct {
	*Rendered     // the per-series query it reduces
	Top       int // how many worst series it returns
	// Expr is the fleet expression for an instant query: the query is
	// evaluated twice, once for topk and once for the counts.
	Expr string
	// RangeExpr is the fleet expression for a range query: the worst are
	// chosen at the end (@ end()), so they keep the same members over the
	// whole range and bring their history, and only theirs.
	RangeExpr string
	// Fallback, when not "", is an instant expression to ask instead when
	// Expr has no data (Request.Fallback), and FallbackNote says why it
	// was needed if neither has.
	Fallback, FallbackNote string
}

// Request is the instant request of the fleet expression at t.
func (f *Fleet) Request(key string, t time.Time) Request {
	return Request{Key: key, Expr: f.Expr, Time: t, Metrics: f.Metrics, Fallback: f.Fallback, FallbackNote: f.FallbackNote}
}

// RenderFleet renders query id like Render, then reduces it for a fleet of
// any size to its top worst series and the counts. top is clamped to
// [1, MaxTop].
func (c *Catalog) RenderFleet(id, pack string, p Params, top int) (*Fleet, error) {
	r, err := c.Render(id, pack, p)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Rendered: r, Top: min(max(top, 1), MaxTop)}
	if f.Expr, err = fleetExpr(r.Expr, r.Expr, r.Threshold, f.Top, false); err == nil {
		f.RangeExpr, err = fleetExpr(r.Expr, r.Expr, r.Threshold, f.Top, true)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s for pack %s as a fleet query: %w", id, pack, err)
	}
	return f, nil
}

// HeldFleet is the instant fleet expression of the sustained values (see
// Rendered.Sustained) of the series that are worst now, with the counts of
// series whose level held over the threshold's for: window.
func (f *Fleet) HeldFleet(step time.Duration) (string, error) {
	return fleetExpr(f.Rendered.Sustained(step), f.Rendered.Expr, f.Threshold, f.Top, false)
}

// fleetExpr builds, from values and the expression the worst are ranked
// by, one PromQL expression returning, told apart by FleetLabel:
//
//	the values of the top worst series by rank
//	count_values of each series' level (see levelExpr)
//
// For a range query every selector of rank and of the counts is pinned to
// end(): Prometheus evaluates them once, not at every step.
func fleetExpr(values, rank string, th Threshold, top int, forRange bool) (string, error) {
	v, err := promql.ParseExpr(values)
	if err != nil {
		return "", err
	}
	rk, err := promql.ParseExpr(rank)
	if err != nil {
		return "", err
	}
	counted := v
	if forRange {
		atEnd(rk)
		counted, _ = promql.ParseExpr(values) // parsed above
		atEnd(counted)
	}
	fn := "topk"
	if th.Direction == Below {
		fn = "bottomk"
	}
	worst := fmt.Sprintf("%s(%d, %s)", fn, top, rk)
	if forRange || values != rank {
		worst = fmt.Sprintf("(%s) and %s", v, worst)
	}
	out := fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")\nor count_values(%q, %s)",
		worst, FleetLabel, partWorst, FleetLabel, levelExpr(counted.String(), th))
	if _, err := promql.ParseExpr(out); err != nil {
		return "", fmt.Errorf("invalid PromQL: %w", err)
	}
	return out, nil
}

// levelExpr maps each value of e to its level with one evaluation of e:
// 0 ok, 1 past the first limit, 2 past the second. With warn w and crit c
// (direction above) it is clamp(ceil((e - w) / (c - w)), 0, 2): at most w
// gives 0 and at most c gives 1, the thresholds' strict comparisons. NaN
// stays NaN.
func levelExpr(e string, th Threshold) string {
	lo, hi := th.Warn, th.Crit
	if lo == nil {
		lo, hi = hi, nil
	}
	past := fmt.Sprintf("(%s) - %s", e, lit(*lo))
	if th.Direction == Below {
		past = fmt.Sprintf("%s - (%s)", lit(*lo), e)
	}
	if hi == nil {
		return fmt.Sprintf("clamp(ceil(%s), 0, 1)", past)
	}
	return fmt.Sprintf("clamp(ceil((%s) / %s), 0, 2)", past, lit(math.Abs(*hi-*lo)))
}

// lit is a float literal that parses in any position.
func lit(v float64) string {
	if v < 0 {
		return "(" + formatFloat(v) + ")"
	}
	return formatFloat(v)
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
// series worst first by Threshold.Worse.
func SplitFleet(f *Fleet, series []Series) FleetResult {
	out := FleetResult{Warn: -1, Crit: -1}
	// levels[i] is the count of level i (count_values' label).
	levels := make([]*int, 3)
	switch {
	case f.Threshold.Warn != nil && f.Threshold.Crit != nil:
		out.Warn, out.Crit = 0, 0
		levels[1], levels[2] = &out.Warn, &out.Crit
	case f.Threshold.Warn != nil:
		out.Warn = 0
		levels[1] = &out.Warn
	case f.Threshold.Crit != nil:
		out.Crit = 0
		levels[1] = &out.Crit
	}
	for _, s := range series {
		part := s.Labels[FleetLabel]
		if part == partWorst {
			ls := make(map[string]string, len(s.Labels))
			for k, v := range s.Labels {
				if k != FleetLabel {
					ls[k] = v
				}
			}
			s.Labels = ls
			out.Worst = append(out.Worst, s)
			continue
		}
		n := count(s.Value)
		out.Total += n
		if l, err := strconv.Atoi(part); err == nil && l > 0 && l < len(levels) && levels[l] != nil {
			*levels[l] += n
		}
	}
	SortWorst(f.Threshold, out.Worst)
	return out
}

// maxCount bounds a count read from the server: no fleet has more series.
const maxCount = 1 << 40

// count reads a count_values sample; what no honest server sends (NaN,
// negative, beyond maxCount) counts nothing rather than corrupting the sums.
func count(v float64) int {
	if !(v >= 0 && v <= maxCount) {
		return 0
	}
	return int(v)
}

// Text is the counts in words: "amplification: 3 crit, 11 warn of 2,940
// series".
func (r FleetResult) Text(query string) string {
	var parts []string
	if r.Crit >= 0 {
		parts = append(parts, strconv.Itoa(r.Crit)+" crit")
	}
	if r.Warn >= 0 {
		parts = append(parts, strconv.Itoa(r.Warn)+" warn")
	}
	return fmt.Sprintf("%s: %s of %s series", query, strings.Join(parts, ", "), thousands(r.Total))
}

// thousands writes n with thousands separators: 2,940.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
