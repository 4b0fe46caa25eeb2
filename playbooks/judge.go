package playbooks

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/journal"
)

// maxEvidence bounds the series recorded per step, so a query over a large
// fleet cannot bloat the journal; the ones that decide the verdict go first.
const maxEvidence = 10

// Evidence statuses of a check or wait step.
const (
	EvidenceMet    = "met"
	EvidenceUnmet  = "unmet"
	EvidenceNoData = "no data"
	EvidenceNaN    = "no value (NaN)"
)

// judge decides whether a measurement meets the step's expectation: every
// series (match: all, the default) or any one (match: any). Series without
// a value (NaN: 0/0 when nothing flowed, a quantile of no observations) are
// recorded but do not vote; a result with no valued series meets the
// expectation only with no_data: pass.
func judge(s *Step, m Measurement) (met bool, ev []journal.Evidence, summary string) {
	want := s.expect.String()
	switch {
	case s.For > 0:
		want += " for " + s.For.D().String()
	case s.Within > 0:
		want += " within " + s.Within.D().String()
	}
	base := journal.Evidence{Query: s.Query, Pack: m.Pack, Threshold: want, Time: m.At.UTC()}
	series := append([]SeriesValue(nil), m.Series...)
	sort.SliceStable(series, func(i, j int) bool { return labelText(series[i].Labels) < labelText(series[j].Labels) })
	nMet, nValued := 0, 0
	for _, sv := range series {
		if !math.IsNaN(sv.Value) {
			nValued++
		}
		if s.expect.Holds(sv.Value) {
			nMet++
		}
	}
	if nValued == 0 {
		met = s.NoData == "pass"
		verdict := "unmet"
		if met {
			verdict = "met (no_data: pass)"
		}
		what := "no data (" + m.NoData + ")"
		if len(series) > 0 {
			what = "no value (NaN: nothing to measure)"
		}
		e := base
		e.Status = EvidenceNoData
		return met, []journal.Evidence{e}, fmt.Sprintf("%s: %s, expected %s: %s", s.Query, what, want, verdict)
	}
	anyMatch := s.Match == "any"
	met = nMet == nValued || (anyMatch && nMet > 0)
	// Record the deciding series first: those that meet it for "any",
	// those that do not for "all".
	sort.SliceStable(series, func(i, j int) bool {
		hi, hj := s.expect.Holds(series[i].Value), s.expect.Holds(series[j].Value)
		return hi != hj && hi == anyMatch
	})
	for i, sv := range series {
		if i == maxEvidence {
			break
		}
		e := base
		if len(series) > 1 {
			e.Query += "{" + labelText(sv.Labels) + "}"
		}
		switch {
		case math.IsNaN(sv.Value) || math.IsInf(sv.Value, 0):
			e.Status = EvidenceNaN
		case s.expect.Holds(sv.Value):
			e.Value, e.Status = sv.Value, EvidenceMet
		default:
			e.Value, e.Status = sv.Value, EvidenceUnmet
		}
		ev = append(ev, e)
	}
	verdict := "unmet"
	if met {
		verdict = "met"
	}
	if len(series) == 1 {
		return met, ev, fmt.Sprintf("%s = %s, expected %s: %s", s.Query, formatValue(series[0].Value), want, verdict)
	}
	match := "all"
	if anyMatch {
		match = "any"
	}
	return met, ev, fmt.Sprintf("%s: %d of %d series %s (match %s): %s", s.Query, nMet, nValued, want, match, verdict)
}

// labelText is `dependency="payments",service="checkout"`.
func labelText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return strings.Join(parts, ",")
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
