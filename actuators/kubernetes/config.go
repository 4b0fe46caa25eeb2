// Package kubernetes applies stormctl levers to the objects that really
// scale and retry in a cluster: autoscaling/v2 HorizontalPodAutoscalers
// (scaling disabled), KEDA ScaledObjects (paused), and the retries of Istio
// VirtualService routes, Gateway API HTTPRoute rules, Linkerd's retry
// annotations and ServiceProfiles, and Envoy Gateway BackendTrafficPolicies
// (off or capped). Every
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
	// ClusterDomain names Linkerd's ServiceProfiles
	// (<service>.<namespace>.svc.<domain>); "cluster.local" when empty.
	ClusterDomain string `yaml:"clusterDomain"`
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
	// GatewayAPIService names dependencies whose GAMMA producer routes
	// (HTTPRoutes whose parentRef is that Service in the namespace) the
	// service's retries levers change too, wherever they are found. Every
	// caller of such a Service obeys them, so a producer route is refused
	// unless its Service is named here; naming one marks the service as
	// routed by Gateway API.
	GatewayAPIService []string `yaml:"gatewayAPIService"`
	// Linkerd marks the service's retries as made by its Linkerd proxy
	// (2.16+): retries levers edit the retry.linkerd.io annotations of its
	// routes (Gateway API HTTPRoutes and GRPCRoutes, Linkerd's own
	// HTTPRoutes), found by label: its GAMMA consumer routes (parent
	// Service in another namespace); a producer route (parent in the
	// route's own) is refused unless its Service is named under
	// LinkerdService.
	Linkerd bool `yaml:"linkerd"`
	// LinkerdRoute names those routes instead (any of the three kinds);
	// naming one marks the service as Linkerd's.
	LinkerdRoute []string `yaml:"linkerdRoute"`
	// LinkerdService names dependencies whose Service annotations (or
	// ServiceProfile, where one exists) and producer routes (found by
	// their parent) carry the service's calls. Every caller of such a
	// Service obeys them, so name one only where the change is meant for
	// every caller.
	LinkerdService []string `yaml:"linkerdService"`
	// EnvoyGateway marks the service's retries as made by Envoy Gateway:
	// retries levers edit its BackendTrafficPolicies, found by label.
	EnvoyGateway bool `yaml:"envoyGateway"`
	// BackendTrafficPolicy names them instead; naming one marks the service
	// as Envoy Gateway's.
	BackendTrafficPolicy []string `yaml:"backendTrafficPolicy"`
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
	if m.ClusterDomain != "" && !dnsSubdomain(m.ClusterDomain) {
		return "$.kubernetes.clusterDomain", fmt.Errorf("clusterDomain %q is not a DNS subdomain", m.ClusterDomain)
	}
	for _, svc := range slices.Sorted(maps.Keys(m.Services)) {
		o := m.Services[svc]
		for _, kind := range []struct {
			field string
			names []string
		}{{"hpa", o.HPA}, {"scaledObject", o.ScaledObject}, {"virtualService", o.VirtualService}, {"httpRoute", o.HTTPRoute},
			{"gatewayAPIService", o.GatewayAPIService},
			{"linkerdRoute", o.LinkerdRoute}, {"linkerdService", o.LinkerdService}, {"backendTrafficPolicy", o.BackendTrafficPolicy}} {
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
	return ok && (o.GatewayAPI || len(o.HTTPRoute) > 0 || len(o.GatewayAPIService) > 0)
}

// LinkerdRouted says whether the service's retries are made by Linkerd.
func (m Mapping) LinkerdRouted(service string) bool {
	o, ok := m.Services[service]
	return ok && (o.Linkerd || len(o.LinkerdRoute) > 0 || len(o.LinkerdService) > 0)
}

// EnvoyGatewayRouted says whether the service's retries are made by Envoy
// Gateway, through its BackendTrafficPolicies.
func (m Mapping) EnvoyGatewayRouted(service string) bool {
	o, ok := m.Services[service]
	return ok && (o.EnvoyGateway || len(o.BackendTrafficPolicy) > 0)
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
