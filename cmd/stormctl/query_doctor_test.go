package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/config"
	"github.com/stormctl/stormctl/internal/iostreams"
	"github.com/stormctl/stormctl/internal/output"
	"github.com/stormctl/stormctl/internal/testenv"
	"github.com/stormctl/stormctl/queries"
)

// istioSidecarNow is 30 minutes, ending now, of an Istio sidecar's Envoy
// stats as the kubernetes-pods job stores them: Istio's tag names and
// cluster names, 40 attempts/s for 10 requests/s, and 2 retries/s caused
// by 429s.
func istioSidecarNow(end time.Time) string {
	const n = 30 * 4
	start := end.Add(-fixtureStep * (n - 1))
	om := testenv.NewOpenMetrics()
	pod := map[string]string{"job": "kubernetes-pods", "instance": "10.1.3.4:15020", "namespace": "shop",
		"pod": "checkout-6c9f8d7b4-a2x7q", "app": "checkout", "cluster_name": "outbound|50051||payments.shop.svc.cluster.local"}
	rate := func(v float64) []float64 {
		r := make([]float64, n)
		for i := range r {
			r[i] = v
		}
		return testenv.Cumulate(r, fixtureStep)
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range pod {
			m[a] = b
		}
		return m
	}
	// A gauge-typed family: one OpenMetrics family cannot hold both
	// envoy_cluster_upstream_rq_total and envoy_cluster_upstream_rq{code}.
	om.Gauge("envoy_cluster_upstream_rq_total", pod, start, fixtureStep, rate(40))
	om.Counter("envoy_cluster_upstream_rq_retry", pod, start, fixtureStep, rate(30))
	om.Counter("envoy_cluster_upstream_rq", with("response_code", "200"), start, fixtureStep, rate(8))
	om.Counter("envoy_cluster_upstream_rq", with("response_code", "503"), start, fixtureStep, rate(32))
	om.Counter("envoy_cluster_retry_upstream_rq", with("response_code", "503"), start, fixtureStep, rate(28))
	om.Counter("envoy_cluster_retry_upstream_rq", with("response_code", "429"), start, fixtureStep, rate(2))
	return om.String()
}

// TestQueryDoctorConfiguresIstioSidecar runs the doctor against a real
// Prometheus, pastes its snippet into the config file, and checks that
// query run then answers from the sidecar's stats where it had no data.
func TestQueryDoctorConfiguresIstioSidecar(t *testing.T) {
	end := fixtureEnd()
	p := testenv.StartPrometheus(t, testenv.PromOptions{OpenMetrics: istioSidecarNow(end)})
	// Every command looks at the fixture's last sample, however long a
	// loaded machine takes to get there.
	at := end.Format(time.RFC3339)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeCfg := func(s string) {
		if err := os.WriteFile(cfgPath, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg("current-context: test\ncontexts:\n  test:\n    actor: alice\n")
	cli := func(args ...string) (string, string, int) {
		t.Setenv("STORMCTL_CONFIG", cfgPath)
		t.Setenv("STORMCTL_PROMETHEUS_URL", p.URL)
		io, _, out, errOut := iostreams.Test()
		code := Main(args, io)
		return out.String(), errOut.String(), code
	}
	run := []string{"query", "run", "throttle_retries", "--service", "checkout", "--dependency", "payments", "--time", at, "-o", "json"}
	if out, errOut, code := cli(run...); code != 0 || !strings.Contains(out, `"no_data"`) {
		t.Fatalf("before the doctor: exit %d, want no data\n%s\n%s", code, out, errOut)
	}

	out, errOut, code := cli("query", "doctor", "--service", "checkout", "--dependency", "payments", "--time", at, "-o", "json")
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errOut)
	}
	var dg struct {
		Requests int `json:"requests"`
		Packs    []struct {
			Pack, Problem   string
			DependencyValue string `json:"dependency_value"`
		} `json:"packs"`
		Config string `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &dg); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fits := map[string]string{}
	for _, pk := range dg.Packs {
		if pk.Problem == "" {
			fits[pk.Pack] = pk.DependencyValue
		}
	}
	if len(fits) != 1 || fits["envoy-istio"] != "outbound|50051||payments.shop.svc.cluster.local" {
		t.Errorf("fitting packs %v, want envoy-istio with Istio's cluster name\n%s", fits, out)
	}
	if !strings.Contains(errOut, "the config answers checkout with pack stormctl, which does not fit here: paste the snippet") {
		t.Errorf("the doctor must say the current config does not fit: %s", errOut)
	}
	if dg.Requests < 2 || dg.Requests > 16 || !strings.Contains(errOut, "probing requests to "+p.URL) {
		t.Errorf("requests %d, stderr %q", dg.Requests, errOut)
	}
	if !strings.Contains(dg.Config, `"checkout": {pack: envoy-istio}`) {
		t.Fatalf("snippet:\n%s", dg.Config)
	}

	table, _, _ := cli("query", "doctor", "--service", "checkout", "--dependency", "payments", "--time", at)
	for _, want := range []string{"envoy-istio\tyes\tapp=checkout\tcluster_name=outbound|50051||payments.shop.svc.cluster.local (envoy-cluster)",
		"throttle_retries\tenvoy-istio\t", "# add to the config file (" + cfgPath + "):", `"checkout": {pack: envoy-istio}`} {
		if !strings.Contains(table, want) {
			t.Errorf("table output lacks %q:\n%s", want, table)
		}
	}
	t.Log(table)
	writeCfg("current-context: test\n" + strings.Replace(dg.Config, "\"test\":", "\"test\":\n    actor: alice", 1))
	out, errOut, code = cli(run...)
	// The rate is computed from samples: 2 may print as 1.9999999999999998.
	if code != 0 || !strings.Contains(out, `"status": "crit"`) || !regexp.MustCompile(`"value": (2|1\.9999+[0-9]*|2\.0000+[0-9]*)[,\n]`).MatchString(out) {
		t.Fatalf("after the doctor's config: exit %d, want 2 retries/s, crit\n%s\n%s", code, out, errOut)
	}
	if _, errOut, _ := cli("query", "doctor", "--service", "checkout", "--time", at); !strings.Contains(errOut, "the config already answers checkout with pack envoy-istio") {
		t.Errorf("after pasting the snippet: %s", errOut)
	}
	out, _, code = cli("query", "doctor", "--service", "nosuch", "--time", at)
	if code != 4 || !strings.Contains(out, `no label of`) {
		t.Errorf("an unknown service: exit %d, want 4 and each pack's problem\n%s", code, out)
	}
}

// An unreachable Prometheus is named, with what the doctor did not do.
func TestQueryDoctorUnreachable(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	t.Setenv("STORMCTL_PROMETHEUS_URL", "http://"+addr)
	code, out, errOut := run(t, "query", "doctor", "--service", "checkout")
	if code != 1 || !strings.Contains(errOut, addr) || !strings.Contains(errOut, "nothing was probed") {
		t.Errorf("exit %d, want 1 naming %s and what was not done\nstdout: %s\nstderr: %s", code, addr, out, errOut)
	}
}

// Text from the server (label values, problems that quote label names) is
// printed with control characters escaped, in the table and the snippet.
func TestDoctorTableEscapesServerText(t *testing.T) {
	io, _, out, _ := iostreams.Test()
	f := newFactory(io, func(string) string { return "" })
	f.flags.configPath = "/tmp/cfg\x1b[2J.yaml"
	dg := &queries.Diagnosis{
		Packs: []queries.PackFinding{
			{Pack: "grpc", ServiceLabel: "exported_job", ServiceValue: "check\x1b]0;pwned\aout",
				DependencyLabel: "grpc_target", DependencyValue: "dns:///pay\rments:50051", DependencyForm: "grpc-target"},
			{Pack: "envoy", Problem: "no label \x1b[31mred"},
		},
		Answers: []queries.Answer{{Query: "amplification", Pack: "grpc", NoData: "metric \"x\x07\" not found",
			Values: nil}, {Query: "retry_ratio", Pack: "grpc", Values: []queries.AnswerValue{{Labels: map[string]string{"exported_job": "a\x1bb"}, Value: 4, Status: queries.Crit}}}},
		Config: "contexts:\n  \"x\x1b\":\n",
	}
	for _, tty := range []bool{false, true} {
		out.Reset()
		if err := printDiagnosis(f, dg, tty); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\x1b\a\r\x07") {
			t.Errorf("raw control characters reach the terminal (tty %v): %q", tty, out.String())
		}
		if !strings.Contains(out.String(), `check\u001b]0;pwned\u0007out`) {
			t.Errorf("escaped value missing: %q", out.String())
		}
	}
	for _, ft := range []output.Format{output.JSON, output.YAML} {
		out.Reset()
		if err := output.Structured(out, ft, dg); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\x1b\a\r") {
			t.Errorf("-o %s prints raw control characters: %q", ft, out.String())
		}
	}
}

// The context's pack labels reach every rendering, the exported rules too.
func TestQueryExportUsesPackLabels(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("current-context: p\ncontexts:\n  p:\n    packs:\n      grpc: {labels: {service: exported_job}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORMCTL_CONFIG", cfg)
	io, _, out, errOut := iostreams.Test()
	if code := Main([]string{"query", "export", "--pack", "grpc"}, io); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "sum by (exported_job, grpc_target)") || strings.Contains(out.String(), "by (job,") {
		t.Errorf("rules do not use the context's labels:\n%s", out.String())
	}
}

func TestCompareConfig(t *testing.T) {
	dg := &queries.Diagnosis{Config: "x", Packs: []queries.PackFinding{
		{Pack: "envoy", Problem: "no envoy_cluster_name"},
		{Pack: "grpc", Labels: map[string]string{"service": "exported_job"}},
	}}
	for _, c := range []struct {
		cfg  config.Context
		want string
	}{
		{config.Context{}, "the config answers checkout with pack stormctl, which does not fit here: paste the snippet"},
		{config.Context{Services: map[string]config.Service{"checkout": {Pack: "envoy"}}}, "with pack envoy, which does not fit here"},
		{config.Context{Services: map[string]config.Service{"checkout": {Pack: "grpc"}}}, "with pack grpc but not label service=exported_job"},
		{config.Context{Services: map[string]config.Service{"checkout": {Pack: "grpc"}},
			Packs: map[string]config.PackSettings{"grpc": {Labels: map[string]string{"service": "exported_job"}}}}, "already answers checkout with pack grpc"},
	} {
		if got := compareConfig(dg, c.cfg, "checkout"); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.cfg, got, c.want)
		}
	}
}
