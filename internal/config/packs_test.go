package config

import (
	"maps"
	"testing"
)

// A pack's labels apply to every service it answers for; a service's own
// labels override them key by key.
func TestLabelsForMergesPackThenService(t *testing.T) {
	f, err := Load(write(t, `contexts:
  prod:
    packs:
      grpc: {labels: {service: exported_job, dependency: grpc_target}}
    services:
      checkout: {pack: grpc}
      ledger: {pack: grpc, labels: {service: app}}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Contexts["prod"]
	for _, tc := range []struct {
		pack, service string
		want          map[string]string
	}{
		{"grpc", "checkout", map[string]string{"service": "exported_job", "dependency": "grpc_target"}},
		{"grpc", "ledger", map[string]string{"service": "app", "dependency": "grpc_target"}},
		{"grpc", "", map[string]string{"service": "exported_job", "dependency": "grpc_target"}},
		{"envoy", "ledger", map[string]string{"service": "app"}},
		{"envoy", "checkout", nil},
	} {
		if got := c.LabelsFor(tc.pack, tc.service); !maps.Equal(got, tc.want) {
			t.Errorf("LabelsFor(%s, %s) = %v, want %v", tc.pack, tc.service, got, tc.want)
		}
	}
	if _, err := Load(write(t, "contexts:\n  prod:\n    packs:\n      grpc: {lables: {}}\n")); err == nil {
		t.Error("an unknown key under packs must be refused")
	}
}
