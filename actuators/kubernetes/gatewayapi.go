package kubernetes

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stormctl/stormctl/lever"
)

// HTTPRouteKind is the Gateway API route whose rules carry retry settings
// (GEP-1731, `spec.rules[].retry`). GRPCRoute has no retry field yet
// (Gateway API v1.6), so it is not a kind the actuator changes.
var HTTPRouteKind = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// httpRouteEdits is what a retries lever does to one of the service's
// HTTPRoutes: `retry.attempts` of every rule (S) or of every rule whose
// backends are all the dependency (S->D). Gateway API counts retries, as
// Istio does: "off" → 0, "cap:N" → N−1. A rule that splits traffic between
// the dependency and other backends has one retry policy for all of them, so
// changing it would change the calls to the others too: that is refused
// rather than widened.
func httpRouteEdits(l *lever.Lever, obj *unstructured.Unstructured) ([]edit, error) {
	attempts, err := istioAttempts(l.Value)
	if err != nil {
		return nil, err
	}
	_, dep := lever.SplitTarget(l.Target)
	raw, _ := lookup(obj.Object, "/spec/rules")
	rules, _ := raw.([]any)
	var edits []edit
	for i, r := range rules {
		if dep != "" {
			to, others := backendsOf(r, dep, obj.GetNamespace())
			if !to {
				continue
			}
			if len(others) > 0 {
				return nil, fmt.Errorf("%s rule %d sends to %s and to %s, and a rule's retry covers all its backends: "+
					"no faithful mapping of %s %s in Gateway API; split the rule to change it", objectName(obj), i, dep,
					strings.Join(others, ", "), l.Target, l.Value)
			}
		}
		save := "/spec/rules/" + strconv.Itoa(i) + "/retry"
		edits = append(edits, edit{save: save, set: map[string]any{save + "/attempts": attempts}})
	}
	return edits, nil
}

// backendsOf says whether a rule sends to dependency (a core Service of
// that name in the route's namespace) and names its other backends.
func backendsOf(rule any, dependency, namespace string) (bool, []string) {
	raw, _ := lookup(map[string]any{"r": rule}, "/r/backendRefs")
	refs, _ := raw.([]any)
	to := false
	var others []string
	for _, ref := range refs {
		m, _ := ref.(map[string]any)
		group, _ := m["group"].(string)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		isService := (group == "" || group == "core") && (kind == "" || kind == "Service")
		if isService && name == dependency && (ns == "" || ns == namespace) {
			to = true
			continue
		}
		others = append(others, backendName(kind, name, ns))
	}
	return to, others
}

func backendName(kind, name, ns string) string {
	if kind == "" {
		kind = "Service"
	}
	s := strings.ToLower(kind) + "/" + name
	if ns != "" {
		s += " in " + ns
	}
	return s
}

// attemptsRefused words the API server refusing retry.attempts 0: Gateway
// API v1.6 and later require attempts ≥ 1, so "off" and "cap:1" cannot be
// said on such a route (leaving retry unset is the implementation's default,
// often some retries, not none). Empty when err is something else.
func attemptsRefused(obj *unstructured.Unstructured, err error) string {
	if obj.GroupVersionKind() != HTTPRouteKind || !strings.Contains(err.Error(), "retry.attempts") {
		return ""
	}
	return fmt.Sprintf("refused: the cluster's Gateway API CRD requires retry.attempts ≥ 1 (v1.6 and later), "+
		"so no retries (off, cap:1) has no faithful mapping on %s in %s; it is left as it was", objectName(obj), obj.GetNamespace())
}
