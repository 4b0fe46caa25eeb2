package actions

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/stormctl/stormctl/journal"
	"github.com/stormctl/stormctl/queries"
)

// ForceEvidenceWait bounds how long --force waits for evidence it does not
// need: the answer is journaled when it comes in time, and its absence is
// said when it does not.
const ForceEvidenceWait = 2 * time.Second

// Evidence statuses besides the threshold statuses ok, warn and crit.
const StatusNoData = "no data"

// Supports says whether a measured status supports an action: at or past
// the query's warn threshold.
func Supports(status string) bool {
	return status == string(queries.Warn) || status == string(queries.Crit)
}

// QueryEvidence measures saved queries through the query runner, so that
// evidence shares its bounded, backed-off, singleflight evaluation.
type QueryEvidence struct {
	Catalog *queries.Catalog
	Runner  *queries.Runner
	// PackFor picks the pack and label overrides for a service ("" when the
	// target names only a dependency).
	PackFor func(service string) (pack string, labels map[string]string, err error)
}

// Measure implements Evidence: the worst series of the query's instant
// value now.
func (q *QueryEvidence) Measure(ctx context.Context, id string, t Target) (journal.Evidence, error) {
	pack, labels, err := q.PackFor(t.Service)
	if err != nil {
		return journal.Evidence{Query: id}, err
	}
	r, err := q.Catalog.Render(id, pack, queries.Params{Service: t.Service, Dependency: t.Dependency, Labels: labels})
	if err != nil {
		return journal.Evidence{Query: id, Pack: pack}, err
	}
	res := q.Runner.Run(ctx, queries.Request{Key: "evidence|" + id + "|" + pack + "|" + t.Name, Expr: r.Expr, Metrics: r.Metrics})
	ev := journal.Evidence{Query: id, Pack: pack, Threshold: r.Threshold.String(), Status: StatusNoData, Time: res.At.UTC()}
	if res.Err != nil {
		return ev, res.Err
	}
	if res.Stale {
		return ev, errors.New("only a stale result is available")
	}
	found, cur := false, 0.0
	for _, s := range res.Series {
		v := s.Value
		if math.IsNaN(v) {
			// No number from the server: no evidence either way.
			if !found {
				ev.ValueText = "NaN"
			}
			continue
		}
		// ±Inf is a value: +Inf amplification is the worst storm there is.
		st := r.Threshold.Evaluate(v)
		if !found || worse(r.Threshold, st, v, queries.Status(ev.Status), cur) {
			cur, ev.Status, found = v, string(st), true
		}
	}
	if found {
		ev.Value, ev.ValueText = journalValue(cur)
	}
	return ev, nil
}

// journalValue is v as the journal can hold it: JSON has no infinities.
func journalValue(v float64) (float64, string) {
	switch {
	case math.IsInf(v, 1):
		return math.MaxFloat64, "+Inf"
	case math.IsInf(v, -1):
		return -math.MaxFloat64, "-Inf"
	}
	return v, ""
}

var severity = map[queries.Status]int{queries.OK: 0, queries.Warn: 1, queries.Crit: 2}

// worse orders series by status, then by how far past the threshold.
func worse(t queries.Threshold, st queries.Status, v float64, cur queries.Status, cv float64) bool {
	if severity[st] != severity[cur] {
		return severity[st] > severity[cur]
	}
	if t.Direction == queries.Below {
		return v < cv
	}
	return v > cv
}

// Unavailable is the Evidence of a context without a working Prometheus:
// every measurement fails with Err, so actions need --force.
type Unavailable struct{ Err error }

// Measure implements Evidence.
func (u Unavailable) Measure(_ context.Context, id string, _ Target) (journal.Evidence, error) {
	return journal.Evidence{Query: id, Status: StatusNoData, Time: time.Now().UTC()}, u.Err
}

// PromLabels lists label values through a Prometheus client.
type PromLabels struct {
	Client  *queries.Client
	Timeout time.Duration // default 5s
}

// LabelValues implements LabelSource.
func (p PromLabels) LabelValues(ctx context.Context, label string) ([]string, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	vs, warns, _, err := p.Client.API.LabelValues(ctx, label, nil, time.Time{}, time.Time{})
	if err != nil {
		return nil, p.Client.Err("label values of "+label, err)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	if cut := queries.CutWarning(warns); cut != "" {
		// A name missing from a cut list may still exist: not a typo.
		return out, fmt.Errorf("label values of %s: %s", label, cut)
	}
	return out, nil
}

// describe is one evidence value in words, for guard details.
func describe(ev journal.Evidence) string {
	switch {
	case ev.Status == StatusNoData && ev.ValueText == "NaN":
		return fmt.Sprintf("%s: %s", ev.Query, queries.NaNNoData)
	case ev.Status == StatusNoData:
		return fmt.Sprintf("%s: no data", ev.Query)
	case ev.ValueText != "":
		return fmt.Sprintf("%s %s (%s; %s)", ev.Query, ev.ValueText, ev.Status, ev.Threshold)
	}
	return fmt.Sprintf("%s %.3g (%s; %s)", ev.Query, ev.Value, ev.Status, ev.Threshold)
}
