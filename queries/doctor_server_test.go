package queries

import (
	"slices"
	"strings"
	"testing"
)

// serverFleet: four services scraped directly (job and instance per
// service), two of which only serve. orders calls payments over HTTP and
// checkout calls inventory over gRPC, each with 40 attempts/s for its 10
// requests/s in the storm; payments and inventory fail 30 of the 40 (0.75)
// and export only their server metrics. checkout serves HTTP (otel) and
// calls gRPC: the otel pack sees it only server-side, the grpc pack its calls.
// Names and labels: otelhttp's semconv v1.26 HTTP metrics and grpc-go's
// OpenTelemetry plugin, as in otelHTTPCollectorStorm and grpcCollectorStorm.
func serverFleet(d data) {
	scrape := func(job, addr string) map[string]string { return map[string]string{"job": job, "instance": addr} }
	fast := phased{0.02, 0.02, 0.02, 0.02}
	slow := phased{0.05, 0.8, 1.5, 0.05}
	failing := phased{0, 10, 30, 0} // of the attempts, 10/s succeed throughout
	ok := phased{10, 10, 10, 10}
	httpSrv := func(l map[string]string, code string) map[string]string {
		return with(l, "http_request_method", "POST", "http_route", "/", "url_scheme", "http",
			"network_protocol_version", "1.1", "http_response_status_code", code)
	}
	// orders → payments over HTTP.
	orders := scrape("orders", "10.1.6.2:9464")
	d.histogram("http_server_request_duration_seconds", httpSrv(orders, "200"), les, ok, fast, fastLat)
	cl := func(code string) map[string]string {
		return with(orders, "http_request_method", "POST", "server_address", "payments", "server_port", "8080",
			"url_scheme", "http", "network_protocol_version", "1.1", "http_response_status_code", code)
	}
	d.histogram("http_client_request_duration_seconds", cl("200"), les, ok, slow, slowLat)
	d.histogram("http_client_request_duration_seconds", cl("503"), les, failing, slow, slowLat)
	payments := scrape("payments", "10.1.7.3:9464")
	d.histogram("http_server_request_duration_seconds", httpSrv(payments, "200"), les, ok, fast, fastLat)
	d.histogram("http_server_request_duration_seconds", httpSrv(payments, "503"), les, failing, fast, fastLat)

	// checkout serves HTTP and calls inventory over gRPC.
	checkout := scrape("checkout", "10.1.2.5:9464")
	d.histogram("http_server_request_duration_seconds", httpSrv(checkout, "200"), les, edgeOK, fast, fastLat)
	d.histogram("http_server_request_duration_seconds", httpSrv(checkout, "500"), les, edge5xx, fast, fastLat)
	tgt := func(kv ...string) map[string]string {
		return with(with(checkout, "grpc_target", "dns:///inventory:50051", "grpc_method", "shop.Inventory/Reserve"), kv...)
	}
	d.counter("grpc_client_attempt_started_total", tgt(), attempts)
	d.histogram("grpc_client_call_duration_seconds", tgt("grpc_status", "OK"), les, edgeOK, fast, fastLat)
	d.histogram("grpc_client_call_duration_seconds", tgt("grpc_status", "UNAVAILABLE"), les, edge5xx, fast, fastLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("grpc_status", "OK"), les, ok, slow, slowLat)
	d.histogram("grpc_client_attempt_duration_seconds", tgt("grpc_status", "UNAVAILABLE"), les, failing, slow, slowLat)
	inventory := scrape("inventory", "10.1.8.4:9464")
	srv := func(code string) map[string]string {
		return with(inventory, "grpc_method", "shop.Inventory/Reserve", "grpc_status", code)
	}
	d.histogram("grpc_server_call_duration_seconds", srv("OK"), les, ok, fast, fastLat)
	d.histogram("grpc_server_call_duration_seconds", srv("UNAVAILABLE"), les, failing, fast, fastLat)
}

// serverOnly checks a service found only server-side: the pack fits there,
// its own metrics answer edge_error_rate, and the queries that need the
// caller's side (callerQueries) read what its callers see (callers: the
// value each must read in the storm; only a 0 may read ok).
func serverOnly(t *testing.T, service, pack string, callerQueries []string, callers map[string]float64) {
	t.Helper()
	dg := doctorOn(t, setup{data: serverFleet, service: service})
	var found *PackFinding
	for i, p := range dg.Packs {
		switch {
		case p.Pack == pack:
			found = &dg.Packs[i]
		case p.Fits():
			t.Errorf("pack %s fits too: %+v", p.Pack, p)
		}
	}
	if found == nil || !found.Fits() || found.Side != SideServer || found.ServiceLabel != "job" || len(found.Labels) != 0 {
		t.Fatalf("want %s to fit server-side on job, with no overrides: %+v", pack, dg.Packs)
	}
	if !slices.Equal(found.ServerQueries, []string{"edge_error_rate"}) || !slices.Equal(found.CallerQueries, callerQueries) {
		t.Errorf("server queries %v, caller queries %v", found.ServerQueries, found.CallerQueries)
	}
	if !strings.Contains(dg.Config, `"`+service+`": {pack: `+pack+`}`) {
		t.Errorf("the snippet does not pick %s for %s:\n%s", pack, service, dg.Config)
	}
	if !slices.ContainsFunc(dg.Notes, func(n string) bool {
		return strings.Contains(n, "only server-side") && strings.Contains(n, "need the caller's side")
	}) {
		t.Errorf("no note says the service is seen only server-side: %q", dg.Notes)
	}
	seen := map[string]bool{}
	for _, a := range dg.Answers {
		if a.Pack != pack {
			continue
		}
		seen[a.Query] = true
		want, ok := callers[a.Query]
		if a.Query == "edge_error_rate" {
			want, ok = 0.75, true
			if a.From != "" || len(a.Values) != 1 || a.Values[0].Labels["job"] != service {
				t.Errorf("edge_error_rate must be the service's own: %+v", a)
			}
		} else if a.From != "callers" {
			t.Errorf("%s must be read from the callers' side: %+v", a.Query, a)
		}
		switch {
		case a.Error != "":
			t.Errorf("%s: %s", a.Query, a.Error)
		case !ok && len(a.Values) > 0:
			t.Errorf("%s answers %v; the test expects none", a.Query, a.Values)
		case !ok && !strings.Contains(a.NoData, "needs the caller's side"):
			t.Errorf("%s: no data must say it needs the caller's side: %q", a.Query, a.NoData)
		case ok && (len(a.Values) != 1 || !near(a.Values[0].Value, want) || (want != 0) == (a.Values[0].Status == OK)):
			t.Errorf("%s = %+v, want one series at %g, not ok (no data: %q)", a.Query, a.Values, want, a.NoData)
		}
	}
	for _, q := range append(found.ServerQueries, found.CallerQueries...) {
		if !seen[q] {
			t.Errorf("%s: no answer", q)
		}
	}
	if dg.Requests > DefaultDoctorRequests {
		t.Errorf("%d probing requests, over the budget", dg.Requests)
	}
}

// A gRPC server: its own metrics give its error rate; its callers' give
// amplification, retries and latency towards it.
func TestDoctorGRPCServerOnly(t *testing.T) {
	t.Parallel()
	serverOnly(t, "inventory", "grpc", []string{"amplification", "retry_ratio", "retries_per_request", "throttle_retries", "dependency_p99"},
		map[string]float64{"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "throttle_retries": 0, "dependency_p99": 2.485})
}

// An HTTP server: its own metrics give its error rate; its caller's give
// amplification (client requests ÷ the caller's own requests) and latency.
func TestDoctorHTTPServerOnly(t *testing.T) {
	t.Parallel()
	serverOnly(t, "payments", "otel", []string{"amplification", "throttle_retries", "dependency_p99"},
		map[string]float64{"amplification": 4, "throttle_retries": 0, "dependency_p99": 2.485})
}

// checkout is found server-side by the otel pack first; the grpc pack,
// later in the catalogue, sees its calls, and the snippet picks it.
func TestDoctorLaterPackFitsBetter(t *testing.T) {
	t.Parallel()
	dg := doctorOn(t, setup{data: serverFleet, service: "checkout", dep: "inventory"})
	sides := map[string]string{}
	for _, p := range dg.Packs {
		if p.Fits() {
			sides[p.Pack] = p.Side
		}
	}
	if sides["otel"] != SideServer || sides["grpc"] != SideClient || len(sides) != 2 {
		t.Fatalf("fitting packs and sides %v, want otel server-side and grpc client-side: %+v", sides, dg.Packs)
	}
	if !strings.Contains(dg.Config, `"checkout": {pack: grpc}`) {
		t.Errorf("the snippet must pick the pack that sees checkout's calls:\n%s", dg.Config)
	}
	for _, a := range dg.Answers {
		if a.Pack == "grpc" && a.Query == "amplification" && (len(a.Values) != 1 || !near(a.Values[0].Value, 4)) {
			t.Errorf("grpc amplification for checkout: %+v", a)
		}
	}

	// With too few requests for both, the doctor says which pack it did not
	// reach and how to continue.
	dg = doctorOn(t, setup{data: serverFleet, service: "checkout", dep: "inventory", budget: 5})
	if !slices.Equal(dg.Unexamined, []string{"grpc"}) || dg.Requests != 5 {
		t.Fatalf("unexamined %v after %d requests, want grpc after 5: %+v", dg.Unexamined, dg.Requests, dg.Packs)
	}
	if !slices.ContainsFunc(dg.Notes, func(n string) bool {
		return strings.Contains(n, "before grpc was examined") && strings.Contains(n, "--max-requests 11")
	}) {
		t.Errorf("the notes must name grpc and --max-requests: %q", dg.Notes)
	}
	if !strings.Contains(dg.Config, `"checkout": {pack: otel}`) {
		t.Errorf("the snippet still offers what was found:\n%s", dg.Config)
	}
}

// serverOnlySetups: ratings, a service that only serves (10 requests/s that
// succeed, 30 more in the storm that fail: 0.75), in each pack's own names
// and labels as stored, with no caller's metrics.
var serverOnlySetups = map[string]func(d data){
	"stormctl": func(d data) {
		l := map[string]string{"job": "ratings", "instance": "10.1.4.2:9090", "service": "ratings"}
		d.counter("stormctl_server_requests_total", with(l, "code", "200"), phased{10, 10, 10, 10})
		d.counter("stormctl_server_requests_total", with(l, "code", "503"), phased{0, 10, 30, 0})
	},
	"envoy": func(d data) {
		h := map[string]string{"job": "ratings", "instance": "10.1.4.2:9901", "envoy_http_conn_manager_prefix": "ingress"}
		d.counter("envoy_http_downstream_rq_total", h, attempts)
		d.counter("envoy_http_downstream_rq_xx", with(h, "envoy_response_code_class", "2"), phased{10, 10, 10, 10})
		d.counter("envoy_http_downstream_rq_xx", with(h, "envoy_response_code_class", "5"), phased{0, 10, 30, 0})
	},
	"envoy-istio": func(d data) {
		in := pod("ratings", 0, "15020")
		d.cumGauge("envoy_http_inbound_0_0_0_0_8080_downstream_rq_total", in, attempts)
		d.counter("envoy_http_inbound_0_0_0_0_8080_downstream_rq", with(in, "response_code_class", "2xx"), phased{10, 10, 10, 10})
		d.counter("envoy_http_inbound_0_0_0_0_8080_downstream_rq", with(in, "response_code_class", "5xx"), phased{0, 10, 30, 0})
	},
	"istio": func(d data) {
		req := func(code string) map[string]string {
			return with(pod("ratings", 0, "15020"), "reporter", "destination", "source_workload", "unknown",
				"destination_workload", "ratings", "destination_workload_namespace", "shop", "destination_service",
				"ratings.shop.svc.cluster.local", "response_code", code, "response_flags", "-", "request_protocol", "http")
		}
		d.counter("istio_requests_total", req("200"), phased{10, 10, 10, 10})
		d.counter("istio_requests_total", req("503"), phased{0, 10, 30, 0})
	},
	"otel-legacy": func(d data) {
		srv := func(code string) map[string]string {
			return map[string]string{"job": "ratings", "instance": "10.1.4.2:9464", "http_method": "GET", "http_scheme": "http",
				"net_host_name": "ratings", "net_host_port": "8080", "http_status_code": code}
		}
		d.histogram("http_server_duration_milliseconds", srv("200"), msLes, phased{10, 10, 10, 10}, phased{20, 20, 20, 20}, fastLat)
		d.histogram("http_server_duration_milliseconds", srv("503"), msLes, phased{0, 10, 30, 0}, phased{20, 20, 20, 20}, fastLat)
	},
	"spanmetrics": func(d data) {
		l := map[string]string{"job": "otel-collector", "instance": "otel-collector.observability:8889", "exported_job": "ratings",
			"service_name": "ratings", "span_name": "GET /ratings", "span_kind": "SPAN_KIND_SERVER"}
		d.counter("traces_span_metrics_calls_total", with(l, "status_code", "STATUS_CODE_UNSET"), phased{10, 10, 10, 10})
		d.counter("traces_span_metrics_calls_total", with(l, "status_code", "STATUS_CODE_ERROR"), phased{0, 10, 30, 0})
	},
	"tempo-spanmetrics": func(d data) {
		l := map[string]string{"service": "ratings", "span_name": "GET /ratings", "span_kind": "SPAN_KIND_SERVER"}
		d.counter("traces_spanmetrics_calls_total", with(l, "status_code", "STATUS_CODE_UNSET"), phased{10, 10, 10, 10})
		d.counter("traces_spanmetrics_calls_total", with(l, "status_code", "STATUS_CODE_ERROR"), phased{0, 10, 30, 0})
	},
}

// Every pack with server-side metrics finds a service that only serves,
// reads its error rate, and says the rest needs the caller's side.
func TestDoctorServerOnlyEveryPack(t *testing.T) {
	t.Parallel()
	for pack, data := range serverOnlySetups {
		t.Run(pack, func(t *testing.T) {
			t.Parallel()
			dg := doctorOn(t, setup{data: data, service: "ratings"})
			var found *PackFinding
			for i, p := range dg.Packs {
				switch {
				case p.Pack == pack:
					found = &dg.Packs[i]
				case p.Fits():
					t.Errorf("pack %s fits too: %+v", p.Pack, p)
				}
			}
			if found == nil || !found.Fits() || found.Side != SideServer || len(found.Labels) != 0 ||
				!slices.Contains(found.ServerQueries, "edge_error_rate") || !slices.Contains(found.CallerQueries, "dependency_p99") {
				t.Fatalf("want %s to fit server-side with no overrides: %+v", pack, dg.Packs)
			}
			if !strings.Contains(dg.Config, `"ratings": {pack: `+pack+`}`) {
				t.Errorf("snippet:\n%s", dg.Config)
			}
			for _, a := range dg.Answers {
				switch {
				case a.Query == "edge_error_rate":
					if len(a.Values) != 1 || !near(a.Values[0].Value, 0.75) || a.Values[0].Status != Crit {
						t.Errorf("edge_error_rate: %+v", a)
					}
				case slices.Contains(found.CallerQueries, a.Query):
					// Istio's destination reports are the service's own sidecar's:
					// they name the callers, and 429s read 0 here.
					if a.From != "callers" || len(a.Values) == 0 && !strings.Contains(a.NoData, "needs the caller's side") ||
						len(a.Values) > 0 && (pack != "istio" || a.Query != "throttle_retries" || a.Values[0].Value != 0) {
						t.Errorf("%s must say it needs the caller's side: %+v", a.Query, a)
					}
				}
			}
		})
	}
}
