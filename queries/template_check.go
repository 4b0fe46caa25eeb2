package queries

import (
	"fmt"
	"text/template"
	"text/template/parse"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// check renders the template with every param set and with none set; both
// must be valid PromQL, also as fleet expressions (topk and counts). It also
// completes Metrics with the metric names the selectors read, and requires a
// listed name for each selector that matches names by regex (suffix drift),
// so "no data" can always name a metric.
func (pq *PackQuery) check(q *Query, pk *Pack) *yamlfile.Error {
	full := Params{Service: "x", Dependency: "x", Pool: "x"}
	var metrics []string
	for _, p := range []Params{full, {}} {
		expr, err := pq.render(q, pk, p)
		if err != nil {
			return pq.src.errorf(".expr", "", "template does not render: %v", err)
		}
		ast, err := promql.ParseExpr(expr)
		if err != nil {
			return pq.src.errorf(".expr", "", "renders invalid PromQL: %v\n\t%s", err, expr)
		}
		if metrics, err = selectedMetrics(ast, pq.Metrics); err != nil {
			return pq.src.errorf(".metrics", "", "%v", err)
		}
		if _, err := fleetExpr(expr, expr, q.Threshold, 1, true); err != nil {
			return pq.src.errorf(".expr", "", "cannot be reduced for the fleet view (RenderFleet): %v", err)
		}
	}
	pq.Metrics = metrics
	return nil
}

func selectedMetrics(ast parser.Expr, listed []string) ([]string, error) {
	out := append([]string(nil), listed...)
	used := make([]bool, len(listed))
	var err error
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || err != nil {
			return nil
		}
		var m *labels.Matcher
		for _, lm := range vs.LabelMatchers {
			if lm.Name == model.MetricNameLabel {
				m = lm
			}
		}
		if m == nil {
			err = fmt.Errorf("selector %s names no metric", vs)
			return nil
		}
		if m.Type == labels.MatchEqual && !contains(out, m.Value) {
			out = append(out, m.Value)
		}
		matched := false
		for i, name := range listed {
			if m.Matches(name) {
				used[i], matched = true, true
			}
		}
		if !matched && m.Type != labels.MatchEqual {
			err = fmt.Errorf("selector %s matches metric names by pattern: list the name(s) it reads under metrics", vs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("metric %q is listed but no selector reads it", listed[i])
		}
	}
	return out, nil
}

const templateHelp = "templates use {{ sel ... }}, {{ by ... }}, {{ labels ... }} and {{ window }}"

// plainActions allows only text and calls of the template functions with
// string arguments: no range, if, variables or nested templates, which
// would make a catalogue file a program (a range over 1e9 never ends).
func plainActions(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return fmt.Errorf("templates may not define other templates")
	}
	for _, n := range t.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
		case *parse.ActionNode:
			if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 {
				return fmt.Errorf("%s: one function call per action, no variables or pipes", n)
			}
			args := n.Pipe.Cmds[0].Args
			if _, ok := args[0].(*parse.IdentifierNode); !ok {
				return fmt.Errorf("%s: an action must call sel, by, labels or window", n)
			}
			for _, a := range args[1:] {
				if _, ok := a.(*parse.StringNode); !ok {
					return fmt.Errorf("%s: function arguments must be quoted strings", n)
				}
			}
		default:
			return fmt.Errorf("%s: only text and {{ function \"args\" }} actions are allowed", n)
		}
	}
	return nil
}
