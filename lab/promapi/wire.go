package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// The wire format below follows Prometheus's web/api/v1 (v0.316.0):
// parameter parsing, error types and their HTTP statuses, and the JSON of
// query results (timestamps as seconds with up to three decimals, values as
// strings formatted by strconv 'f' -1).

type errorType struct {
	name string
	code int
}

var (
	errBadData  = errorType{"bad_data", http.StatusBadRequest}
	errExec     = errorType{"execution", http.StatusUnprocessableEntity}
	errCanceled = errorType{"canceled", 499}
	errTimeout  = errorType{"timeout", http.StatusServiceUnavailable}
	errInternal = errorType{"internal", http.StatusInternalServerError}
)

type apiError struct {
	typ errorType
	err error
}

func invalidParam(err error, name string) result {
	return result{err: &apiError{errBadData, fmt.Errorf("invalid parameter %q: %w", name, err)}}
}

// constructionError maps an error building a query: a timeout or
// cancellation as such, anything else as a bad query parameter.
func constructionError(err error) *apiError {
	var eqt promql.ErrQueryTimeout
	var eqc promql.ErrQueryCanceled
	if errors.As(err, &eqt) || errors.As(err, &eqc) {
		return execError(err)
	}
	return &apiError{errBadData, fmt.Errorf("invalid parameter %q: %w", "query", err)}
}

// execError maps an evaluation error to its API error type.
func execError(err error) *apiError {
	var eqc promql.ErrQueryCanceled
	var eqt promql.ErrQueryTimeout
	var es promql.ErrStorage
	switch {
	case errors.As(err, &eqc):
		return &apiError{errCanceled, err}
	case errors.As(err, &eqt):
		return &apiError{errTimeout, err}
	case errors.As(err, &es):
		return &apiError{errInternal, err}
	case errors.Is(err, context.Canceled):
		return &apiError{errCanceled, err}
	}
	return &apiError{errExec, err}
}

type response struct {
	Status    string   `json:"status"`
	Data      any      `json:"data,omitempty"`
	ErrorType string   `json:"errorType,omitempty"`
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Infos     []string `json:"infos,omitempty"`
}

func respond(w http.ResponseWriter, res result) {
	warn, info := res.warns.AsStrings(res.query, 10, 10)
	b, err := json.Marshal(&response{Status: "success", Data: res.data, Warnings: warn, Infos: info})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func respondError(w http.ResponseWriter, e *apiError) {
	b, err := json.Marshal(&response{Status: "error", ErrorType: e.typ.name, Error: e.err.Error()})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.typ.code)
	w.Write(b)
}

// rawJSON is pre-encoded data.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// encodeQueryData writes {"resultType":...,"result":...} for v.
func encodeQueryData(v parser.Value) ([]byte, error) {
	b := []byte(`{"resultType":"` + string(v.Type()) + `","result":`)
	var err error
	switch x := v.(type) {
	case promql.Vector:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMetric(b, s.Metric); err != nil {
				return nil, err
			}
			if s.H != nil {
				b, err = appendJSON(append(b, `,"histogram":`...), promql.HPoint{T: s.T, H: s.H})
			} else {
				b = appendPoint(append(b, `,"value":`...), s.T, s.F)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	case promql.Matrix:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendMetric(b, s.Metric); err != nil {
				return nil, err
			}
			if len(s.Floats) > 0 {
				b = append(b, `,"values":[`...)
				for j, p := range s.Floats {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendPoint(b, p.T, p.F)
				}
				b = append(b, ']')
			}
			if len(s.Histograms) > 0 {
				b, err = appendJSON(append(b, `,"histograms":`...), s.Histograms)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	case promql.Scalar:
		b = appendPoint(b, x.T, x.V)
	case promql.String:
		b, err = appendJSON(b, x)
	default:
		return nil, fmt.Errorf("lab api: unexpected result type %T", v)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendMetric(b []byte, m interface{ MarshalJSON() ([]byte, error) }) ([]byte, error) {
	return appendJSON(append(b, `{"metric":`...), m)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// appendPoint writes [seconds,"value"] as Prometheus's jsonutil does.
func appendPoint(b []byte, t int64, f float64) []byte {
	b = appendTimestamp(append(b, '['), t)
	b = append(b, ',', '"')
	b = strconv.AppendFloat(b, f, 'f', -1, 64) // "+Inf", "-Inf", "NaN" as Prometheus writes them
	return append(b, '"', ']')
}

// appendTimestamp writes ms as seconds: whole seconds, then three decimals
// unless they are all zero.
func appendTimestamp(b []byte, t int64) []byte {
	if t < 0 {
		b, t = append(b, '-'), -t
	}
	b = strconv.AppendInt(b, t/1000, 10)
	if frac := t % 1000; frac != 0 {
		b = append(b, '.')
		if frac < 100 {
			b = append(b, '0')
		}
		if frac < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, frac, 10)
	}
	return b
}

// minTime and maxTime are Prometheus's defaults for an open time range.
var (
	minTime          = time.Unix(math.MinInt64/1000+62135596801, 0).UTC()
	maxTime          = time.Unix(math.MaxInt64/1000-62135596801, 999999999).UTC()
	minTimeFormatted = minTime.Format(time.RFC3339Nano)
	maxTimeFormatted = maxTime.Format(time.RFC3339Nano)
)

func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	t, err := parseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid time value for '%s': %w", name, err)
	}
	return t, nil
}

// parseTime accepts Unix seconds (with up to millisecond precision) or RFC 3339.
func parseTime(s string) (time.Time, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		sec, ns := math.Modf(t)
		ns = math.Round(ns*1000) / 1000
		return time.Unix(int64(sec), int64(ns*float64(time.Second))).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	switch s {
	case minTimeFormatted:
		return minTime, nil
	case maxTimeFormatted:
		return maxTime, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

// parseDuration accepts float seconds or a Prometheus duration ("1m30s").
func parseDuration(s string) (time.Duration, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		ts := d * float64(time.Second)
		if math.IsNaN(ts) || ts >= float64(math.MaxInt64) || ts < float64(math.MinInt64) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration. It overflows int64", s)
		}
		return time.Duration(ts), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

// parseLimit returns 0 for no limit.
func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errors.New("limit must be non-negative")
	}
	return n, nil
}
