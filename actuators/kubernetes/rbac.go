package kubernetes

import (
	"fmt"
	"strings"
)

// RBAC returns the ServiceAccount, Role and RoleBinding the actuator needs
// in namespace, as YAML for kubectl apply: read and patch the kinds it
// changes (patch only: it never creates, deletes or scales anything) — Services
// only for Linkerd's retry annotations —, the leader-election Lease, and
// events about it.
func RBAC(namespace, serviceAccount string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[2]s
  namespace: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: %[2]s
  namespace: %[1]s
rules:
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["keda.sh"]
  resources: ["scaledobjects"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["networking.istio.io"]
  resources: ["virtualservices"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes", "grpcroutes"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["policy.linkerd.io"]
  resources: ["httproutes"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["linkerd.io"]
  resources: ["serviceprofiles"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["gateway.envoyproxy.io"]
  resources: ["backendtrafficpolicies"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[2]s
  namespace: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: %[2]s
subjects:
- kind: ServiceAccount
  name: %[2]s
  namespace: %[1]s
`, namespace, serviceAccount)
	return b.String()
}
