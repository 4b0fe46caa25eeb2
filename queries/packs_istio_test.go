package queries

import "testing"

func TestPackIstio(t *testing.T) {
	t.Parallel()
	d := newData()
	src := func(dep, reporter, code string) map[string]string {
		return map[string]string{
			"source_workload": "checkout", "destination_service": dep + ".shop.svc.cluster.local",
			"destination_workload": dep, "reporter": reporter, "response_code": code,
		}
	}
	// The caller's sidecar reports each request once; the destination's
	// sidecar sees every attempt, including the caller sidecar's retries.
	d.counter("istio_requests_total", src("payments", "source", "200"), phased{8, 8, 6, 8})
	d.counter("istio_requests_total", src("payments", "source", "503"), phased{2, 2, 4, 2})
	d.counter("istio_requests_total", src("ledger", "source", "200"), phased{5, 5, 5, 5})
	d.counter("istio_requests_total", src("payments", "destination", "200"), phased{8, 8, 6, 8})
	d.counter("istio_requests_total", src("payments", "destination", "503"), phased{2, 12, 32, 2})
	d.counter("istio_requests_total", src("payments", "destination", "429"), phased{0, 0, 2, 0})
	d.counter("istio_requests_total", src("ledger", "destination", "200"), phased{5, 5, 5, 5})
	d.histogram("istio_request_duration_milliseconds", src("payments", "source", "200"), msLes, phased{10, 10, 10, 10}, phased{50, 800, 1500, 50}, slowLat)
	d.histogram("istio_request_duration_milliseconds", src("ledger", "source", "200"), msLes, phased{5, 5, 5, 5}, phased{20, 20, 20, 20}, fastLat)
	f := startFixture(t, d)

	P := ls("source_workload", "checkout", "destination_service", "payments.shop.svc.cluster.local")
	L := ls("source_workload", "checkout", "destination_service", "ledger.shop.svc.cluster.local")
	pair := pairOf(P, L)
	const pack = "istio"
	f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
	f.check("amplification", pack, none, during, pair(4, 1, Crit, OK))
	f.check("amplification", pack, Params{Dependency: "payments.shop.svc.cluster.local"}, rising, want{P: {2, Crit}})
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("retry_ratio", pack, none, rising, pair(0.5, 0, Crit, OK))
	f.check("retries_per_request", pack, none, during, pair(3, 0, Crit, OK))
	f.check("throttle_retries", pack, none, calm, pair(0, 0, OK, OK))
	f.check("throttle_retries", pack, none, during, pair(2, 0, Crit, OK))
	f.check("dependency_p99", pack, none, rising, pair(0.995, 0.0495, Warn, OK))
	f.check("dependency_p99", pack, none, during, pair(2.485, 0.0495, Crit, OK))
	// Errors the payments sidecar saw: 32 of 40 attempts in the storm.
	PW, LW := ls("destination_workload", "payments"), ls("destination_workload", "ledger")
	f.check("edge_error_rate", pack, none, calm, want{PW: {0.2, Crit}, LW: {0, OK}})
	f.check("edge_error_rate", pack, Params{Service: "payments"}, during, want{PW: {0.8, Crit}})
}
