package kubernetes

import (
	"strings"
	"testing"
)

func TestParseMapping(t *testing.T) {
	m, err := ParseMapping("m.yaml", []byte("kubernetes:\n  namespace: shop\n  services:\n    checkout:\n      hpa: [checkout]\n      virtualService: [checkout-egress]\n    search: {istio: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Meshed("checkout") || !m.Meshed("search") || m.Meshed("ledger") {
		t.Errorf("meshed: %+v", m)
	}
	for doc, want := range map[string]string{
		"kubernetes:\n  services: {}\n":    "m.yaml:2:11: kubernetes.namespace is required",
		"kubernetes:\n  namespace: Shop\n": `m.yaml:2:14: namespace "Shop" is not a DNS label`,
		"kubernetes:\n  namespace: shop\n  services:\n    checkout:\n      hpa: [ok, Bad_1]\n": `m.yaml:5:17: service "checkout": hpa name "Bad_1" is not a DNS subdomain`,
		"kubernetes:\n  namespace: shop\n  servics: {}\n":                                      "m.yaml:3:",
	} {
		_, err := ParseMapping("m.yaml", []byte(doc))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseMapping(%q) = %v, want prefix %q", doc, err, want)
		}
	}
}

func FuzzParseMapping(f *testing.F) {
	f.Add("kubernetes:\n  namespace: shop\n  services:\n    checkout: {hpa: [a]}\n")
	f.Add("kubernetes: [")
	f.Fuzz(func(t *testing.T, doc string) {
		_, _ = ParseMapping("fuzz.yaml", []byte(doc))
	})
}
