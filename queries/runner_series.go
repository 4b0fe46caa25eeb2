package queries

import (
	"fmt"
	"math"

	"github.com/prometheus/common/model"
)

// toSeries converts an API result. Native histogram samples, which have no
// single value, become NaN rather than a misleading 0.
func toSeries(v model.Value) ([]Series, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case model.Vector:
		out := make([]Series, len(v))
		for i, s := range v {
			out[i] = Series{Labels: labelsOf(s.Metric), Value: float64(s.Value)}
			if s.Histogram != nil {
				out[i].Value = math.NaN()
			}
		}
		return out, nil
	case model.Matrix:
		out := make([]Series, len(v))
		for i, s := range v {
			pts := make([]Point, len(s.Values))
			for j, p := range s.Values {
				pts[j] = Point{T: p.Timestamp.Time(), V: float64(p.Value)}
			}
			last := math.NaN()
			if len(pts) > 0 {
				last = pts[len(pts)-1].V
			}
			out[i] = Series{Labels: labelsOf(s.Metric), Value: last, Points: pts}
		}
		return out, nil
	case *model.Scalar:
		return []Series{{Labels: map[string]string{}, Value: float64(v.Value)}}, nil
	}
	return nil, fmt.Errorf("the query returned a %s, not numbers", v.Type())
}

func labelsOf(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

// empty reports whether an instant result has no series.
func empty(v model.Value) bool {
	vec, ok := v.(model.Vector)
	return v == nil || ok && len(vec) == 0
}
