package queries

import "testing"

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
