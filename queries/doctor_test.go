package queries

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stormctl/stormctl/internal/config"
)

// setup is one way real systems are scraped, as a Prometheus stores it,
// with the storm in that system's own names and labels.
type setup struct {
	data     func(d data)
	service  string
	dep      string
	pack     string            // the pack the doctor must find fitting
	labels   map[string]string // the overrides it must suggest
	depValue string            // the stored form of dep it must find
	budget   int               // MaxRequests; 0 for the default
	// want is every query the pack answers, with the one value it must
	// read during the storm once configured as the doctor says.
	want map[string]float64
}

// runDoctor backfills s into a real Prometheus, runs the doctor at the
// storm's height and checks what it found, the snippet it suggests, and
// that every answer with that configuration is right and none reads "ok".
func runDoctor(t *testing.T, s setup) *Diagnosis {
	t.Helper()
	f, dg := startDoctor(t, s)
	if dg.Requests > DefaultDoctorRequests {
		t.Errorf("the doctor sent %d probing requests, more than its budget %d", dg.Requests, DefaultDoctorRequests)
	}
	var found *PackFinding
	for i, p := range dg.Packs {
		if p.Pack == s.pack {
			found = &dg.Packs[i]
		} else if p.Fits() {
			t.Errorf("pack %s fits too (labels %v): %+v", p.Pack, p.Labels, p)
		}
	}
	if found == nil || !found.Fits() {
		t.Fatalf("pack %s does not fit: %+v", s.pack, dg.Packs)
	}
	if !maps.Equal(found.Labels, s.labels) {
		t.Errorf("suggested labels %v, want %v", found.Labels, s.labels)
	}
	if found.DependencyValue != s.depValue {
		t.Errorf("dependency found as %q, want %q", found.DependencyValue, s.depValue)
	}
	if !strings.Contains(dg.Config, `"`+s.service+`": {pack: `) {
		t.Errorf("the snippet does not name the service's pack:\n%s", dg.Config)
	}
	checkAnswers(t, dg, s)
	noPackReadsOK(t, f, s, found)
	// The snippet, read back as a config file, gives the same labels.
	cfg := parseSnippet(t, dg.Config)
	if got := cfg.LabelsFor(s.pack, s.service); !maps.Equal(got, s.labels) {
		t.Errorf("the snippet configures %v, want %v:\n%s", got, s.labels, dg.Config)
	}
	// And with that config, as query run and the dashboard render them,
	// the pack's queries read the storm.
	pack := cfg.Services[s.service].Pack
	if pack != s.pack {
		t.Fatalf("the snippet picks pack %q for %s, want %s", pack, s.service, s.pack)
	}
	for id, w := range s.want {
		r, err := f.cat.Render(id, pack, Params{Service: s.service, Dependency: s.dep, Labels: cfg.LabelsFor(pack, s.service)})
		if err != nil {
			t.Fatal(err)
		}
		got := f.eval(r.Expr, during)
		if len(got) != 1 {
			t.Errorf("configured %s: %d series, want 1: %v", id, len(got), got)
		}
		for k, v := range got {
			if !near(v, w) || r.Threshold.Evaluate(v) == OK {
				t.Errorf("configured %s: %s = %g (%s), want %g, not ok", id, k, v, r.Threshold.Evaluate(v), w)
			}
		}
	}
	return dg
}

// doctorOn backfills s into a real Prometheus and runs the doctor at the
// storm's height.
func doctorOn(t *testing.T, s setup) *Diagnosis {
	t.Helper()
	_, dg := startDoctor(t, s)
	return dg
}

func startDoctor(t *testing.T, s setup) (*fixture, *Diagnosis) {
	t.Helper()
	d := newData()
	s.data(d)
	f := startFixture(t, d)
	c, err := NewClient(config.Prometheus{URL: f.url}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	doc := &Doctor{Catalog: f.cat, Client: c, Runner: NewRunner(c, RunnerOptions{Concurrency: 2})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dg, err := doc.Run(ctx, DoctorOptions{Service: s.service, Dependency: s.dep, Time: t0.Add(during), Context: "prod", MaxRequests: s.budget})
	if err != nil {
		t.Fatal(err)
	}
	return f, dg
}

func checkAnswers(t *testing.T, dg *Diagnosis, s setup) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range dg.Answers {
		if a.Pack != s.pack {
			continue
		}
		seen[a.Query] = true
		w, ok := s.want[a.Query]
		switch {
		case a.Error != "":
			t.Errorf("%s: %s", a.Query, a.Error)
		case !ok:
			t.Errorf("%s answers %v (no data: %q); the test expects no answer", a.Query, a.Values, a.NoData)
		case len(a.Values) != 1:
			t.Errorf("%s: %d series, want 1: %v (no data: %s)", a.Query, len(a.Values), a.Values, a.NoData)
		case !near(a.Values[0].Value, w):
			t.Errorf("%s = %g, want %g", a.Query, a.Values[0].Value, w)
		}
		for _, v := range a.Values {
			if v.Status == OK {
				t.Errorf("%s reads ok during the storm: %v = %g", a.Query, v.Labels, v.Value)
			}
		}
	}
	for q := range s.want {
		if !seen[q] {
			t.Errorf("%s: no answer", q)
		}
	}
}

// noPackReadsOK renders every query with every pack, unconfigured and with
// only the service and dependency labels the doctor found (the half-way
// setup of a config that renames those two and nothing else): the wrong
// pack or the wrong tag names may read "no data", never "ok", in the storm.
func noPackReadsOK(t *testing.T, f *fixture, s setup, found *PackFinding) {
	t.Helper()
	partial := map[string]string{ParamService: found.ServiceLabel}
	if found.DependencyLabel != "" {
		partial[ParamDependency] = found.DependencyLabel
	}
	for _, q := range f.cat.Queries() {
		for _, pack := range q.Answers() {
			for _, labels := range []map[string]string{nil, partial} {
				r, err := f.cat.Render(q.ID, pack, Params{Service: s.service, Dependency: found.DependencyValue, Labels: labels})
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range f.eval(r.Expr, during) {
					if r.Threshold.Evaluate(v) == OK {
						t.Errorf("%s/%s with labels %v reads ok during the storm: %s = %g", q.ID, pack, labels, k, v)
					}
				}
			}
		}
	}
}

func parseSnippet(t *testing.T, snippet string) *config.Context {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("the snippet is not a config file: %v\n%s", err, snippet)
	}
	return f.Contexts["prod"]
}

func TestDoctorEnvoyPerServiceJob(t *testing.T) {
	t.Parallel()
	runDoctor(t, setup{data: envoyStorm, service: "checkout", dep: "payments", pack: "envoy", depValue: "payments",
		want: map[string]float64{
			"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "throttle_retries": 2,
			"breaker_open_fraction": 0.5, "dependency_p99": 2.485, "edge_error_rate": 0.2,
		}})
}

// The doctor stops at its budget and says which packs it did not examine.
func TestDoctorBudget(t *testing.T) {
	t.Parallel()
	dg := doctorOn(t, setup{data: envoyStorm, service: "checkout", dep: "payments", budget: 3})
	if dg.Requests != 3 {
		t.Errorf("%d requests, want the budget of 3", dg.Requests)
	}
	var problems []string
	for _, p := range dg.Packs {
		problems = append(problems, p.Pack+": "+p.Problem)
	}
	// presence, envoy's label names, its service label values: then no
	// request is left for its dependency values.
	if len(dg.Packs) != 2 || dg.Packs[0].Pack != "envoy" || !strings.Contains(dg.Packs[0].Problem, "budget of 3 requests is spent") || dg.Config != "" {
		t.Errorf("packs %v, config %q", problems, dg.Config)
	}
	if len(dg.Unexamined) != 1 || dg.Unexamined[0] != "envoy" || !strings.Contains(strings.Join(dg.Notes, "\n"), "before envoy was examined: run again with --max-requests 9") {
		t.Errorf("unexamined %v, notes %q", dg.Unexamined, dg.Notes)
	}
}

func TestDoctorIstioSidecarEnvoy(t *testing.T) {
	t.Parallel()
	dg := runDoctor(t, setup{data: istioEnvoyStorm, service: "checkout", dep: "payments", pack: "envoy-istio",
		depValue: "outbound|50051||payments.shop.svc.cluster.local",
		want: map[string]float64{
			"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "throttle_retries": 2,
			"breaker_open_fraction": 0.5, "dependency_p99": 2.485, "edge_error_rate": 0.2,
		}})
	for _, p := range dg.Packs {
		if p.Pack == "envoy" && !strings.Contains(p.Problem, "envoy_cluster_name") {
			t.Errorf("the envoy pack must say which label is missing: %+v", p)
		}
	}
}

func TestDoctorResilience4jAnnotationScrape(t *testing.T) {
	t.Parallel()
	s := setup{data: resilience4jPodsStorm, service: "checkout", dep: "payments", pack: "resilience4j",
		labels: map[string]string{"service": "app"}, depValue: "payments",
		want: map[string]float64{
			"amplification": 2, "retry_ratio": 0.5, "retries_per_request": 1, "breaker_open_fraction": 0.5, "pool_saturation": 0.95,
		}}
	runDoctor(t, s)
	// With no service named, the doctor sees that job holds only the shared
	// kubernetes-pods scrape and suggests app for every service of the pack.
	s.service, s.dep, s.depValue = "", "", ""
	dg := doctorOn(t, s)
	if len(dg.Packs) != 1 || !maps.Equal(dg.Packs[0].Labels, map[string]string{"service": "app"}) {
		t.Errorf("without --service: %+v", dg.Packs)
	}
	if strings.Contains(dg.Config, "\n    services:") || !strings.Contains(dg.Config, "{pack: resilience4j}") || !strings.Contains(dg.Config, `resilience4j:
        labels: {service: "app"}`) {
		t.Errorf("without --service the snippet sets the pack's labels and says how to pick it:\n%s", dg.Config)
	}
}

func TestDoctorIstioTelemetry(t *testing.T) {
	t.Parallel()
	runDoctor(t, setup{data: istioTelemetryStorm, service: "checkout", dep: "payments", pack: "istio",
		depValue: "payments.shop.svc.cluster.local",
		want: map[string]float64{
			"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "throttle_retries": 2,
			"dependency_p99": 2.485, "edge_error_rate": 0.2,
		}})
}

func TestDoctorGRPCBehindOTelCollector(t *testing.T) {
	t.Parallel()
	s := setup{data: grpcCollectorStorm, service: "checkout", dep: "payments", pack: "grpc",
		labels: map[string]string{"service": "exported_job"}, depValue: "dns:///payments:50051",
		want: map[string]float64{
			"amplification": 4, "retry_ratio": 0.75, "retries_per_request": 3, "throttle_retries": 2,
			"dependency_p99": 2.485, "edge_error_rate": 0.2,
		}}
	runDoctor(t, s)
	// With no service named, job="otel-collector" is seen as the collector's.
	s.service, s.dep = "", ""
	if dg := doctorOn(t, s); len(dg.Packs) != 1 || !maps.Equal(dg.Packs[0].Labels, s.labels) {
		t.Errorf("without --service: %+v", dg.Packs)
	}
}

func TestDoctorOTelHTTPBehindCollector(t *testing.T) {
	t.Parallel()
	runDoctor(t, setup{data: otelHTTPCollectorStorm, service: "checkout", dep: "payments", pack: "otel",
		labels: map[string]string{"service": "exported_job"}, depValue: "payments.shop.svc.cluster.local",
		want: map[string]float64{
			"amplification": 4, "throttle_retries": 2, "dependency_p99": 2.485, "edge_error_rate": 0.2,
		}})
}

func TestDoctorHikariCPTracker(t *testing.T) {
	t.Parallel()
	runDoctor(t, setup{data: hikariTrackerStorm, service: "ledger", pack: "hikaricp-tracker",
		want: map[string]float64{"pool_saturation": 0.95, "demanded_concurrency": 1.2}})
}

func TestDoctorSQLStats(t *testing.T) {
	t.Parallel()
	runDoctor(t, setup{data: sqlstatsStorm, service: "checkout", pack: "sqlstats",
		labels: map[string]string{"service": "app"},
		want:   map[string]float64{"pool_saturation": 0.95, "demanded_concurrency": 1.2}})
}

// FuzzSnippet: whatever names the server and the config hold, the snippet
// is a config file that reads back the same labels and pack.
func FuzzSnippet(f *testing.F) {
	f.Add("checkout", "exported_job", "prod")
	f.Add("a|b:c/d", "app\n  evil: true", "x\": {}\n")
	f.Add("x", "\x1b[2J", "ctx\x00")
	f.Fuzz(func(t *testing.T, service, label, ctx string) {
		if !utf8.ValidString(label) || !utf8.ValidString(ctx) || ValidateValue(ParamService, service) != nil || service == "" {
			return
		}
		dg := &Diagnosis{Service: service, Packs: []PackFinding{{Pack: "grpc", DependencyLabel: "grpc_target", Labels: map[string]string{ParamService: label}}}}
		s := snippet(dg, ctx)
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatalf("the snippet does not load: %v\n%s", err, s)
		}
		name := ctx
		if name == "" {
			name = "<context>"
		}
		c := cfg.Contexts[name]
		if c == nil || c.Services[service].Pack != "grpc" || c.LabelsFor("grpc", service)[ParamService] != label {
			t.Fatalf("the snippet reads back differently:\n%s", s)
		}
	})
}
