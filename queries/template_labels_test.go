package queries

import (
	"strings"
	"testing"
)

func TestMatchConventions(t *testing.T) {
	for _, c := range []struct {
		conv, v, got string
		ok           bool
	}{
		{MatchExact, "payments", "payments", true},
		{MatchExact, "payments", "payments.shop", false},
		{MatchFQDN, "payments", "payments.shop.svc.cluster.local", true},
		{MatchFQDN, "payments", "payments-v2.shop.svc.cluster.local", false},
		{MatchFQDN, "payments.shop.svc.cluster.local", "payments.shop.svc.cluster.local", true},
		{MatchGRPCTarget, "payments", "dns:///payments:50051", true},
		{MatchGRPCTarget, "payments", "xds:///payments", true},
		{MatchGRPCTarget, "payments", "dns://8.8.8.8/payments.shop:443", true},
		{MatchGRPCTarget, "payments", "dns:///paymentsx:50051", false},
		{MatchGRPCTarget, "dns:///payments:50051", "dns:///payments:50051", true},
		{MatchEnvoyCluster, "payments", "outbound|50051||payments.shop.svc.cluster.local", true},
		{MatchEnvoyCluster, "payments", "outbound|50051|v2|payments.shop.svc.cluster.local", true},
		{MatchEnvoyCluster, "payments", "outbound|50051||ledger.shop.svc.cluster.local", false},
		{MatchEnvoyCluster, "payments", "payments", true},
		// Regex syntax in a value is literal: x|.+ is not "x or anything".
		{MatchFQDN, "x|.+", "anything", false},
		{MatchGRPCTarget, "x|.+", "x|.+", true},
	} {
		if got := Matches(c.conv, c.v, c.got); got != c.ok {
			t.Errorf("Matches(%s, %q, %q) = %v, want %v", c.conv, c.v, c.got, got, c.ok)
		}
	}
}

// Every label a template writes follows the overrides, including static
// matchers, by/labels arguments and explicit labels; params map first.
func TestRenderRenamesEveryLabel(t *testing.T) {
	c := mustLoad(t)
	r, err := c.Render("edge_error_rate", "istio", Params{Service: "checkout",
		Labels: map[string]string{"destination_workload": "app", "reporter": "rep", "response_code": "code"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`app="checkout"`, `rep="destination"`, `code=~"5.."`, `code!=""`, "by (app)"} {
		if !strings.Contains(r.Expr, want) {
			t.Errorf("missing %s in\n%s", want, r.Expr)
		}
	}
	for _, gone := range []string{"destination_workload", "reporter", "response_code"} {
		if strings.Contains(r.Expr, gone) {
			t.Errorf("%s not renamed in\n%s", gone, r.Expr)
		}
	}
	r, err = c.Render("throttle_retries", "envoy-istio", Params{Service: "checkout", Dependency: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`app="checkout"`, `response_code="429"`, `cluster_name=~"((inbound|outbound)\\|[0-9]*\\|[a-zA-Z0-9._-]*\\|)?payments(\\.[a-zA-Z0-9_-]+)*"`} {
		if !strings.Contains(r.Expr, want) {
			t.Errorf("missing %s in\n%s", want, r.Expr)
		}
	}
	if _, err := c.Render("amplification", "envoy", Params{Labels: map[string]string{"service": "a b"}}); err == nil {
		t.Error("a label override that is not a label name must be refused")
	}
}
