package queries

import (
	"math"
	"sort"
)

// Severity orders a value's status for ranking: crit 3, warn 2, ok 1, and
// 0 for NaN (no traffic: no evidence either way).
func (t Threshold) Severity(v float64) int {
	if math.IsNaN(v) {
		return 0
	}
	switch t.Evaluate(v) {
	case Crit:
		return 3
	case Warn:
		return 2
	}
	return 1
}

// Distance is how far v is past the limit of its level, relative to the
// limit so that queries in different units compare: 0.5 is "half as much
// again as crit". An OK value is measured against warn (or crit) and is
// negative. A limit of 0 ("any") measures in the value's own units.
func (t Threshold) Distance(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	limit := t.Warn
	if t.Evaluate(v) == Crit || limit == nil {
		limit = t.Crit
	}
	if limit == nil {
		return 0
	}
	d := v - *limit
	if t.Direction == Below {
		d = -d
	}
	if *limit != 0 {
		d /= math.Abs(*limit)
	}
	return d
}

// Worse reports whether value a ranks before b: a more severe level, then
// further past its limit.
func (t Threshold) Worse(a, b float64) bool {
	if sa, sb := t.Severity(a), t.Severity(b); sa != sb {
		return sa > sb
	}
	return t.Distance(a) > t.Distance(b)
}

// SortWorst orders series worst first (Worse), ties by their labels'
// service, dependency and pool, so the order is stable across refreshes.
func SortWorst(t Threshold, ss []Series) {
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if t.Worse(a.Value, b.Value) {
			return true
		}
		if t.Worse(b.Value, a.Value) {
			return false
		}
		for _, l := range labelParams {
			if a.Labels[l] != b.Labels[l] {
				return a.Labels[l] < b.Labels[l]
			}
		}
		return false
	})
}
