package kubernetes

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// The kinds of object the actuator changes.
var (
	HPAKind            = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	ScaledObjectKind   = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}
	VirtualServiceKind = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}
)

// Kinds lists them in the order the actuator works through them.
var Kinds = []schema.GroupVersionKind{HPAKind, ScaledObjectKind, VirtualServiceKind, HTTPRouteKind,
	GRPCRouteKind, ServiceKind, LinkerdHTTPRouteKind, ServiceProfileKind, BackendTrafficPolicyKind}

// Resource names, for RBAC and messages.
var resources = map[schema.GroupVersionKind]string{
	HPAKind:                  "horizontalpodautoscalers",
	ScaledObjectKind:         "scaledobjects",
	VirtualServiceKind:       "virtualservices",
	HTTPRouteKind:            "httproutes",
	GRPCRouteKind:            "grpcroutes",
	ServiceKind:              "services",
	LinkerdHTTPRouteKind:     "httproutes",
	ServiceProfileKind:       "serviceprofiles",
	BackendTrafficPolicyKind: "backendtrafficpolicies",
}

// shortNames are the kubectl short names used in messages ("hpa/checkout").
var shortNames = map[schema.GroupVersionKind]string{
	HPAKind:                  "hpa",
	ScaledObjectKind:         "scaledobject",
	VirtualServiceKind:       "virtualservice",
	HTTPRouteKind:            "httproute",
	GRPCRouteKind:            "grpcroute",
	ServiceKind:              "service",
	LinkerdHTTPRouteKind:     "httproute.policy.linkerd.io",
	ServiceProfileKind:       "serviceprofile",
	BackendTrafficPolicyKind: "backendtrafficpolicy",
}

// KEDA's pause annotation; KEDA stops scaling while it is "true".
const kedaPaused = "autoscaling.keda.sh/paused"

// disabled is autoscaling/v2's selectPolicy that turns scaling off in one
// direction without touching replica counts.
const disabled = "Disabled"

// editsFor returns what lever l does to obj (nil: nothing applies to it).
func editsFor(l *lever.Lever, obj *unstructured.Unstructured) ([]edit, error) {
	gvk := obj.GroupVersionKind()
	switch {
	case l.Kind == lever.Autoscaling && gvk == HPAKind:
		return []edit{{save: "/spec/behavior", set: map[string]any{
			"/spec/behavior/scaleUp/selectPolicy":   disabled,
			"/spec/behavior/scaleDown/selectPolicy": disabled,
		}}}, nil
	case l.Kind == lever.Autoscaling && gvk == ScaledObjectKind:
		ptr := "/metadata/annotations/" + escape(kedaPaused)
		return []edit{{save: ptr, set: map[string]any{ptr: "true"}}}, nil
	case l.Kind == lever.Retries && gvk == VirtualServiceKind:
		attempts, err := istioAttempts(l.Value)
		if err != nil {
			return nil, err
		}
		_, dep := lever.SplitTarget(l.Target)
		var edits []edit
		for _, i := range routesTo(obj.Object, dep, obj.GetNamespace()) {
			save := "/spec/http/" + strconv.Itoa(i) + "/retries"
			edits = append(edits, edit{save: save, set: map[string]any{save + "/attempts": attempts}})
		}
		return edits, nil
	}
	return nil, nil
}

// istioAttempts maps a retries lever value to Istio's retries.attempts,
// which counts retries, not attempts: "off" → 0, "cap:N" → N−1.
func istioAttempts(value string) (int64, error) {
	if value == lever.ValueOff {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(value, lever.ValueCapPrefix))
	if err != nil || !strings.HasPrefix(value, lever.ValueCapPrefix) || n < 1 {
		return 0, fmt.Errorf("retries value %q: want off or cap:N", value)
	}
	return int64(n - 1), nil
}

// routesTo lists the indexes of the VirtualService's HTTP routes that send
// traffic to dependency (every route when dependency is ""). A destination
// host matches by its short name or any longer form of it
// ("payments", "payments.shop", "payments.shop.svc.cluster.local").
func routesTo(obj map[string]any, dependency, namespace string) []int {
	raw, _ := lookup(obj, "/spec/http")
	routes, _ := raw.([]any)
	var out []int
	for i, r := range routes {
		if dependency == "" {
			out = append(out, i)
			continue
		}
		dests, _ := lookup(map[string]any{"r": r}, "/r/route")
		list, _ := dests.([]any)
		for _, d := range list {
			host, _ := lookup(map[string]any{"d": d}, "/d/destination/host")
			if h, _ := host.(string); hostIs(h, dependency, namespace) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

func hostIs(host, dependency, namespace string) bool {
	if host == dependency {
		return true
	}
	short, rest, ok := strings.Cut(host, ".")
	if !ok || short != dependency {
		return false
	}
	// "payments.<ns>" or "payments.<ns>.svc[.cluster.local]": the dependency
	// in the caller's namespace; another namespace is another service.
	ns, _, _ := strings.Cut(rest, ".")
	return ns == namespace
}

// objectName is "hpa/checkout", as messages and the journal name objects.
func objectName(obj *unstructured.Unstructured) string {
	return shortNames[obj.GroupVersionKind()] + "/" + obj.GetName()
}
