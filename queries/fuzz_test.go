package queries

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// FuzzRender: arbitrary params never panic, and whatever renders is valid
// PromQL with the same structure as the same query rendered with harmless
// values: user input can only ever be the value of a label matcher.
func FuzzRender(f *testing.F) {
	c := mustLoad(f)
	f.Add(uint8(0), uint8(0), "checkout", "payments", "", int64(0), "")
	f.Add(uint8(1), uint8(1), `x"} or vector(1) #`, "", "", int64(0), "")
	f.Add(uint8(2), uint8(2), "a\\", "b\"", "c\n", int64(90e9), "app")
	f.Add(uint8(4), uint8(6), "", "", "HikariPool-1", int64(-1), `job"`)
	f.Add(uint8(3), uint8(3), "outbound|8080||svc.ns.svc.cluster.local", "}[5m]) or up", "", int64(1e15), "")
	f.Add(uint8(9), uint8(0), "\xff\xfe", "é", "", int64(time.Minute), "__name__")
	f.Add(uint8(0), uint8(3), "checkout", "x|.+", "", int64(0), "")
	// otel-legacy, spanmetrics and tempo-spanmetrics (amplification's 8th to
	// 10th packs; edge_error_rate's 7th to 9th).
	f.Add(uint8(0), uint8(7), "checkout", "payments.shop.svc.cluster.local", "", int64(0), "exported_job")
	f.Add(uint8(0), uint8(8), `checkout"}[1h]) or vector(1) #`, "a.b", "", int64(30e9), "")
	f.Add(uint8(1), uint8(8), "checkout", `pay|ments\`, "", int64(0), "service_name")
	f.Add(uint8(2), uint8(9), "svc", "x)|(.*", "", int64(time.Hour), "")
	f.Add(uint8(8), uint8(8), "ratings", "", "", int64(0), "span_kind")
	qs := c.Queries()
	f.Fuzz(func(t *testing.T, qi, pi uint8, service, dependency, pool string, window int64, label string) {
		q := qs[int(qi)%len(qs)]
		answers := q.Answers()
		pack := answers[int(pi)%len(answers)]
		p := Params{Service: service, Dependency: dependency, Pool: pool, Window: time.Duration(window)}
		if label != "" {
			p.Labels = map[string]string{"service": label}
		}
		r, err := c.Render(q.ID, pack, p)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("%s/%s: want a *ParamError, got %v", q.ID, pack, err)
			}
			return
		}
		safe := p
		for _, v := range []*string{&safe.Service, &safe.Dependency, &safe.Pool} {
			if *v != "" {
				*v = "x"
			}
		}
		base, err := c.Render(q.ID, pack, safe)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := shape(t, r.Expr), shape(t, base.Expr); got != want {
			t.Fatalf("%s/%s: user values changed the query's structure:\n%s\nvs\n%s", q.ID, pack, got, want)
		}
	})
}

// shape parses expr and blanks the values of label matchers other than
// __name__, where user values go (exact, or anchored regular expressions
// of a pack's naming convention).
func shape(t *testing.T, expr string) string {
	ast, err := promql.ParseExpr(expr)
	if err != nil {
		t.Fatalf("rendered PromQL does not parse: %v\n%s", err, expr)
	}
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for i, m := range vs.LabelMatchers {
				if (m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp) && m.Name != model.MetricNameLabel {
					vs.LabelMatchers[i] = labels.MustNewMatcher(m.Type, m.Name, "")
				}
			}
		}
		return nil
	})
	return ast.String()
}

// FuzzLoad: arbitrary catalogue files never panic, and every error names
// the file with a line and column.
func FuzzLoad(f *testing.F) {
	builtins, err := builtinSources()
	if err != nil {
		f.Fatal(err)
	}
	// The pack definitions stay loaded so user queries can name packs; the
	// built-in queries are seeds rather than fixtures, which keeps each run
	// (and the fuzzer's minimisation) fast.
	packs := builtins[:1]
	for _, s := range builtins[1:3] {
		f.Add(string(s.data))
	}
	f.Add("queries:\n  - id: amplification\n    packs:\n      envoy:\n        expr: '{{ sel \"pool\" }}'\n")
	f.Add("packs:\n  - name: x\n    labels: {service: \"1bad\"}\n")
	f.Add("queries: [{id: q, title: t, unit: ratio, params: [window], threshold: {crit: 1, direction: above}, packs: {stormctl: {expr: '{{ range 100000000 }}x{{ end }}'}}}]\n")
	f.Add("queries:\n  - null\n  - id: Bad Id\n")
	f.Add("{")
	f.Add("")
	f.Fuzz(func(t *testing.T, data string) {
		const name = "user.yaml"
		_, errs := load(append(packs[:1:1], source{name: name, data: []byte(data)}))
		for _, e := range errs {
			if e.File != name || e.Line < 1 || e.Col < 1 {
				t.Fatalf("error without a position in %s: %v", name, e)
			}
		}
		_ = yamlfile.Errors(errs).Error()
	})
}
