package queries

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/exit"
	"github.com/stormctl/stormctl/internal/yamlfile"
)

var builtinIDs = []string{
	"amplification", "retry_ratio", "retries_per_request", "throttle_retries", "pool_saturation",
	"demanded_concurrency", "breaker_open_fraction", "dependency_p99", "edge_error_rate", "replica_churn",
}

var builtinPacks = []string{"stormctl", "envoy", "envoy-istio", "istio", "resilience4j", "otel", "grpc", "hikaricp", "go_sql", "hikaricp-tracker", "sqlstats", "otel-legacy", "spanmetrics", "tempo-spanmetrics"}

func mustLoad(t testing.TB, dirs ...string) *Catalog {
	t.Helper()
	c, err := Load(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBuiltinCatalogue(t *testing.T) {
	c := mustLoad(t)
	var ids, packs []string
	for _, q := range c.Queries() {
		ids = append(ids, q.ID)
		if q.Title == "" || q.Meaning == "" || q.Action == "" || q.Unit == "" || len(q.Params) == 0 {
			t.Errorf("%s: title, meaning, action, unit and params are all required", q.ID)
		}
		if q.Threshold.Crit == nil {
			t.Errorf("%s: every built-in has a critical threshold (DOMAIN.md's usual alarm)", q.ID)
		}
		if !slices.Contains(q.Answers(), "stormctl") {
			t.Errorf("%s: the stormctl pack must answer every query", q.ID)
		}
	}
	for _, p := range c.Packs() {
		packs = append(packs, p.Name)
		if p.Title == "" || p.Description == "" {
			t.Errorf("pack %s needs a title and a description", p.Name)
		}
	}
	if !slices.Equal(ids, builtinIDs) {
		t.Errorf("query order = %v, want %v", ids, builtinIDs)
	}
	if !slices.Equal(packs, builtinPacks) {
		t.Errorf("pack order = %v, want %v", packs, builtinPacks)
	}
	// Every pack answers something; the pool packs answer exactly the pool queries.
	answered := map[string][]string{}
	for _, q := range c.Queries() {
		for _, p := range q.Answers() {
			answered[p] = append(answered[p], q.ID)
		}
	}
	for _, p := range builtinPacks {
		if len(answered[p]) == 0 {
			t.Errorf("pack %s answers nothing", p)
		}
	}
	for _, p := range []string{"hikaricp", "go_sql", "hikaricp-tracker", "sqlstats"} {
		if got := answered[p]; !slices.Equal(got, []string{"pool_saturation", "demanded_concurrency"}) {
			t.Errorf("%s answers %v", p, got)
		}
	}
}

// Every built-in renders, for every pack that claims it, with any mix of
// params and label overrides, into PromQL that parses and lists its metrics.
func TestRenderEveryBuiltin(t *testing.T) {
	c := mustLoad(t)
	variants := []Params{
		{},
		{Service: "checkout", Dependency: "outbound|8080||payments.shop.svc.cluster.local", Pool: "HikariPool-1", Window: 90_000_000_000},
		{Service: "checkout", Labels: map[string]string{"service": "app", "dependency": "upstream", "pool": "pool_name"}},
	}
	n := 0
	for _, q := range c.Queries() {
		for _, pack := range q.Answers() {
			for _, p := range variants {
				r, err := c.Render(q.ID, pack, p)
				if err != nil {
					t.Fatalf("%s/%s %+v: %v", q.ID, pack, p, err)
				}
				if _, err := promql.ParseExpr(r.Expr); err != nil {
					t.Errorf("%s/%s: %v\n%s", q.ID, pack, err, r.Expr)
				}
				if len(r.Metrics) == 0 || r.QueryID != q.ID || r.Pack != pack || r.Unit != q.Unit || r.Threshold.Direction == "" {
					t.Errorf("%s/%s: incomplete result %+v", q.ID, pack, r)
				}
				if p.Service != "" && q.declares(ParamService) && !strings.Contains(r.Expr, `="checkout"`) {
					t.Errorf("%s/%s: service filter missing:\n%s", q.ID, pack, r.Expr)
				}
				n++
			}
		}
	}
	if n < 3*40 {
		t.Errorf("only %d renders: packs answer too little", n)
	}
}

func TestRenderUsesPackAndOverrideLabels(t *testing.T) {
	c := mustLoad(t)
	r, err := c.Render("amplification", "envoy", Params{Service: "checkout", Dependency: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`job="checkout"`, `envoy_cluster_name="payments"`, "by (job, envoy_cluster_name)", "[1m]"} {
		if !strings.Contains(r.Expr, s) {
			t.Errorf("envoy amplification lacks %s:\n%s", s, r.Expr)
		}
	}
	r, err = c.Render("amplification", "envoy", Params{Service: "checkout", Window: 300_000_000_000, Labels: map[string]string{"service": "app"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Expr, `app="checkout"`) || !strings.Contains(r.Expr, "by (app, envoy_cluster_name)") || !strings.Contains(r.Expr, "[5m]") {
		t.Errorf("override not applied:\n%s", r.Expr)
	}
	// An explicit label in the template beats the pack's mapping.
	r, err = c.Render("edge_error_rate", "istio", Params{Service: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Expr, `destination_workload="payments"`) || strings.Contains(r.Expr, "source_workload") {
		t.Errorf("istio edge_error_rate must select the destination workload:\n%s", r.Expr)
	}
}

func TestRenderRefusals(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		name, id, pack string
		p              Params
		code           int
		contains       []string
	}{
		{"injection", "amplification", "", Params{Service: `x"} or vector(1) #`}, exit.Usage,
			[]string{`invalid service "x\"} or vector(1) #"`, `'"'`, AllowedChars}},
		{"newline", "retry_ratio", "envoy", Params{Dependency: "a\nb"}, exit.Usage, []string{"dependency", `'\n'`}},
		{"regex", "pool_saturation", "", Params{Pool: "a.*|b"}, exit.Usage, []string{"pool", `'*'`}},
		{"too long", "amplification", "", Params{Service: strings.Repeat("a", MaxValueLen+1)}, exit.Usage, []string{"longer than 256"}},
		{"window", "amplification", "", Params{Window: 500_000_000}, exit.Usage, []string{"window", "between 1s and 31d"}},
		{"label override", "amplification", "", Params{Labels: map[string]string{"service": `job"}`}}, exit.Usage, []string{"labels.service", "not a Prometheus label name"}},
		{"unknown query", "amplificaton", "", Params{}, exit.Usage, []string{`unknown query "amplificaton"`, "did you mean amplification"}},
		{"unknown pack", "amplification", "envoyy", Params{}, exit.Usage, []string{`unknown pack "envoyy"`, "did you mean envoy"}},
		{"unsupported", "replica_churn", "envoy", Params{}, exit.Usage, []string{"envoy pack cannot answer replica_churn", "kube-state-metrics", "packs that can: stormctl"}},
		{"pack without entry", "amplification", "hikaricp", Params{}, exit.Usage, []string{"connection-pool metrics only", "packs that can: stormctl, envoy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Render(tt.id, tt.pack, tt.p)
			if err == nil {
				t.Fatal("rendered; want a refusal")
			}
			if got := exit.Code(err); got != tt.code {
				t.Errorf("exit code %d, want %d (%v)", got, tt.code, err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
	var pe *ParamError
	if _, err := c.Render("amplification", "", Params{Service: "a b"}); !errors.As(err, &pe) || pe.Param != "service" {
		t.Errorf("want a *ParamError for service, got %v", err)
	}
	var ue *UnsupportedError
	if _, err := c.Render("retry_ratio", "otel", Params{}); !errors.As(err, &ue) || !slices.Contains(ue.Packs, "grpc") {
		t.Errorf("want an *UnsupportedError listing grpc, got %v", err)
	}
}

func TestRealLabelValuesAccepted(t *testing.T) {
	for _, v := range []string{
		"outbound|8080||payments.shop.svc.cluster.local", "dns:///payments:50051", "HikariPool-1",
		"payments.shop.svc.cluster.local", "checkout-7f9c@eu-west-1", "a+b=c", "",
	} {
		if err := ValidateValue("service", v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
}

func TestSustained(t *testing.T) {
	c := mustLoad(t)
	r, err := c.Render("amplification", "", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Sustained(15_000_000_000), "min_over_time(("+r.Expr+")[1m:15s])"; got != want {
		t.Errorf("Sustained = %s, want %s", got, want)
	}
	if _, err := promql.ParseExpr(r.Sustained(0)); err != nil {
		t.Errorf("Sustained(0) does not parse: %v", err)
	}
	r.Threshold.Direction = Below
	if !strings.HasPrefix(r.Sustained(0), "max_over_time((") {
		t.Errorf("below thresholds hold when the maximum is below: %s", r.Sustained(0))
	}
	r.Threshold.For = 0
	if r.Sustained(0) != r.Expr {
		t.Error("with no for:, Sustained is the expression itself")
	}
}

func TestLoadErrorsArePositioned(t *testing.T) {
	_, err := Load("testdata/broken")
	if exit.Code(err) != exit.Usage {
		t.Fatalf("exit code %d, want %d: %v", exit.Code(err), exit.Usage, err)
	}
	var errs yamlfile.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want yamlfile.Errors, got %T", err)
	}
	want := []string{
		"testdata/broken/e_field.yaml:3:5: unknown field \"titel\"",
		"testdata/broken/f_syntax.yaml:3:12: sequence end token ']' not found",
		"testdata/broken/g_incomplete.yaml:3:43: \"9zone\" is not a Prometheus label name",
		"testdata/broken/a_unknown_pack.yaml:5:13: unknown pack \"envoi\" (known packs: stormctl, envoy, envoy-istio, istio, resilience4j, otel, grpc, hikaricp, go_sql, hikaricp-tracker, sqlstats, otel-legacy, spanmetrics, tempo-spanmetrics; define new ones under packs:)",
		"testdata/broken/b_params.yaml:5:23: unknown or repeated param \"region\"",
		"testdata/broken/c_threshold.yaml:4:11: bad threshold: warn (0.5) must not exceed crit (0.3) when direction is above",
		"testdata/broken/d_templates.yaml:7:15: template does not parse: template: grpc:1: unclosed action",
		"testdata/broken/g_incomplete.yaml:8:20: give either expr (the PromQL template) or unsupported",
		"testdata/broken/d_templates.yaml:5:15: renders invalid PromQL: 1:61: parse error: unclosed left parenthesis",
		"testdata/broken/b_params.yaml:9:15: template does not render: template: stormctl:1:29: executing \"stormctl\" at <sel \"service\" \"pool\">: error calling sel: param \"pool\" is not in this query's params",
		"testdata/broken/g_incomplete.yaml:5:7: query brand_new is incomplete (a new query needs title, unit, params and threshold)",
	}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, errs[i], w)
		}
	}
	if _, err := Load("testdata/missing"); err == nil || !strings.Contains(err.Error(), "testdata/missing") {
		t.Errorf("a missing directory must be named: %v", err)
	}
}

func TestUserFileAmendsBuiltins(t *testing.T) {
	c := mustLoad(t, "testdata/override")
	q, err := c.Query("amplification")
	if err != nil {
		t.Fatal(err)
	}
	if *q.Threshold.Crit != 2.5 || *q.Threshold.Warn != 1.8 || q.Threshold.For != 120_000_000_000 {
		t.Errorf("threshold not replaced: %s", q.Threshold)
	}
	if q.Title != "Amplification (attempts per request)" || q.Window != 60_000_000_000 {
		t.Errorf("fields the user file does not set must stay: %q %s", q.Title, q.Window)
	}
	if got := q.Answers(); !slices.Equal(got, []string{"stormctl", "envoy", "envoy-istio", "istio", "resilience4j", "otel", "grpc", "otel-legacy", "spanmetrics", "tempo-spanmetrics", "linkerd"}) {
		t.Errorf("answers = %v", got)
	}
	r, err := c.Render("amplification", "linkerd", Params{Service: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Expr, `deployment="web"`) || r.Note == "" || !slices.Equal(r.Metrics, []string{"request_total", "response_total"}) {
		t.Errorf("linkerd render: %+v", r)
	}
	ids := []string{}
	for _, q := range c.Queries() {
		ids = append(ids, q.ID)
	}
	if !slices.Equal(ids, append(slices.Clone(builtinIDs), "retry_budget_spent")) {
		t.Errorf("order = %v: built-ins keep their place, new ids come last", ids)
	}
	if _, err := c.Render("retry_budget_spent", "", Params{}); exit.Code(err) != exit.Usage {
		t.Errorf("a user query without a stormctl entry is unsupported there: %v", err)
	}
}
