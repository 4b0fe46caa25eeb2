package queries

import "testing"

func TestPackOtel(t *testing.T) {
	t.Parallel()
	d := newData()
	server := func(code string) map[string]string {
		return map[string]string{"job": "checkout", "http_request_method": "POST", "http_route": "/checkout", "http_response_status_code": code}
	}
	client := func(dep, code string) map[string]string {
		return map[string]string{"job": "checkout", "http_request_method": "POST", "server_address": dep, "http_response_status_code": code}
	}
	d.histogram("http_server_request_duration_seconds", server("200"), les, phased{10, 10, 9, 10}, phased{0.02, 0.02, 0.02, 0.02}, fastLat)
	d.histogram("http_server_request_duration_seconds", server("500"), les, phased{0, 0, 1, 0}, phased{0.02, 0.02, 0.02, 0.02}, fastLat)
	slow := phased{0.05, 0.8, 1.5, 0.05}
	d.histogram("http_client_request_duration_seconds", client("payments", "200"), les, phased{10, 10, 10, 10}, slow, slowLat)
	d.histogram("http_client_request_duration_seconds", client("payments", "503"), les, phased{0, 10, 28, 0}, slow, slowLat)
	d.histogram("http_client_request_duration_seconds", client("payments", "429"), les, phased{0, 0, 2, 0}, slow, slowLat)
	// ledger is called for half the requests: fan-out, not retries.
	d.histogram("http_client_request_duration_seconds", client("ledger", "200"), les, phased{5, 5, 5, 5}, phased{0.02, 0.02, 0.02, 0.02}, fastLat)
	f := startFixture(t, d)

	P, L := ls("job", "checkout", "server_address", "payments"), ls("job", "checkout", "server_address", "ledger")
	pair := pairOf(P, L)
	const pack = "otel"
	f.check("amplification", pack, none, calm, pair(1, 0.5, OK, OK))
	r := f.check("amplification", pack, none, during, pair(4, 0.5, Crit, OK))
	if r.Note == "" {
		t.Error("otel amplification must carry the fan-out caveat")
	}
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("throttle_retries", pack, none, calm, pair(0, 0, OK, OK))
	f.check("throttle_retries", pack, none, during, pair(2, 0, Crit, OK))
	f.check("dependency_p99", pack, none, rising, pair(0.995, 0.0495, Warn, OK))
	f.check("dependency_p99", pack, none, during, pair(2.485, 0.0495, Crit, OK))
	S := ls("job", "checkout")
	f.check("edge_error_rate", pack, none, calm, want{S: {0, OK}})
	f.check("edge_error_rate", pack, Params{Service: "checkout"}, during, want{S: {0.1, Crit}})
}
