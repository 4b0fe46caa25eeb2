package queries

import (
	"fmt"
	"maps"

	"github.com/stormctl/stormctl/internal/testenv"
)

// The doctor's setups: each system's metric names and labels as Prometheus
// stores them after scraping (job, instance, and the labels service
// discovery adds), carrying the same storm: amplification 4 (10 requests/s,
// 40 attempts/s), retry ratio 0.75, 2 retries/s caused by 429s, pools at
// 0.95 with 5 waiting, half the breakers open, edge errors 0.2.

var (
	attempts   = amp.mul(phased{10, 10, 10, 10}) // 10, 20, 40, 10 per second
	edgeOK     = phased{10, 10, 8, 10}
	edge5xx    = phased{0, 0, 2, 0}
	throttled  = phased{0, 0, 2, 0}
	poolInUse  = phased{4, 9, 19, 4}
	poolMax    = phased{20, 20, 20, 20}
	poolWaits  = phased{0, 0, 5, 0}
	halfBroken = [4]phased{{0, 1, 1, 0}, {0, 0, 1, 0}, {}, {}} // open per instance
)

// cumGauge writes a counter as a gauge-typed family: Envoy exports both
// envoy_cluster_upstream_rq_total and envoy_cluster_upstream_rq{code}, which
// one OpenMetrics family cannot hold. Prometheus stores samples alike.
func (d data) cumGauge(name string, labels map[string]string, rate phased) {
	d.Gauge(name, labels, t0, step, testenv.Cumulate(rate.samples(), step))
}

// envoyCluster writes one Envoy's stats for its cluster to the dependency,
// with the response-code tag name given (Envoy's own, or Istio's).
func envoyCluster(d data, cl map[string]string, code string) {
	d.cumGauge("envoy_cluster_upstream_rq_total", cl, attempts)
	d.counter("envoy_cluster_upstream_rq_retry", cl, retryRate)
	d.counter("envoy_cluster_upstream_rq", with(cl, code, "200"), phased{10, 10, 8, 10})
	d.counter("envoy_cluster_upstream_rq", with(cl, code, "503"), phased{0, 10, 30, 0})
	d.counter("envoy_cluster_retry_upstream_rq", with(cl, code, "503"), phased{0, 10, 28, 0})
	d.counter("envoy_cluster_retry_upstream_rq", with(cl, code, "429"), throttled)
	d.histogram("envoy_cluster_upstream_rq_time", cl, msLes, attempts, phased{50, 800, 1500, 50}, slowLat)
}

// breakers writes a breaker gauge for four instances, half of them open in
// the storm; instance(i) gives each one's scrape labels.
func breakers(d data, name string, instance func(i int) map[string]string) {
	for i := range 4 {
		d.gauge(name, instance(i), halfBroken[i])
	}
}

// envoyStorm: a standalone Envoy scraped by a job named after its service.
func envoyStorm(d data) {
	scrape := map[string]string{"job": "checkout", "instance": "10.1.0.7:9901"}
	cl := with(scrape, "envoy_cluster_name", "payments")
	envoyCluster(d, cl, "envoy_response_code")
	h := with(scrape, "envoy_http_conn_manager_prefix", "ingress")
	d.counter("envoy_http_downstream_rq_total", h, phased{10, 10, 10, 10})
	d.counter("envoy_http_downstream_rq_xx", with(h, "envoy_response_code_class", "2"), edgeOK)
	d.counter("envoy_http_downstream_rq_xx", with(h, "envoy_response_code_class", "5"), edge5xx)
	breakers(d, "envoy_cluster_circuit_breakers_default_rq_open", func(i int) map[string]string {
		return with(cl, "instance", fmt.Sprintf("10.1.0.%d:9901", 7+i))
	})
}

// pod is the target labels of a pod scraped by annotation with the
// kubernetes-pods job of Prometheus's and Istio's example configs.
func pod(app string, i int, port string) map[string]string {
	return map[string]string{
		"job": "kubernetes-pods", "instance": fmt.Sprintf("10.1.3.%d:%s", 4+i, port),
		"namespace": "shop", "pod": fmt.Sprintf("%s-6c9f8d7b4-%c2x7q", app, 'a'+i),
		"app": app, "pod_template_hash": "6c9f8d7b4",
	}
}

// istioEnvoyStorm: the Envoy stats of an Istio sidecar, merged into the
// pod's scrape on port 15020, with Istio's tag names and cluster names.
func istioEnvoyStorm(d data) {
	const cluster = "outbound|50051||payments.shop.svc.cluster.local"
	cl := with(pod("checkout", 0, "15020"), "cluster_name", cluster)
	envoyCluster(d, cl, "response_code")
	// Istio keeps the inbound listener in the name, and its class tag
	// takes the whole _5xx: downstream_rq_5xx → downstream_rq{response_code_class="5xx"}.
	in := pod("checkout", 0, "15020")
	d.cumGauge("envoy_http_inbound_0_0_0_0_8080_downstream_rq_total", in, phased{10, 10, 10, 10})
	d.counter("envoy_http_inbound_0_0_0_0_8080_downstream_rq", with(in, "response_code_class", "2xx"), edgeOK)
	d.counter("envoy_http_inbound_0_0_0_0_8080_downstream_rq", with(in, "response_code_class", "5xx"), edge5xx)
	breakers(d, "envoy_cluster_circuit_breakers_default_rq_open", func(i int) map[string]string {
		return with(pod("checkout", i, "15020"), "cluster_name", cluster)
	})
}

// resilience4jPodsStorm: Micrometer's resilience4j metrics from pods scraped
// by annotation. resilience4j counts logical calls: every call retried.
func resilience4jPodsStorm(d data) {
	l := with(pod("checkout", 0, "8080"), "name", "payments")
	calls := map[string]phased{
		"successful_without_retry": {10, 5, 0, 10}, "successful_with_retry": {0, 4, 8, 0},
		"failed_with_retry": {0, 1, 2, 0}, "failed_without_retry": {},
	}
	for _, kind := range []string{"successful_without_retry", "successful_with_retry", "failed_with_retry", "failed_without_retry"} {
		d.counter("resilience4j_retry_calls_total", with(l, "kind", kind), calls[kind])
	}
	for i := range 4 {
		p := with(pod("checkout", i, "8080"), "name", "payments")
		for _, st := range []string{"closed", "open", "half_open", "forced_open"} {
			v := phased{}
			switch st {
			case "closed":
				v = phased{1, 1, 1, 1}
				for ph := range v {
					v[ph] -= halfBroken[i][ph]
				}
			case "open":
				v = halfBroken[i]
			}
			d.gauge("resilience4j_circuitbreaker_state", with(p, "state", st), v)
		}
	}
	d.gauge("resilience4j_bulkhead_max_allowed_concurrent_calls", l, poolMax)
	d.gauge("resilience4j_bulkhead_available_concurrent_calls", l, phased{16, 11, 1, 16})
}

// grpcCollectorStorm: grpc-go's OpenTelemetry metrics exported by an
// OpenTelemetry Collector's prometheus exporter, scraped without
// honor_labels, so the service's job and instance became exported_*.
func grpcCollectorStorm(d data) {
	scrape := map[string]string{
		"job": "otel-collector", "instance": "otel-collector.observability:8889",
		"exported_job": "checkout", "exported_instance": "checkout-6c9f8d7b4-a2x7q",
		"otel_scope_name": "grpc-go", "otel_scope_version": "1.68.0",
	}
	tgt := func(dep string, kv ...string) map[string]string {
		return with(with(scrape, "grpc_target", "dns:///"+dep+":50051", "grpc_method", "shop.Payments/Charge"), kv...)
	}
	d.counter("grpc_client_attempt_started_total", tgt("payments"), attempts)
	d.counter("grpc_client_attempt_started_total", tgt("ledger"), phased{5, 5, 5, 5})
	fast := phased{0.02, 0.02, 0.02, 0.02}
	slow := phased{0.05, 0.8, 1.5, 0.05}
	d.histogram("grpc_client_call_duration_seconds", tgt("payments", "grpc_status", "OK"), les, phased{10, 10, 8, 10}, fast, fastLat)
	d.histogram("grpc_client_call_duration_seconds", tgt("payments", "grpc_status", "UNAVAILABLE"), les, phased{0, 0, 2, 0}, fast, fastLat)
	d.histogram("grpc_client_call_duration_seconds", tgt("ledger", "grpc_status", "OK"), les, phased{5, 5, 5, 5}, fast, fastLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "OK"), les, phased{10, 10, 10, 10}, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "UNAVAILABLE"), les, phased{0, 10, 28, 0}, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("payments", "grpc_status", "RESOURCE_EXHAUSTED"), les, throttled, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("ledger", "grpc_status", "OK"), les, phased{5, 5, 5, 5}, fast, fastLat)
	srv := func(code string) map[string]string {
		return with(scrape, "grpc_method", "shop.Checkout/Buy", "grpc_status", code)
	}
	d.histogram("grpc_server_call_duration_seconds", srv("OK"), les, edgeOK, fast, fastLat)
	d.histogram("grpc_server_call_duration_seconds", srv("INTERNAL"), les, edge5xx, fast, fastLat)
}

// hikariTrackerStorm: HikariCP's own Prometheus tracker in a service
// scraped by a job named after it.
func hikariTrackerStorm(d data) {
	l := map[string]string{"job": "ledger", "instance": "10.1.5.6:8080", "pool": "HikariPool-1"}
	d.gauge("hikaricp_active_connections", l, poolInUse)
	d.gauge("hikaricp_idle_connections", l, phased{16, 11, 1, 16})
	d.gauge("hikaricp_pending_threads", l, poolWaits)
	d.gauge("hikaricp_connections", l, poolMax)
	d.gauge("hikaricp_max_connections", l, poolMax)
	d.gauge("hikaricp_min_connections", l, phased{10, 10, 10, 10})
}

// sqlstatsStorm: dlmiddlecote/sqlstats in pods scraped by annotation; its
// counters have no _total suffix.
func sqlstatsStorm(d data) {
	l := maps.Clone(pod("checkout", 0, "9090"))
	l["db_name"] = "orders"
	d.gauge("go_sql_stats_connections_max_open", l, poolMax)
	d.gauge("go_sql_stats_connections_open", l, poolMax)
	d.gauge("go_sql_stats_connections_in_use", l, poolInUse)
	d.gauge("go_sql_stats_connections_idle", l, phased{16, 11, 1, 16})
	d.counter("go_sql_stats_connections_waited_for", l, poolWaits)
	// Five goroutines blocked on average: five seconds of waiting per second.
	d.counter("go_sql_stats_connections_blocked_seconds", l, poolWaits)
}

// istioTelemetryStorm: Istio's standard metrics, merged into each pod's
// scrape. The caller's sidecar retries: the destination reports four
// requests for each the source reports.
func istioTelemetryStorm(d data) {
	req := func(reporter, src, dst, code string) map[string]string {
		l := pod(src, 0, "15020")
		if reporter == "destination" {
			l = pod(dst, 0, "15020")
		}
		return with(l, "reporter", reporter, "source_workload", src, "source_workload_namespace", "shop",
			"destination_workload", dst, "destination_workload_namespace", "shop", "destination_service_name", dst,
			"destination_service", dst+".shop.svc.cluster.local", "response_code", code, "response_flags", "-",
			"request_protocol", "grpc", "connection_security_policy", "mutual_tls")
	}
	d.counter("istio_requests_total", req("source", "checkout", "payments", "200"), phased{10, 10, 8, 10})
	d.counter("istio_requests_total", req("source", "checkout", "payments", "503"), edge5xx)
	d.counter("istio_requests_total", req("destination", "checkout", "payments", "200"), phased{10, 10, 8, 10})
	d.counter("istio_requests_total", req("destination", "checkout", "payments", "503"), phased{0, 10, 30, 0})
	d.counter("istio_requests_total", req("destination", "checkout", "payments", "429"), throttled)
	// The edge: frontend's requests to checkout, as checkout's sidecar saw them.
	d.counter("istio_requests_total", req("destination", "frontend", "checkout", "200"), edgeOK)
	d.counter("istio_requests_total", req("destination", "frontend", "checkout", "500"), edge5xx)
	d.histogram("istio_request_duration_milliseconds", req("source", "checkout", "payments", "200"), msLes, phased{10, 10, 10, 10}, phased{50, 800, 1500, 50}, slowLat)
}

// otelHTTPCollectorStorm: OpenTelemetry HTTP semantic-convention metrics
// through a Collector scraped without honor_labels; the client names the
// dependency by its cluster DNS name (server_address).
func otelHTTPCollectorStorm(d data) {
	scrape := map[string]string{
		"job": "otel-collector", "instance": "otel-collector.observability:8889",
		"exported_job": "checkout", "exported_instance": "checkout-6c9f8d7b4-a2x7q",
		"otel_scope_name": "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp",
	}
	cl := func(code string) map[string]string {
		return with(scrape, "http_request_method", "POST", "server_address", "payments.shop.svc.cluster.local",
			"server_port", "8080", "url_scheme", "http", "network_protocol_version", "1.1", "http_response_status_code", code)
	}
	d.histogram("http_client_request_duration_seconds", cl("200"), les, phased{10, 10, 8, 10}, phased{0.05, 0.8, 1.5, 0.05}, slowLat)
	d.histogram("http_client_request_duration_seconds", cl("503"), les, phased{0, 10, 30, 0}, phased{0.05, 0.8, 1.5, 0.05}, slowLat)
	d.histogram("http_client_request_duration_seconds", cl("429"), les, throttled, phased{0.05, 0.8, 1.5, 0.05}, slowLat)
	srv := func(code string) map[string]string {
		return with(scrape, "http_request_method", "POST", "http_route", "/checkout", "url_scheme", "http",
			"network_protocol_version", "1.1", "http_response_status_code", code)
	}
	fast := phased{0.02, 0.02, 0.02, 0.02}
	d.histogram("http_server_request_duration_seconds", srv("200"), les, edgeOK, fast, fastLat)
	d.histogram("http_server_request_duration_seconds", srv("500"), les, edge5xx, fast, fastLat)
}
