package queries

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// spanCalls writes the storm as span counts: checkout's client spans to
// payments, 10 first attempts/s and the retries (http.request.resend_count
// 1..3: 10/s while rising, 30/s in the storm); ledger, called 5/s and never
// retried; checkout's server spans, 2 of 10/s Error in the storm. first
// labels the first attempts' resend count: "0" (the connector's default)
// or "" (no default: no label). cart calls catalog 40/s with no resend
// dimension configured at all.
func spanCalls(d data, calls, svc string, base map[string]string, first string) {
	span := func(service, kind, status string, kv ...string) map[string]string {
		return with(with(base, svc, service, "span_name", "POST", "span_kind", kind, "status_code", status), kv...)
	}
	client := func(service, dep, resend string) map[string]string {
		l := span(service, "SPAN_KIND_CLIENT", "STATUS_CODE_UNSET", "server_address", dep)
		if resend != "" {
			l["http_request_resend_count"] = resend
		}
		return l
	}
	d.counter(calls, client("checkout", "payments", first), phased{10, 10, 10, 10})
	// A resend count's series starts with its first span, as the
	// connector and the generator create series.
	retries := func(resend string, from time.Duration, rate phased) {
		i := int(from / step)
		d.Counter(calls, client("checkout", "payments", resend), t0.Add(from), step, testenv.Cumulate(rate.samples()[i:], step))
	}
	retries("1", stormPhases[0], phased{0, 10, 10, 0})
	retries("2", stormPhases[1], phased{0, 0, 10, 0})
	retries("3", stormPhases[1], phased{0, 0, 10, 0})
	d.counter(calls, client("checkout", "ledger", first), phased{5, 5, 5, 5})
	d.counter(calls, span("checkout", "SPAN_KIND_SERVER", "STATUS_CODE_UNSET"), edgeOK)
	d.counter(calls, span("checkout", "SPAN_KIND_SERVER", "STATUS_CODE_ERROR"), edge5xx)
	d.counter(calls, client("cart", "catalog", ""), attempts)
}

// spanLatency writes the client spans' duration histogram, attempts to
// payments slow in the storm, to ledger fast; scale 1000 for milliseconds.
func spanLatency(d data, name, svc string, base map[string]string, bounds []float64, scale float64) {
	s := phased{scale, scale, scale, scale}
	l := func(dep string) map[string]string {
		return with(base, svc, "checkout", "span_name", "POST", "span_kind", "SPAN_KIND_CLIENT",
			"status_code", "STATUS_CODE_UNSET", "server_address", dep)
	}
	d.histogram(name, l("payments"), bounds, attempts, phased{0.05, 0.8, 1.5, 0.05}.mul(s), slowLat)
	d.histogram(name, l("ledger"), bounds, phased{5, 5, 5, 5}, phased{0.02, 0.02, 0.02, 0.02}.mul(s), fastLat)
}

// The Collector's spanmetrics connector (dimensions server.address and
// http.request.resend_count with default "0") through its Prometheus
// exporter, scraped without honor_labels: the resource's service.name is
// exported_job, the dimension service.name is service_name.
func TestPackSpanMetrics(t *testing.T) {
	t.Parallel()
	d := newData()
	base := map[string]string{"job": "otel-collector", "instance": "otel-collector.observability:8889",
		"exported_job": "checkout", "otel_scope_name": "spanmetricsconnector"}
	spanCalls(d, "traces_span_metrics_calls_total", "service_name", base, "0")
	spanLatency(d, "traces_span_metrics_duration_milliseconds", "service_name", base, msLes, 1000)
	f := startFixture(t, d)
	checkSpanPack(t, f, "spanmetrics", "service_name", true)
}

// Tempo's metrics-generator writes its series by remote write (no scrape
// labels), the service as service, latency in seconds; a dimension the span
// lacks is an empty value, so first attempts carry no resend label.
func TestPackTempoSpanMetrics(t *testing.T) {
	t.Parallel()
	d := newData()
	spanCalls(d, "traces_spanmetrics_calls_total", "service", map[string]string{}, "")
	spanLatency(d, "traces_spanmetrics_latency", "service", map[string]string{}, les, 1)
	f := startFixture(t, d)
	checkSpanPack(t, f, "tempo-spanmetrics", "service", false)
}

// checkSpanPack checks the storm's values. With the resend label on every
// span (labelled), calm reads 1 and 0; without it, the retry queries read no
// data until a retry shows the dimension is configured, and 1 and 0 after.
func checkSpanPack(t *testing.T, f *fixture, pack, svc string, labelled bool) {
	t.Helper()
	P, L := ls(svc, "checkout", "server_address", "payments"), ls(svc, "checkout", "server_address", "ledger")
	pair := pairOf(P, L)
	if labelled {
		f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
		f.check("retry_ratio", pack, none, calm, pair(0, 0, OK, OK))
		f.check("retries_per_request", pack, none, calm, pair(0, 0, OK, OK))
	} else {
		for _, id := range []string{"amplification", "retry_ratio", "retries_per_request"} {
			f.check(id, pack, none, calm, want{})
			f.check(id, pack, none, after, want{P: {map[string]float64{"amplification": 1}[id], OK}})
		}
	}
	f.check("amplification", pack, none, rising, want{P: {2, Crit}, L: {1, OK}}.only(labelled, P))
	f.check("amplification", pack, Params{Service: "checkout", Dependency: "payments"}, during, want{P: {4, Crit}})
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("retry_ratio", pack, none, during, want{P: {0.75, Crit}, L: {0, OK}}.only(labelled, P))
	f.check("retries_per_request", pack, none, during, want{P: {3, Crit}, L: {0, OK}}.only(labelled, P))
	f.check("dependency_p99", pack, none, calm, pair(0.0495, 0.0495, OK, OK))
	f.check("dependency_p99", pack, none, during, pair(2.485, 0.0495, Crit, OK))
	S := ls(svc, "checkout")
	f.check("edge_error_rate", pack, none, calm, want{S: {0, OK}})
	f.check("edge_error_rate", pack, Params{Service: "checkout"}, during, want{S: {0.2, Crit}})

	// cart's spans carry no resend count: no data, whose note says what to
	// add to the connector's config, never a 1 or a 0 that reads ok.
	for _, id := range []string{"amplification", "retry_ratio", "retries_per_request"} {
		r := f.check(id, pack, Params{Service: "cart"}, during, want{})
		if !strings.Contains(r.Note, "add http.request.resend_count to the dimensions") {
			t.Errorf("%s/%s: the note must say which dimension to add: %q", id, pack, r.Note)
		}
	}
	if _, err := f.cat.Render("throttle_retries", pack, none); err == nil {
		t.Errorf("%s must not claim throttle_retries", pack)
	}
}

// only keeps, without the resend label on first attempts, the series that
// retried: ledger never did, so its dimension is not seen.
func (w want) only(labelled bool, keep string) want {
	if labelled {
		return w
	}
	out := want{}
	for k, v := range w {
		if k == keep {
			out[k] = v
		}
	}
	if len(out) != 1 {
		panic(fmt.Sprintf("no series %s in %v", keep, w))
	}
	return out
}

// The doctor finds the span metrics of both sources and configures them.
func TestDoctorSpanMetrics(t *testing.T) {
	t.Parallel()
	want := map[string]float64{"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "dependency_p99": 2.485, "edge_error_rate": 0.2}
	runDoctor(t, setup{service: "checkout", dep: "payments", pack: "spanmetrics", depValue: "payments", want: want,
		data: func(d data) {
			base := map[string]string{"job": "otel-collector", "instance": "otel-collector.observability:8889", "exported_job": "checkout"}
			spanCalls(d, "traces_span_metrics_calls_total", "service_name", base, "0")
			spanLatency(d, "traces_span_metrics_duration_milliseconds", "service_name", base, msLes, 1000)
		}})
	runDoctor(t, setup{service: "checkout", dep: "payments", pack: "tempo-spanmetrics", depValue: "payments", want: want,
		data: func(d data) {
			spanCalls(d, "traces_spanmetrics_calls_total", "service", map[string]string{}, "")
			spanLatency(d, "traces_spanmetrics_latency", "service", map[string]string{}, les, 1)
		}})
}
