package queries

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// otelMigrationStorm is TestPackOtel's storm from a service in migration
// (OTEL_SEMCONV_STABILITY_OPT_IN=http/dup): every request recorded under
// the stable names (seconds) and the pre-stable ones (milliseconds), as the
// OpenTelemetry Prometheus exporter writes them and Prometheus scrapes them.
// Pre-stable attributes: otelhttp internal/semconv/v1.20.0.go (OldHTTPServer
// and OldHTTPClient MetricAttributes), open-telemetry/opentelemetry-go-contrib
// commit 0de6f5187038ba16970067270a6769808ad814a8. cart exports only the
// pre-stable server histogram, without http_status_code (a relabelling that
// dropped it): its edge error rate must read no data, never 0.
func otelMigrationStorm(d data) {
	scrape := map[string]string{"job": "checkout", "instance": "10.1.2.5:9464",
		"otel_scope_name": "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "otel_scope_version": "0.49.0"}
	newSrv := func(code string) map[string]string {
		return with(scrape, "http_request_method", "POST", "http_route", "/checkout", "url_scheme", "http",
			"network_protocol_version", "1.1", "http_response_status_code", code)
	}
	oldSrv := func(code string) map[string]string {
		return with(scrape, "http_method", "POST", "http_scheme", "http", "net_host_name", "checkout",
			"net_host_port", "8080", "net_protocol_name", "http", "net_protocol_version", "1.1", "http_status_code", code)
	}
	newCl := func(dep, code string) map[string]string {
		return with(scrape, "http_request_method", "POST", "server_address", dep, "server_port", "8080", "http_response_status_code", code)
	}
	oldCl := func(dep, code string) map[string]string {
		return with(scrape, "http_method", "POST", "net_peer_name", dep, "net_peer_port", "8080", "http_status_code", code)
	}
	type series struct {
		srv        bool
		dep, code  string
		rate, mean phased
		share      [4][]float64
	}
	fast, slow := phased{0.02, 0.02, 0.02, 0.02}, phased{0.05, 0.8, 1.5, 0.05}
	all := []series{
		{true, "", "200", phased{10, 10, 9, 10}, fast, fastLat},
		{true, "", "500", phased{0, 0, 1, 0}, fast, fastLat},
		{false, "payments", "200", phased{10, 10, 10, 10}, slow, slowLat},
		{false, "payments", "503", phased{0, 10, 28, 0}, slow, slowLat},
		{false, "payments", "429", phased{0, 0, 2, 0}, slow, slowLat},
		// ledger is called for half the requests: fan-out, not retries.
		{false, "ledger", "200", phased{5, 5, 5, 5}, fast, fastLat},
	}
	ms := func(p phased) phased { return p.mul(phased{1000, 1000, 1000, 1000}) }
	for _, s := range all {
		if s.srv {
			d.histogram("http_server_request_duration_seconds", newSrv(s.code), les, s.rate, s.mean, s.share)
			d.histogram("http_server_duration_milliseconds", oldSrv(s.code), msLes, s.rate, ms(s.mean), s.share)
			continue
		}
		d.histogram("http_client_request_duration_seconds", newCl(s.dep, s.code), les, s.rate, s.mean, s.share)
		d.histogram("http_client_duration_milliseconds", oldCl(s.dep, s.code), msLes, s.rate, ms(s.mean), s.share)
	}
	cart := map[string]string{"job": "cart", "instance": "10.1.9.2:9464", "http_method": "GET", "http_scheme": "http",
		"net_host_name": "cart", "net_host_port": "8080"}
	d.histogram("http_server_duration_milliseconds", cart, msLes, phased{10, 10, 10, 10}, ms(fast), fastLat)
}

// The pre-stable pack reads exactly what the stable one reads from the same
// requests, calm and in the storm, and no data where its labels are missing.
func TestPackOtelLegacy(t *testing.T) {
	t.Parallel()
	d := newData()
	otelMigrationStorm(d)
	f := startFixture(t, d)

	const pack = "otel-legacy"
	P, L := ls("job", "checkout", "net_peer_name", "payments"), ls("job", "checkout", "net_peer_name", "ledger")
	pair := pairOf(P, L)
	f.check("amplification", pack, none, calm, pair(1, 0.5, OK, OK))
	f.check("amplification", pack, none, during, pair(4, 0.5, Crit, OK))
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("throttle_retries", pack, none, calm, pair(0, 0, OK, OK))
	f.check("throttle_retries", pack, none, during, pair(2, 0, Crit, OK))
	f.check("dependency_p99", pack, none, rising, pair(0.995, 0.0495, Warn, OK))
	f.check("dependency_p99", pack, Params{Dependency: "payments"}, during, want{P: {2.485, Crit}})
	S := ls("job", "checkout")
	f.check("edge_error_rate", pack, Params{Service: "checkout"}, calm, want{S: {0, OK}})
	f.check("edge_error_rate", pack, Params{Service: "checkout"}, during, want{S: {0.1, Crit}})
	// cart's requests carry no http_status_code: no data, not a 0 that reads ok.
	f.check("edge_error_rate", pack, Params{Service: "cart"}, during, want{})

	// The same numbers as the stable names, query by query and series by series.
	for _, id := range []string{"amplification", "throttle_retries", "dependency_p99", "edge_error_rate"} {
		for _, at := range []time.Duration{calm, rising, during, after} {
			oldR, err := f.cat.Render(id, pack, Params{Service: "checkout"})
			if err != nil {
				t.Fatal(err)
			}
			newR, err := f.cat.Render(id, "otel", Params{Service: "checkout"})
			if err != nil {
				t.Fatal(err)
			}
			oldV := slices.Sorted(maps.Values(f.eval(oldR.Expr, at)))
			newV := slices.Sorted(maps.Values(f.eval(newR.Expr, at)))
			if len(oldV) != len(newV) || len(oldV) == 0 {
				t.Errorf("%s at %s: pre-stable %v, stable %v", id, at, oldV, newV)
				continue
			}
			for i := range oldV {
				if !near(oldV[i], newV[i]) {
					t.Errorf("%s at %s: pre-stable %v, stable %v", id, at, oldV, newV)
				}
			}
		}
	}
}
