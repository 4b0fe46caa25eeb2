package queries

import "testing"

func TestPackResilience4j(t *testing.T) {
	t.Parallel()
	d := newData()
	pay := map[string]string{"job": "checkout", "name": "payments"}
	led := map[string]string{"job": "checkout", "name": "ledger"}
	// Logical calls by kind: 10/s to payments, of which 5 then 7 retried.
	calls := func(l map[string]string, kind string, v phased) {
		d.counter("resilience4j_retry_calls_total", with(l, "kind", kind), v)
	}
	calls(pay, "successful_without_retry", phased{10, 5, 3, 10})
	calls(pay, "successful_with_retry", phased{0, 4, 5, 0})
	calls(pay, "failed_with_retry", phased{0, 1, 2, 0})
	calls(pay, "failed_without_retry", phased{})
	calls(led, "successful_without_retry", phased{5, 5, 5, 5})
	calls(led, "successful_with_retry", phased{})
	calls(led, "failed_with_retry", phased{})
	calls(led, "failed_without_retry", phased{})
	breakerFleet(d, "resilience4j_circuitbreaker_state", pay,
		[]string{"closed", "open", "half_open", "forced_open", "disabled", "metrics_only"})
	d.gauge("resilience4j_bulkhead_max_allowed_concurrent_calls", pay, phased{20, 20, 20, 20})
	d.gauge("resilience4j_bulkhead_available_concurrent_calls", pay, phased{18, 10, 1, 18})
	f := startFixture(t, d)

	P, L := ls("job", "checkout", "name", "payments"), ls("job", "checkout", "name", "ledger")
	pair := pairOf(P, L)
	const pack = "resilience4j"
	f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
	f.check("amplification", pack, none, rising, pair(1.5, 1, Crit, OK))
	r := f.check("amplification", pack, none, during, pair(1.7, 1, Crit, OK))
	if r.Bound != "lower" {
		t.Errorf("resilience4j amplification bound = %q, want lower", r.Bound)
	}
	// (10 + 1.25) / 10 at the first storm sample, 1.25 one step later, 1.375 after two.
	f.check("amplification", pack, none, stormStart, pair(1.125, 1, OK, OK))
	f.trips("amplification", pack, none, P, stormStart+2*step)
	f.check("retry_ratio", pack, none, rising, pair(5.0/15, 0, Crit, OK))
	f.check("retry_ratio", pack, none, during, pair(7.0/17, 0, Crit, OK))
	f.check("retries_per_request", pack, none, during, pair(0.7, 0, Crit, OK))
	f.check("retries_per_request", pack, none, after, pair(0, 0, OK, OK))
	f.check("breaker_open_fraction", pack, none, calm, want{P: {0, OK}})
	f.check("breaker_open_fraction", pack, none, during, want{P: {0.5, Crit}})
	f.trips("breaker_open_fraction", pack, none, P, stormStart)
	f.check("pool_saturation", pack, none, calm, want{P: {0.1, OK}})
	f.check("pool_saturation", pack, Params{Pool: "payments"}, during, want{P: {0.95, Crit}})
}

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

func TestPackGRPC(t *testing.T) {
	t.Parallel()
	d := newData()
	tgt := func(dep string, kv ...string) map[string]string {
		return with(map[string]string{"job": "checkout", "grpc_target": "dns:///" + dep + ":50051", "grpc_method": "shop.Pay/Charge"}, kv...)
	}
	d.counter("grpc_client_attempt_started_total", tgt("payments"), amp.mul(phased{10, 10, 10, 10}))
	d.counter("grpc_client_attempt_started_total", tgt("ledger"), phased{5, 5, 5, 5})
	fastMean := phased{0.02, 0.02, 0.02, 0.02}
	d.histogram("grpc_client_call_duration_seconds", tgt("payments", "grpc_status", "OK"), les, phased{10, 10, 8, 10}, fastMean, fastLat)
	d.histogram("grpc_client_call_duration_seconds", tgt("payments", "grpc_status", "UNAVAILABLE"), les, phased{0, 0, 2, 0}, fastMean, fastLat)
	d.histogram("grpc_client_call_duration_seconds", tgt("ledger", "grpc_status", "OK"), les, phased{5, 5, 5, 5}, fastMean, fastLat)
	slow := phased{0.05, 0.8, 1.5, 0.05}
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "OK"), les, phased{10, 10, 10, 10}, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "UNAVAILABLE"), les, phased{0, 10, 28, 0}, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "RESOURCE_EXHAUSTED"), les, phased{0, 0, 2, 0}, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("ledger", "grpc_status", "OK"), les, phased{5, 5, 5, 5}, fastMean, fastLat)
	srv := func(code string) map[string]string {
		return map[string]string{"job": "checkout", "grpc_method": "shop.Checkout/Buy", "grpc_status": code}
	}
	d.histogram("grpc_server_call_duration_seconds", srv("OK"), les, phased{10, 10, 9, 10}, fastMean, fastLat)
	d.histogram("grpc_server_call_duration_seconds", srv("INTERNAL"), les, phased{0, 0, 1, 0}, fastMean, fastLat)
	d.histogram("grpc_server_call_duration_seconds", srv("NOT_FOUND"), les, phased{0, 0, 0, 0}, fastMean, fastLat)
	f := startFixture(t, d)

	P := ls("job", "checkout", "grpc_target", "dns:///payments:50051")
	L := ls("job", "checkout", "grpc_target", "dns:///ledger:50051")
	pair := pairOf(P, L)
	const pack = "grpc"
	f.check("amplification", pack, none, calm, pair(1, 1, OK, OK))
	f.check("amplification", pack, Params{Dependency: "dns:///payments:50051"}, during, want{P: {4, Crit}})
	f.trips("amplification", pack, none, P, stormStart+step)
	f.check("retry_ratio", pack, none, rising, pair(0.5, 0, Crit, OK))
	f.check("retries_per_request", pack, none, during, pair(3, 0, Crit, OK))
	f.check("throttle_retries", pack, none, calm, pair(0, 0, OK, OK))
	f.check("throttle_retries", pack, none, during, pair(2, 0, Crit, OK))
	f.check("dependency_p99", pack, none, calm, pair(0.0495, 0.0495, OK, OK))
	f.check("dependency_p99", pack, none, during, pair(2.485, 0.0495, Crit, OK))
	S := ls("job", "checkout")
	f.check("edge_error_rate", pack, none, calm, want{S: {0, OK}})
	f.check("edge_error_rate", pack, none, during, want{S: {0.1, Crit}})
}

func TestPackPools(t *testing.T) {
	t.Parallel()
	d := newData()
	hk := map[string]string{"job": "checkout", "pool": "HikariPool-1"}
	d.gauge("hikaricp_connections_active", hk, phased{4, 9, 10, 4})
	d.gauge("hikaricp_connections_pending", hk, phased{0, 0, 6, 0})
	d.gauge("hikaricp_connections_max", hk, phased{10, 10, 10, 10})
	orders := map[string]string{"job": "checkout", "db_name": "orders"}
	d.gauge("go_sql_in_use_connections", orders, phased{4, 9, 10, 4})
	d.gauge("go_sql_max_open_connections", orders, phased{10, 10, 10, 10})
	// Six goroutines wait on average during the storm: 6 seconds of wait per second.
	d.counter("go_sql_wait_duration_seconds_total", orders, phased{0, 0, 6, 0})
	// An unlimited pool (MaxOpenConns 0) cannot saturate and is left out.
	cache := map[string]string{"job": "checkout", "db_name": "cache"}
	d.gauge("go_sql_in_use_connections", cache, phased{3, 3, 3, 3})
	d.gauge("go_sql_max_open_connections", cache, phased{})
	d.counter("go_sql_wait_duration_seconds_total", cache, phased{})
	f := startFixture(t, d)

	for pack, key := range map[string]string{
		"hikaricp": ls("job", "checkout", "pool", "HikariPool-1"),
		"go_sql":   ls("job", "checkout", "db_name", "orders"),
	} {
		f.check("pool_saturation", pack, none, calm, want{key: {0.4, OK}})
		f.check("pool_saturation", pack, none, rising, want{key: {0.9, Crit}})
		f.check("pool_saturation", pack, none, during, want{key: {1, Crit}})
		f.check("pool_saturation", pack, none, after, want{key: {0.4, OK}})
		f.trips("pool_saturation", pack, none, key, stormStart)
		f.check("demanded_concurrency", pack, none, calm, want{key: {0.4, OK}})
		f.check("demanded_concurrency", pack, none, rising, want{key: {0.9, Warn}})
		f.check("demanded_concurrency", pack, Params{Service: "checkout"}, during, want{key: {1.6, Crit}})
	}
}
