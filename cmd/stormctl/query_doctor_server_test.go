package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/testenv"
)

// grpcServerNow is 30 minutes, ending at end, of a gRPC server (inventory)
// that only exports grpc-go's server metrics, and of its caller (checkout)
// with 40 attempts/s for 10 calls/s; inventory fails 30 of its 40 calls/s.
func grpcServerNow(end time.Time) string {
	const n = 30 * 4
	start := end.Add(-fixtureStep * (n - 1))
	om := testenv.NewOpenMetrics()
	flat := func(v float64) []float64 {
		r := make([]float64, n)
		for i := range r {
			r[i] = v
		}
		return testenv.Cumulate(r, fixtureStep)
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// Every call in the first bucket of grpc-go's histograms, at 20ms.
	hist := func(name string, labels map[string]string, rate float64) {
		cum := flat(rate)
		buckets, sums := make([][]float64, n), make([]float64, n)
		for i, c := range cum {
			buckets[i], sums[i] = []float64{c, c}, c*0.02
		}
		om.Histogram(name, labels, start, fixtureStep, []float64{0.025, math.Inf(1)}, buckets, sums)
	}
	inv := map[string]string{"job": "inventory", "instance": "10.1.8.4:9464", "grpc_method": "shop.Inventory/Reserve"}
	for code, rate := range map[string]float64{"OK": 10, "UNAVAILABLE": 30} {
		l := with(inv, "grpc_status", code)
		hist("grpc_server_call_duration_seconds", l, rate)
	}
	cl := map[string]string{"job": "checkout", "instance": "10.1.2.5:9464", "grpc_method": "shop.Inventory/Reserve",
		"grpc_target": "dns:///inventory:50051"}
	om.Counter("grpc_client_attempt_started_total", cl, start, fixtureStep, flat(40))
	hist("grpc_client_call_duration_seconds", with(cl, "grpc_status", "OK"), 10)
	return om.String()
}

// `query doctor --service inventory` on a server that only serves: the
// grpc pack fits server-side, the table shows its error rate and the
// callers' amplification, stderr says what needs the caller's side.
func TestQueryDoctorServerOnly(t *testing.T) {
	end := fixtureEnd()
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: grpcServerNow(end)})
	t.Setenv("STORMCTL_PROMETHEUS_URL", p.URL)
	code, out, errOut := run(t, "query", "doctor", "--service", "inventory", "--time", end.Format(time.RFC3339))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"grpc\tyes\tjob=inventory\t\t\tserver", "edge_error_rate\tgrpc\t", "\t0.75\tcrit",
		"amplification (callers)\tgrpc\t", "\t4\tcrit", `"inventory": {pack: grpc}`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "sees inventory only server-side (job=inventory): its own metrics answer edge_error_rate; amplification, retry_ratio") {
		t.Errorf("stderr: %s", errOut)
	}
}
