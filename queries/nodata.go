package queries

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// NoData explains an empty result, which is not the same as a 0.
type NoData struct {
	Missing []string // the request's metrics with no series at all
	Message string
}

// diagnose finds which of req.Metrics have no series at the query's time
// (or in its range) with one cheap query that returns at most one row per
// metric name.
func (r *Runner) diagnose(ctx context.Context, req Request) *NoData {
	if len(req.Metrics) == 0 {
		return &NoData{Message: "no series match the query"}
	}
	expr := presenceQuery(req.Metrics)
	var (
		v   model.Value
		err error
	)
	if req.Range != nil {
		v, _, _, err = r.c.QueryRange(ctx, expr, v1.Range(*req.Range))
	} else {
		v, _, _, err = r.c.Query(ctx, expr, req.Time)
	}
	if err != nil {
		return &NoData{Message: fmt.Sprintf("no data; could not check which metrics exist: %v", err)}
	}
	series, _ := toSeries(v)
	present := map[string]bool{}
	for _, s := range series {
		present[s.Labels[model.MetricNameLabel]] = true
	}
	return explain(req.Metrics, present)
}

// presenceQuery counts series per metric name, so the answer stays small
// however many series a metric has.
func presenceQuery(metrics []string) string {
	quoted := make([]string, len(metrics))
	for i, m := range metrics {
		quoted[i] = regexp.QuoteMeta(m)
	}
	return fmt.Sprintf("count by (__name__) ({__name__=~%s})", strconv.Quote(strings.Join(quoted, "|")))
}

func explain(metrics []string, present map[string]bool) *NoData {
	nd := &NoData{}
	var found []string
	for i, m := range metrics {
		switch {
		case slices.Contains(metrics[:i], m):
		case present[m]:
			found = append(found, m)
		default:
			nd.Missing = append(nd.Missing, m)
		}
	}
	switch {
	case len(nd.Missing) == 0:
		nd.Message = plural("metric", found) + " present, but no series match the selector"
	case len(found) == 0:
		nd.Message = plural("metric", nd.Missing) + " not found"
	default:
		nd.Message = fmt.Sprintf("%s not found (%s present)", plural("metric", nd.Missing), quoteList(found))
	}
	return nd
}

func plural(noun string, names []string) string {
	if len(names) > 1 {
		noun += "s"
	}
	return noun + " " + quoteList(names)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
