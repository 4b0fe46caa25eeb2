package queries

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/stormctl/stormctl/internal/testenv"
)

// The storm every pack test replays, in that pack's metric names: calm until
// 12m, rising (about 2 attempts per request) until 14m, the storm (about 4)
// until 24m, then recovery until 40m. Samples every 15s from t0.
var (
	t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	// Boundaries between the phases, as offsets from t0.
	stormPhases = []time.Duration{12 * time.Minute, 14 * time.Minute, 24 * time.Minute}
)

const (
	step     = 15 * time.Second
	nSamples = 161 // 0m to 40m

	// Moments the tests look at: well inside each phase, so every 1m
	// window is flat and the expected values are exact.
	calm   = 10 * time.Minute
	rising = 13*time.Minute + 30*time.Second
	during = 20 * time.Minute
	after  = 35 * time.Minute
)

// phased is a value per phase: calm, rising, storm, recovery.
type phased [4]float64

// samples spreads p over the timeline. Sample i stands for the step that
// ends at it, so it takes the value of the phase holding the step's middle.
func (p phased) samples() []float64 {
	out := make([]float64, nSamples)
	for i := range out {
		out[i] = p[phaseAt(time.Duration(i)*step-step/2)]
	}
	return out
}

// mul multiplies two profiles phase by phase.
func (p phased) mul(q phased) phased {
	for i := range p {
		p[i] *= q[i]
	}
	return p
}

// data wraps testenv.OpenMetrics with phase-profile helpers.
type data struct{ *testenv.OpenMetrics }

func newData() data { return data{testenv.NewOpenMetrics()} }

// counter adds a counter whose rate per second follows rate.
func (d data) counter(name string, labels map[string]string, rate phased) {
	d.Counter(name, labels, t0, step, testenv.Cumulate(rate.samples(), step))
}

func (d data) gauge(name string, labels map[string]string, v phased) {
	d.Gauge(name, labels, t0, step, v.samples())
}

// histogram adds a histogram observed rate times a second, each phase's
// observations spread over the buckets by share (non-cumulative, one share
// per bound in les) and summing to rate×mean per second.
func (d data) histogram(name string, labels map[string]string, les []float64, rate, mean phased, share [4][]float64) {
	rs, ms := rate.samples(), mean.samples()
	buckets := make([][]float64, nSamples)
	sums := make([]float64, nSamples)
	acc := make([]float64, len(les))
	total := 0.0
	for i := range rs {
		ph := phaseAt(time.Duration(i)*step - step/2)
		n := rs[i] * step.Seconds()
		cum := 0.0
		for j := range les {
			cum += share[ph][j] * n
			acc[j] += cum
		}
		total += n * ms[i]
		buckets[i] = append([]float64(nil), acc...)
		sums[i] = total
	}
	d.Histogram(name, labels, t0, step, les, buckets, sums)
}

func phaseAt(d time.Duration) int {
	return sort.Search(len(stormPhases), func(j int) bool { return stormPhases[j] > d })
}

// fixture is a real Prometheus holding one pack's storm.
type fixture struct {
	t   testing.TB
	url string
	cat *Catalog
	api v1.API
}

func startFixture(t testing.TB, d data) *fixture {
	t.Helper()
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: d.String()})
	client, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, url: p.URL, cat: cat, api: v1.NewAPI(client)}
}

// eval runs expr at t0+at and returns each series' value by its label set.
func (f *fixture) eval(expr string, at time.Duration) map[string]float64 {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, warnings, _, err := f.api.Query(ctx, expr, t0.Add(at))
	if err != nil {
		f.t.Fatalf("query at %s: %v\n%s", at, err, expr)
	}
	if len(warnings) > 0 {
		f.t.Errorf("warnings at %s: %v", at, warnings)
	}
	out := map[string]float64{}
	for _, s := range v.(model.Vector) {
		out[s.Metric.String()] = float64(s.Value)
	}
	return out
}

// want is an expected result: value and status per series.
type want map[string]struct {
	v float64
	s Status
}

// ls names a series by its labels, as model.Metric prints them.
func ls(kv ...string) string {
	m := model.Metric{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[model.LabelName(kv[i])] = model.LabelValue(kv[i+1])
	}
	return m.String()
}

// check renders id for pack, evaluates it at t0+at and compares every series
// (no more, no fewer) with w, values within 0.1% and statuses exactly.
func (f *fixture) check(id, pack string, p Params, at time.Duration, w want) *Rendered {
	f.t.Helper()
	r, err := f.cat.Render(id, pack, p)
	if err != nil {
		f.t.Fatalf("render %s/%s: %v", id, pack, err)
	}
	got := f.eval(r.Expr, at)
	for k, e := range w {
		v, ok := got[k]
		switch {
		case !ok:
			f.t.Errorf("%s/%s at %s: no series %s; got %v", id, pack, at, k, got)
		case !near(v, e.v):
			f.t.Errorf("%s/%s at %s: %s = %g, want %g", id, pack, at, k, v, e.v)
		case r.Threshold.Evaluate(v) != e.s:
			f.t.Errorf("%s/%s at %s: %s = %g is %s, want %s", id, pack, at, k, v, r.Threshold.Evaluate(v), e.s)
		}
	}
	for k := range got {
		if _, ok := w[k]; !ok {
			f.t.Errorf("%s/%s at %s: unexpected series %s = %g", id, pack, at, k, got[k])
		}
	}
	return r
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-3*math.Max(math.Abs(want), 1e-3)
}

// trips checks the moment a query's threshold trips for series key: the
// instant value is not critical one step before tripAt and is critical at
// it; the Sustained form is not critical until Threshold.For has passed.
func (f *fixture) trips(id, pack string, p Params, key string, tripAt time.Duration) {
	f.t.Helper()
	r, err := f.cat.Render(id, pack, p)
	if err != nil {
		f.t.Fatal(err)
	}
	status := func(expr string, at time.Duration) Status {
		v, ok := f.eval(expr, at)[key]
		if !ok {
			f.t.Fatalf("%s/%s at %s: no series %s", id, pack, at, key)
		}
		return r.Threshold.Evaluate(v)
	}
	if s := status(r.Expr, tripAt-step); s == Crit {
		f.t.Errorf("%s/%s: critical already at %s", id, pack, tripAt-step)
	}
	if s := status(r.Expr, tripAt); s != Crit {
		f.t.Errorf("%s/%s: %s at %s, want crit", id, pack, s, tripAt)
	}
	if r.Threshold.For == 0 {
		return
	}
	sustained := r.Sustained(step)
	if !strings.HasPrefix(sustained, "m") {
		f.t.Fatalf("Sustained did not wrap the expression: %s", sustained)
	}
	if s := status(sustained, tripAt+r.Threshold.For-2*step); s == Crit {
		f.t.Errorf("%s/%s: sustained critical at %s, before for: %s held", id, pack, tripAt+r.Threshold.For-2*step, r.Threshold.For)
	}
	if s := status(sustained, tripAt+r.Threshold.For+step); s != Crit {
		f.t.Errorf("%s/%s: sustained %s at %s, want crit", id, pack, s, tripAt+r.Threshold.For+step)
	}
}

// stormStart is the first evaluation time whose latest sample includes the storm.
var stormStart = stormPhases[0] + step

// with returns a copy of labels with more label pairs.
func with(labels map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// breakerFleet adds a breaker-state gauge for four instances: pod-1 opens
// while rising, pod-2 too in the storm, pod-4 is forced open (a lever, not a
// symptom) during the storm, so the open share is 0, 0.25, 0.5, 0. states
// are the pack's state names in the order closed, open, then any others
// (the third other, if present, is the forced state).
func breakerFleet(d data, name string, labels map[string]string, states []string) {
	open := [4]phased{{0, 1, 1, 0}, {0, 0, 1, 0}, {}, {}}
	forced := [4]phased{{}, {}, {}, {0, 0, 1, 0}}
	for i := range 4 {
		pod := with(labels, "instance", fmt.Sprintf("pod-%d", i+1))
		closed := phased{1, 1, 1, 1}
		for ph := range closed {
			closed[ph] -= open[i][ph] + forced[i][ph]
		}
		for j, st := range states {
			v := phased{}
			switch {
			case j == 0:
				v = closed
			case j == 1:
				v = open[i]
			case j == 3:
				v = forced[i]
			}
			d.gauge(name, with(pod, "state", st), v)
		}
	}
}

// none is a query with no params: every service and dependency.
var none Params

// pairOf builds the expected result for the storming series s and the calm series c.
func pairOf(s, c string) func(sv, cv float64, ss, cs Status) want {
	return func(sv, cv float64, ss, cs Status) want { return want{s: {sv, ss}, c: {cv, cs}} }
}
