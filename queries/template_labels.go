package queries

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"
)

// Naming conventions a pack can declare for a param's values (Pack.Match), so
// that the short name a responder types finds the canonical form the
// exporter writes. The value is still validated and only ever reaches the
// PromQL through regexp.QuoteMeta inside an anchored =~ matcher.
const (
	// MatchExact matches the value as given (the default).
	MatchExact = "exact"
	// MatchFQDN also matches the value followed by a domain:
	// payments ↔ payments.shop.svc.cluster.local (Istio destination_service).
	MatchFQDN = "fqdn"
	// MatchGRPCTarget also matches the canonical gRPC target forms:
	// payments ↔ dns:///payments:50051, xds:///payments, payments.shop:50051.
	MatchGRPCTarget = "grpc-target"
	// MatchEnvoyCluster also matches Istio's Envoy cluster names:
	// payments ↔ outbound|50051||payments.shop.svc.cluster.local.
	MatchEnvoyCluster = "envoy-cluster"
)

// MatchConventions lists the naming conventions, for error messages.
var MatchConventions = []string{MatchExact, MatchFQDN, MatchGRPCTarget, MatchEnvoyCluster}

// convention patterns: %s is the quoted value. They use positive character
// classes of DNS names only: with negated classes such as [^|] and with .
// a render took 45× as long as an exact one, in Prometheus's regex parser
// folding case over Unicode (BenchmarkRenderNaming); now about 3×.
var conventionRE = map[string]string{
	MatchFQDN:         `%s(\.[a-zA-Z0-9_-]+)*`,
	MatchGRPCTarget:   `([a-z][a-z0-9+.-]*://[a-zA-Z0-9._:-]*/)?%s(\.[a-zA-Z0-9_-]+)*(:[0-9]+)?`,
	MatchEnvoyCluster: `((inbound|outbound)\|[0-9]*\|[a-zA-Z0-9._-]*\|)?%s(\.[a-zA-Z0-9_-]+)*`,
}

// MatchPattern returns the regular expression (anchored by PromQL) that
// matches v under convention, or "" for MatchExact and unknown conventions.
func MatchPattern(convention, v string) string {
	p, ok := conventionRE[convention]
	if !ok {
		return ""
	}
	return fmt.Sprintf(p, regexp.QuoteMeta(v))
}

// Matches reports whether the label value got is a form of the value v under
// convention: the check the doctor makes against label values.
func Matches(convention, v, got string) bool { return valueMatcher(convention, v)(got) }

// valueMatcher compiles the test once, for matching many label values.
func valueMatcher(convention, v string) func(string) bool {
	p := MatchPattern(convention, v)
	if p == "" {
		return func(got string) bool { return got == v }
	}
	// v is quoted and the patterns are constants: this always compiles.
	return regexp.MustCompile("^(?:" + p + ")$").MatchString
}

// matcher renders the selector for param's value v on label.
func (r renderer) matcher(param, label, v string) string {
	if p := MatchPattern(r.pk.Match[param], v); p != "" {
		return label + "=~" + quote(p)
	}
	return label + "=" + quote(v)
}

// rename maps a label name a template writes to the name this setup uses:
// the user's override, then the pack's. Param names are not label names
// here: they are mapped by param.
func (r renderer) rename(label string) string {
	if isLabelParam(label) || label == model.MetricNameLabel {
		return label
	}
	if l := r.p.Labels[label]; l != "" {
		return l
	}
	if l := r.pk.Labels[label]; l != "" {
		return l
	}
	return label
}

// staticRE splits a static matcher such as `reporter="source"` or
// `response_code=~"5.."` into its label name and the rest.
var staticRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)(.*)$`)

// static renames the label of a static matcher.
func (r renderer) static(m string) (string, error) {
	g := staticRE.FindStringSubmatch(m)
	if g == nil {
		return "", fmt.Errorf("%q is not a label matcher such as name=\"value\"", m)
	}
	return r.rename(g[1]) + g[2] + strings.TrimSpace(g[3]), nil
}
