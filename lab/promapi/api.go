package promapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// BuildInfo is what /api/v1/status/buildinfo reports.
type BuildInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Branch    string `json:"branch"`
	BuildUser string `json:"buildUser"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
}

// Version names the Prometheus release whose engine the lab embeds (module
// v0.316.0 is Prometheus 3.16.0) and whose API it reproduces.
var Version = BuildInfo{
	Version:   "3.16.0",
	Revision:  "stormctl-lab",
	Branch:    "stormctl-lab",
	BuildUser: "stormctl",
	GoVersion: runtime.Version(),
}

// maxPoints is Prometheus's limit on the points of one range-query series.
const maxPoints = 11000

// Handler serves the API paths stormctl calls: query, query_range, series,
// labels, label values and buildinfo. The others need a scrape manager,
// rule manager or exemplar storage the lab does not have, and answer 404.
func (d *DB) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/api/v1/query", d.serve(d.query, true))
	m.HandleFunc("/api/v1/query_range", d.serve(d.queryRange, true))
	m.HandleFunc("/api/v1/series", d.serve(d.series, true))
	m.HandleFunc("/api/v1/labels", d.serve(d.labelNames, true))
	m.HandleFunc("/api/v1/label/{name}/values", d.serve(d.labelValues, false))
	m.HandleFunc("/api/v1/status/buildinfo", d.serve(func(*http.Request) result { return result{data: Version} }, false))
	return m
}

// result is one endpoint's answer: data or an error, and the annotations.
type result struct {
	data  any
	err   *apiError
	warns annotations.Annotations
	query string
}

func (d *DB) serve(f func(*http.Request) result, post bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && !(post && r.Method == http.MethodPost) {
			w.Header().Set("Allow", "GET"+map[bool]string{true: ", POST"}[post])
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			respondError(w, &apiError{errBadData, fmt.Errorf("error parsing form values: %w", err)})
			return
		}
		res := f(r)
		if res.err != nil {
			respondError(w, res.err)
			return
		}
		respond(w, res)
	}
}

func (d *DB) query(r *http.Request) result {
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return invalidParam(err, "limit")
	}
	ts, err := timeParam(r, "time", d.now())
	if err != nil {
		return invalidParam(err, "time")
	}
	ctx, cancel, aerr := withTimeout(r)
	if aerr != nil {
		return result{err: aerr}
	}
	defer cancel()
	opts, err := queryOpts(r)
	if err != nil {
		return result{err: &apiError{errBadData, err}}
	}
	expr := r.FormValue("query")
	qry, err := d.Engine.NewInstantQuery(ctx, d.Store, opts, expr, ts)
	if err != nil {
		return result{err: constructionError(err)}
	}
	defer qry.Close()
	return d.exec(ctx, qry, expr, limit)
}

func (d *DB) queryRange(r *http.Request) result {
	limit, err := parseLimit(r.FormValue("limit"))
	if err != nil {
		return invalidParam(err, "limit")
	}
	start, err := parseTime(r.FormValue("start"))
	if err != nil {
		return invalidParam(err, "start")
	}
	end, err := parseTime(r.FormValue("end"))
	if err != nil {
		return invalidParam(err, "end")
	}
	if end.Before(start) {
		return invalidParam(errors.New("end timestamp must not be before start time"), "end")
	}
	step, err := parseDuration(r.FormValue("step"))
	if err != nil {
		return invalidParam(err, "step")
	}
	if step <= 0 {
		return invalidParam(errors.New("zero or negative query resolution step widths are not accepted. Try a positive integer"), "step")
	}
	if end.Sub(start)/step > maxPoints {
		return result{err: &apiError{errBadData, errors.New("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)")}}
	}
	ctx, cancel, aerr := withTimeout(r)
	if aerr != nil {
		return result{err: aerr}
	}
	defer cancel()
	opts, err := queryOpts(r)
	if err != nil {
		return result{err: &apiError{errBadData, err}}
	}
	expr := r.FormValue("query")
	qry, err := d.Engine.NewRangeQuery(ctx, d.Store, opts, expr, start, end, step)
	if err != nil {
		return result{err: constructionError(err)}
	}
	defer qry.Close()
	return d.exec(ctx, qry, expr, limit)
}

// exec runs qry and encodes its value while the query still holds it.
func (d *DB) exec(ctx context.Context, qry promql.Query, expr string, limit int) result {
	res := qry.Exec(ctx)
	if res.Err != nil {
		return result{err: execError(res.Err), warns: res.Warnings}
	}
	warns, v := res.Warnings, res.Value
	switch x := v.(type) {
	case promql.Matrix:
		if limit > 0 && len(x) > limit {
			v, warns = x[:limit], warns.Add(errTruncated)
		}
	case promql.Vector:
		if limit > 0 && len(x) > limit {
			v, warns = x[:limit], warns.Add(errTruncated)
		}
	}
	// The value's memory returns to the engine's pools on Close, so it is
	// encoded here rather than after the deferred Close.
	body, err := encodeQueryData(v)
	if err != nil {
		return result{err: &apiError{errInternal, err}}
	}
	return result{data: rawJSON(body), warns: warns, query: expr}
}

var errTruncated = errors.New("results truncated due to limit")

func (d *DB) series(r *http.Request) result {
	if len(r.Form["match[]"]) == 0 {
		return result{err: &apiError{errBadData, errors.New("no match[] parameter provided")}}
	}
	limit, start, end, sets, res := rangeParams(r)
	if res.err != nil {
		return res
	}
	q, _ := d.Store.Querier(timestamp.FromTime(start), timestamp.FromTime(end))
	defer q.Close()
	hints := &storage.SelectHints{Start: timestamp.FromTime(start), End: timestamp.FromTime(end), Func: "series"}
	seen := map[uint64]bool{}
	metrics := []labels.Labels{}
	for _, ms := range sets {
		set := q.Select(r.Context(), true, hints, ms...)
		for set.Next() {
			l := set.At().Labels()
			if h := l.Hash(); !seen[h] {
				seen[h] = true
				metrics = append(metrics, l)
			}
		}
		if err := set.Err(); err != nil {
			return result{err: execError(err)}
		}
	}
	slices.SortFunc(metrics, labels.Compare)
	var warns annotations.Annotations
	if limit > 0 && len(metrics) > limit {
		metrics, warns = metrics[:limit], warns.Add(errTruncated)
	}
	return result{data: metrics, warns: warns}
}

func (d *DB) labelNames(r *http.Request) result {
	return d.labels(r, func(ctx context.Context, q storage.Querier, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelNames(ctx, nil, ms...)
	})
}

func (d *DB) labelValues(r *http.Request) result {
	name := r.PathValue("name")
	if strings.HasPrefix(name, "U__") {
		name = model.UnescapeName(name, model.ValueEncodingEscaping)
	}
	if !model.UTF8Validation.IsValidLabelName(name) {
		return result{err: &apiError{errBadData, fmt.Errorf("invalid label name: %q", name)}}
	}
	return d.labels(r, func(ctx context.Context, q storage.Querier, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelValues(ctx, name, nil, ms...)
	})
}

// labels answers /labels and /label/NAME/values: the union over match[]
// sets (every series without one), sorted, cut at limit.
func (d *DB) labels(r *http.Request, get func(context.Context, storage.Querier, []*labels.Matcher) ([]string, annotations.Annotations, error)) result {
	limit, start, end, sets, res := rangeParams(r)
	if res.err != nil {
		return res
	}
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	q, _ := d.Store.Querier(timestamp.FromTime(start), timestamp.FromTime(end))
	defer q.Close()
	var warns annotations.Annotations
	union := map[string]struct{}{}
	for _, ms := range sets {
		vals, w, err := get(r.Context(), q, ms)
		if err != nil {
			return result{err: &apiError{errExec, err}}
		}
		warns.Merge(w)
		for _, v := range vals {
			union[v] = struct{}{}
		}
	}
	out := limited(union, nil)
	if limit > 0 && len(out) > limit {
		out, warns = out[:limit], warns.Add(errTruncated)
	}
	return result{data: out, warns: warns}
}

// rangeParams reads limit, start, end and match[] as /series and /labels do.
func rangeParams(r *http.Request) (limit int, start, end time.Time, sets [][]*labels.Matcher, res result) {
	var err error
	if limit, err = parseLimit(r.FormValue("limit")); err != nil {
		return 0, start, end, nil, invalidParam(err, "limit")
	}
	if start, err = timeParam(r, "start", minTime); err != nil {
		return 0, start, end, nil, invalidParam(err, "start")
	}
	if end, err = timeParam(r, "end", maxTime); err != nil {
		return 0, start, end, nil, invalidParam(err, "end")
	}
	if sets, err = matchers(r.Form["match[]"]); err != nil {
		return 0, start, end, nil, invalidParam(err, "match[]")
	}
	return limit, start, end, sets, result{}
}

var selectorParser = parser.NewParser(parser.Options{})

// matchers parses match[] selectors; each must have a matcher that does not
// match the empty string, as Prometheus requires.
func matchers(sel []string) ([][]*labels.Matcher, error) {
	sets, err := selectorParser.ParseMetricSelectors(sel)
	if err != nil {
		return nil, err
	}
next:
	for _, ms := range sets {
		for _, m := range ms {
			if m != nil && !m.Matches("") {
				continue next
			}
		}
		return nil, errors.New("match[] must contain at least one non-empty matcher")
	}
	return sets, nil
}

// withTimeout applies the request's timeout parameter, if any.
func withTimeout(r *http.Request) (context.Context, context.CancelFunc, *apiError) {
	v := r.FormValue("timeout")
	if v == "" {
		return r.Context(), func() {}, nil
	}
	d, err := parseDuration(v)
	if err != nil {
		return nil, nil, &apiError{errBadData, fmt.Errorf("invalid parameter %q: %w", "timeout", err)}
	}
	if d <= 0 {
		return nil, nil, &apiError{errBadData, fmt.Errorf("invalid parameter %q: timeout must be positive, got %s", "timeout", d)}
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return ctx, cancel, nil
}

// queryOpts reads lookback_delta.
func queryOpts(r *http.Request) (promql.QueryOpts, error) {
	var lookback time.Duration
	if v := r.FormValue("lookback_delta"); v != "" {
		d, err := parseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("error parsing lookback delta duration: %w", err)
		}
		lookback = d
	}
	return promql.NewPrometheusQueryOpts(false, lookback, nil), nil
}
