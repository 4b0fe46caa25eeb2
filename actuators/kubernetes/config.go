// Package kubernetes applies stormctl levers to the objects that really
// scale and retry in a cluster: autoscaling/v2 HorizontalPodAutoscalers
// (scaling disabled), KEDA ScaledObjects (paused), Istio VirtualService
// routes and Gateway API HTTPRoute rules (retries off or capped). Every
// field it changes is first saved in an annotation on the object, with the
// action id, and restored exactly when the lever is released or expires;
// every change is journaled.
package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/yamlfile"
)

// MappingFile is the actuator's config file: a top-level `kubernetes:` key.
type MappingFile struct {
	Kubernetes Mapping `yaml:"kubernetes"`
}

// Mapping says which objects belong to which service. Services not listed
// (and kinds not named for a listed service) are found by label: first
// app.kubernetes.io/name=<service>, then app=<service>.
type Mapping struct {
	// Namespace holds the service objects and the leader-election Lease.
	Namespace string `yaml:"namespace"`
	// Services maps a service name to its objects.
	Services map[string]ServiceObjects `yaml:"services"`
}

// ServiceObjects names the objects of one service; empty lists fall back to
// the default label selectors.
type ServiceObjects struct {
	HPA            []string `yaml:"hpa"`
	ScaledObject   []string `yaml:"scaledObject"`
	VirtualService []string `yaml:"virtualService"`
	// Istio marks the service as meshed: its retries are made by its
	// sidecar, so retries levers edit its VirtualServices. A service that
	// names a VirtualService is meshed.
	Istio bool `yaml:"istio"`
	// HTTPRoute names the Gateway API HTTPRoutes that carry the service's
	// calls (its GAMMA consumer routes, or a gateway's routes); naming one
	// marks the service as routed by Gateway API.
	HTTPRoute []string `yaml:"httpRoute"`
	// GatewayAPI marks the service's retries as made by its Gateway API
	// implementation: retries levers edit its HTTPRoutes, found by label.
	GatewayAPI bool `yaml:"gatewayAPI"`
}

// DefaultLabelKeys are the label keys tried, in order, to find a service's
// objects when the mapping names none.
var DefaultLabelKeys = []string{"app.kubernetes.io/name", "app"}

// LoadMapping reads and checks a mapping file; problems name file:line:col.
func LoadMapping(path string) (Mapping, error) {
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultLimits())
	if err != nil {
		return Mapping{}, fmt.Errorf("kubernetes mapping: %w", err)
	}
	return ParseMapping(path, data)
}

// ParseMapping decodes a mapping file's contents.
func ParseMapping(file string, data []byte) (Mapping, error) {
	var f MappingFile
	if err := yamlfile.Decode(file, data, &f); err != nil {
		return Mapping{}, err
	}
	m := f.Kubernetes
	if path, err := m.validate(); err != nil {
		doc, perr := yamlfile.Parse(file, data)
		if perr != nil {
			return Mapping{}, perr
		}
		return Mapping{}, doc.Errorf(path, "", "%v", err)
	}
	return m, nil
}

// Validate checks names against Kubernetes' DNS rules, so a typo is an
// error at start rather than a lever that silently changes nothing.
func (m Mapping) Validate() error {
	_, err := m.validate()
	return err
}

// validate also returns the YAML path of the problem.
func (m Mapping) validate() (string, error) {
	if m.Namespace == "" {
		return "$.kubernetes", fmt.Errorf("kubernetes.namespace is required")
	}
	if !dnsLabel(m.Namespace) {
		return "$.kubernetes.namespace", fmt.Errorf("namespace %q is not a DNS label", m.Namespace)
	}
	for _, svc := range slices.Sorted(maps.Keys(m.Services)) {
		o := m.Services[svc]
		for _, kind := range []struct {
			field string
			names []string
		}{{"hpa", o.HPA}, {"scaledObject", o.ScaledObject}, {"virtualService", o.VirtualService}, {"httpRoute", o.HTTPRoute}} {
			for i, n := range kind.names {
				if !dnsSubdomain(n) {
					return fmt.Sprintf("$.kubernetes.services.%s.%s[%d]", svc, kind.field, i),
						fmt.Errorf("service %q: %s name %q is not a DNS subdomain", svc, kind.field, n)
				}
			}
		}
	}
	return "", nil
}

// Meshed says whether the service's retries are made by an Istio sidecar.
func (m Mapping) Meshed(service string) bool {
	o, ok := m.Services[service]
	return ok && (o.Istio || len(o.VirtualService) > 0)
}

// GatewayRouted says whether the service's retries are made by a Gateway
// API implementation, through its HTTPRoutes.
func (m Mapping) GatewayRouted(service string) bool {
	o, ok := m.Services[service]
	return ok && (o.GatewayAPI || len(o.HTTPRoute) > 0)
}

func dnsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func dnsSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dnsLabel(part) {
			return false
		}
	}
	return true
}
