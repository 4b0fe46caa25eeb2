package testenv

import (
	"math"
	"testing"
	"time"
)

func TestOpenMetricsString(t *testing.T) {
	start := time.Unix(1700000000, 500e6)
	o := NewOpenMetrics()
	o.Counter("req_total", map[string]string{"svc": "a", "path": `x"y\z`}, start, 15*time.Second, []float64{1, 2})
	o.Gauge("temp", nil, start, time.Second, []float64{math.NaN(), math.Inf(-1)})
	o.Counter("req_total", map[string]string{"svc": "b"}, start, 15*time.Second, []float64{3})
	o.Counter("envoy_rq_retry", nil, start, time.Second, []float64{7})
	o.Histogram("lat", map[string]string{"svc": "a"}, start, time.Second, []float64{0.5, math.Inf(1)},
		[][]float64{{1, 2}}, []float64{0.7})
	want := `# TYPE req counter
req_total{path="x\"y\\z",svc="a"} 1 1700000000.500
req_total{path="x\"y\\z",svc="a"} 2 1700000015.500
req_total{svc="b"} 3 1700000000.500
# TYPE temp gauge
temp NaN 1700000000.500
temp -Inf 1700000001.500
# TYPE envoy_rq_retry unknown
envoy_rq_retry 7 1700000000.500
# TYPE lat histogram
lat_bucket{le="0.5",svc="a"} 1 1700000000.500
lat_bucket{le="+Inf",svc="a"} 2 1700000000.500
lat_count{svc="a"} 2 1700000000.500
lat_sum{svc="a"} 0.7 1700000000.500
# EOF
`
	if got := o.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCumulate(t *testing.T) {
	got := Cumulate([]float64{1, 1, 4, 0}, 15*time.Second)
	want := []float64{15, 30, 90, 90}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Cumulate = %v, want %v", got, want)
		}
	}
}
